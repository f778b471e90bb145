"""pytorch/examples imagenet/main.py after PR #1064 "Add mps device" (2022-09-20), reduced: the
second `if` of the training loop became an `elif`, so with `--gpu 0` (or under
`--multiprocessing-distributed`, which sets `args.gpu` per worker) the images move to the GPU
and the target never does.

Upstream: https://github.com/pytorch/examples/issues/1071 (fixed by PR #1073, commit f5bb60f).
The `torch.cuda.is_available()` tests of the original conditions are left out: they are True on
the machines that hit the bug, and the MPS branch is never reached there.
"""

from argparse import Namespace

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

args = Namespace(gpu=0, lr=0.1, momentum=0.9, weight_decay=1e-4, batch_size=4, print_freq=1)  # --gpu 0

torch.manual_seed(0)
# models.__dict__[args.arch](): a tiny stand-in for the torchvision ResNet
model = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
)
model = model.cuda(args.gpu)  # elif args.gpu is not None and torch.cuda.is_available(): ...
device = torch.device("cuda")  # `if args.gpu: ... else: device = torch.device("cuda")`
criterion = nn.CrossEntropyLoss().to(device)
optimizer = torch.optim.SGD(
    model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay
)

# datasets.FakeData(...) / ImageFolder(...), reduced to eight 16x16 images
train_dataset = TensorDataset(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,)))
train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=False)

# train(train_loader, model, criterion, optimizer, epoch, args)
model.train()
for i, (images, target) in enumerate(train_loader):
    if args.gpu is not None:
        images = images.cuda(args.gpu, non_blocking=True)
    elif not args.gpu:  # never reached when --gpu is given: the target stays on the CPU
        target = target.cuda(args.gpu, non_blocking=True)

    # compute output
    output = model(images)
    loss = criterion(output, target)

    # compute gradient and do SGD step
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if i % args.print_freq == 0:  # progress.display(i + 1)
        print(f"Epoch: [0][{i + 1}/{len(train_loader)}]\tLoss {loss.item():.4e}")
