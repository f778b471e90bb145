"""pytorch/examples imagenet/main.py after PR #1073 (2022-09-30), reduced: `train()` receives the
device chosen in `main_worker()` and moves the images and the target to it, unconditionally.

Upstream: https://github.com/pytorch/examples/pull/1073 (commit f5bb60f, fixes issue #1071).
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
model = model.cuda(args.gpu)
device = torch.device("cuda")
criterion = nn.CrossEntropyLoss().to(device)
optimizer = torch.optim.SGD(
    model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay
)

# datasets.FakeData(...) / ImageFolder(...), reduced to eight 16x16 images
train_dataset = TensorDataset(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,)))
train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=False)

# train(train_loader, model, criterion, optimizer, epoch, device, args)
model.train()
for i, (images, target) in enumerate(train_loader):
    # move data to the same device as model
    images = images.to(device, non_blocking=True)
    target = target.to(device, non_blocking=True)

    # compute output
    output = model(images)
    loss = criterion(output, target)

    # compute gradient and do SGD step
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if i % args.print_freq == 0:  # progress.display(i + 1)
        print(f"Epoch: [0][{i + 1}/{len(train_loader)}]\tLoss {loss.item():.4e}")
