"""pytorch/examples ImageNet `main.py` after PR #1034 (2022-08-17), reduced: `AverageMeter.all_reduce`
builds the tensor to reduce on the GPU when there is one, so the NCCL process group can reduce it.

Upstream: https://github.com/pytorch/examples/pull/1034 (commit 200cc47, fixes #1030).
Run with two processes, as `main.py --multiprocessing-distributed --world-size 1 --rank 0` does on two GPUs.
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class AverageMeter:
    """imagenet/main.py: computes and stores the average and current value."""

    def __init__(self, name):
        self.name = name
        self.sum, self.count, self.avg = 0, 0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def all_reduce(self):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        total = torch.tensor([self.sum, self.count], dtype=torch.float32, device=device)
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()
        self.avg = self.sum / self.count


def main_worker(gpu, ngpus_per_node, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group(backend="nccl", world_size=ngpus_per_node, rank=gpu)  # --dist-backend nccl
    torch.cuda.set_device(gpu)
    torch.manual_seed(gpu)
    model = torch.nn.Linear(8, 4).cuda(gpu)

    top1 = AverageMeter("Acc@1")
    with torch.no_grad():  # validate(): run_validate(val_loader)
        for _ in range(3):
            images = torch.randn(5, 8).cuda(gpu, non_blocking=True)
            target = torch.randint(0, 4, (5,)).cuda(gpu, non_blocking=True)
            correct = (model(images).argmax(1) == target).float().sum(0, keepdim=True)
            acc1 = [correct.mul_(100.0 / images.size(0))]  # accuracy(output, target, topk=(1,))
            top1.update(acc1[0], images.size(0))  # a 1-element CUDA tensor: sum becomes one too
    top1.all_reduce()  # if args.distributed: top1.all_reduce()
    torch.save(torch.tensor(top1.avg, dtype=torch.float32), os.path.join(out_dir, f"acc1_rank{gpu}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out_dir = tempfile.mkdtemp()
    mp.spawn(main_worker, nprocs=2, args=(2, out_dir))
    acc1 = [torch.load(os.path.join(out_dir, f"acc1_rank{r}.pt")) for r in range(2)]
    print("Acc@1 per rank:", [round(a.item(), 3) for a in acc1])  # the ranks agree
