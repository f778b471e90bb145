"""pytorch/examples `imagenet/main.py` (2022-06-10 to 2022-08-17), reduced: after validation,
each `AverageMeter` sums its statistics across ranks with
`total = torch.FloatTensor([self.sum, self.count])` and `dist.all_reduce(total)`. The legacy
constructor makes a CPU tensor, and the NCCL process group serves CUDA tensors only.

Upstream: https://github.com/pytorch/examples/issues/1030 ("RuntimeError: Tensors must be
CUDA and dense"), fixed by https://github.com/pytorch/examples/pull/1034.
Run with two processes, as `python main.py --multiprocessing-distributed ...` on two GPUs would.
"""

import os
import tempfile
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


class AverageMeter:
    """Computes and stores the average and current value"""

    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def all_reduce(self):
        total = torch.FloatTensor([self.sum, self.count])
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()
        self.avg = self.sum / self.count


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def validate(val_loader, model, criterion, args):
    losses = AverageMeter('Loss')
    top1 = AverageMeter('Acc@1')
    top5 = AverageMeter('Acc@5')
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            images = images.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
    if args.distributed:
        top1.all_reduce()
        top5.all_reduce()
    return top1.avg


def main_worker(gpu, ngpus_per_node, args):
    args.gpu = gpu
    args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                            world_size=args.world_size, rank=args.rank)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 10))  # models.__dict__[args.arch]()
    torch.cuda.set_device(args.gpu)
    model.cuda(args.gpu)
    # (main.py then wraps the model in DistributedDataParallel; validation does not need it)
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)

    generator = torch.Generator().manual_seed(args.rank)  # each rank validates its own shard
    val_loader = [(torch.randn(8, 3, 4, 4, generator=generator), torch.randint(10, (8,), generator=generator))
                  for _ in range(2)]
    acc1 = validate(val_loader, model, criterion, args)
    torch.save(torch.as_tensor(acc1).cpu(), os.path.join(args.out_dir, f"acc1_rank{args.rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    args = SimpleNamespace(dist_backend="nccl", rank=0, distributed=True, out_dir=tempfile.mkdtemp(),
                           dist_url=f"tcp://127.0.0.1:{os.environ.get('MASTER_PORT', '23456')}")
    ngpus_per_node = 2  # torch.cuda.device_count()
    args.world_size = ngpus_per_node * 1
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))
    acc1 = [torch.load(os.path.join(args.out_dir, f"acc1_rank{r}.pt")) for r in range(2)]
    print("Acc@1 over both ranks:", [round(a.item(), 2) for a in acc1])  # the ranks agree
