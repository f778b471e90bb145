"""otaheri/chamfer_distance (chamfer_distance/chamfer_distance.py before PR #5), reduced: for
CUDA inputs, `ChamferDistanceFunction.forward` allocates its outputs on the CPU and moves them
with a bare `.cuda()`, which means the current GPU, cuda:0. With the point clouds on another
GPU (`cuda:1` here, `cuda:6` in the report) the distances come back on cuda:0, and the first
operation that meets a tensor of the training GPU fails.

The C++/CUDA kernel `cd.forward_cuda` is replaced by the same computation in PyTorch ops,
written into the same preallocated output tensors.

Upstream: https://github.com/otaheri/chamfer_distance/pull/5
"""

import torch


class cd:  # the JIT-compiled extension (cd = load(name="cd", ...)) in chamfer_distance.py
    @staticmethod
    def forward_cuda(xyz1, xyz2, dist1, dist2, idx1, idx2):
        d = torch.cdist(xyz1, xyz2) ** 2
        m1, i1 = d.min(dim=2)
        m2, i2 = d.min(dim=1)
        dist1.copy_(m1)
        dist2.copy_(m2)
        idx1.copy_(i1)
        idx2.copy_(i2)

    forward = forward_cuda  # the C++ kernel computes the same on the CPU


class ChamferDistanceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xyz1, xyz2):
        batchsize, n, _ = xyz1.size()
        _, m, _ = xyz2.size()
        xyz1 = xyz1.contiguous()
        xyz2 = xyz2.contiguous()
        dist1 = torch.zeros(batchsize, n)
        dist2 = torch.zeros(batchsize, m)

        idx1 = torch.zeros(batchsize, n, dtype=torch.int)
        idx2 = torch.zeros(batchsize, m, dtype=torch.int)

        if not xyz1.is_cuda:
            cd.forward(xyz1, xyz2, dist1, dist2, idx1, idx2)
        else:
            dist1 = dist1.cuda()
            dist2 = dist2.cuda()
            idx1 = idx1.cuda()
            idx2 = idx2.cuda()
            cd.forward_cuda(xyz1, xyz2, dist1, dist2, idx1, idx2)

        ctx.save_for_backward(xyz1, xyz2, idx1, idx2)

        return dist1, dist2, idx1, idx2


class ChamferDistance(torch.nn.Module):
    def forward(self, xyz1, xyz2):
        return ChamferDistanceFunction.apply(xyz1, xyz2)


torch.manual_seed(0)
device = torch.device("cuda:1")  # the GPU this training run was given
chamfer_dist = ChamferDistance()

p1 = torch.rand([10, 25, 3], device=device)  # predicted points
p2 = torch.rand([10, 15, 3], device=device)  # target points
reg_loss = 0.01 * p1.pow(2).mean()  # another term of the loss, on the training GPU

with torch.no_grad():  # a validation step: no backward
    dist1, dist2, idx1, idx2 = chamfer_dist(p1, p2)
    loss = reg_loss + (torch.mean(dist1)) + (torch.mean(dist2))
print(f"Loss: {loss.item():.4f}")
