"""ultralytics/yolov5 v6.0, models/yolo.py, reduced: `Model._apply()` (PR #5110) applies
`to()`, `cpu()`, `cuda()` and `half()` also to the tensors `Detect` keeps outside its parameters
and buffers, the stride and the grid list.

Upstream: https://github.com/ultralytics/yolov5/pull/5110 (commit a0e15046c).
"""

import torch
from torch import nn


class Detect(nn.Module):
    stride = None  # strides computed during build

    def __init__(self, nc=1, anchors=(), ch=()):  # detection layer
        super().__init__()
        self.nc = nc  # number of classes
        self.no = nc + 5  # number of outputs per anchor
        self.nl = len(anchors)  # number of detection layers
        self.na = len(anchors[0]) // 2  # number of anchors
        self.grid = [torch.zeros(1)] * self.nl  # init grid: a plain list, not a buffer
        a = torch.tensor(anchors).float().view(self.nl, -1, 2)
        self.register_buffer("anchors", a)  # shape(nl,na,2)
        self.register_buffer("anchor_grid", a.clone().view(self.nl, 1, -1, 1, 1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)  # output conv

    def forward(self, x):
        z = []  # inference output
        for i in range(self.nl):
            x[i] = self.m[i](x[i])  # conv
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()

            if not self.training:  # inference
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:  # rebuilt on shape change only
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)

                y = x[i].sigmoid()
                y[..., 0:2] = (y[..., 0:2] * 2.0 - 0.5 + self.grid[i]) * self.stride[i]  # xy
                y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]  # wh
                z.append(y.view(bs, -1, self.no))

        return x if self.training else (torch.cat(z, 1), x)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()


class Model(nn.Module):
    """A one-level stand-in for yolov5s: a stride-8 backbone and Detect()."""

    def __init__(self, ch=3, nc=1, anchors=((10, 13, 16, 30, 33, 23),)):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(ch, 8, 3, stride=8, padding=1), Detect(nc, anchors, ch=(8,)))

        # Build strides, anchors (v5.0 measures the stride with a forward pass)
        m = self.model[-1]  # Detect()
        m.stride = torch.tensor([8.0])  # a plain attribute too; used as 0-dim scalars
        m.anchors /= m.stride.view(-1, 1, 1)
        self.stride = m.stride

    def forward(self, x):
        return self.model[-1]([self.model[0](x)])

    def _apply(self, fn):
        # Apply to(), cpu(), cuda(), half() to model tensors that are not parameters or registered buffers
        self = super()._apply(fn)
        m = self.model[-1]  # Detect()
        if isinstance(m, Detect):
            m.stride = fn(m.stride)
            m.grid = list(map(fn, m.grid))
        return self


torch.manual_seed(0)
model = Model().eval()  # torch.hub.load('ultralytics/yolov5', 'yolov5s', device='cuda:0')
img = torch.rand(1, 3, 64, 64)

model.to("cuda")
with torch.no_grad():
    pred_gpu = model(img.to("cuda"))[0]  # builds the grid on the GPU
print(pred_gpu.sum())

model.to("cpu")
with torch.no_grad():
    pred = model(img)[0]  # the grid moved with the model
print(pred.sum())
