"""Lightly 1.5.11's DINOLoss, reduced: the center tensor is a plain attribute of a helper
module *and* a registered buffer of the loss. `.to("cuda")` moves the buffer; forward reads
the helper's attribute, which stays on the CPU.

Upstream: https://github.com/lightly-ai/lightly/issues/1630 (fixed by PR #1629, lightly 1.5.12).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Center(nn.Module):
    """lightly/models/modules/center.py in 1.5.11 (mean mode only)."""

    def __init__(self, size, momentum=0.9, _register_buffer=True):
        super().__init__()
        center = torch.zeros(size)
        if _register_buffer:
            self.register_buffer("center", center)
        else:
            self.center = center  # a plain attribute: Module.to() never sees it
        self.momentum = momentum

    @property
    def value(self):
        return self.center

    @torch.no_grad()
    def update(self, x):
        batch_center = torch.mean(x, dim=(0, 1), keepdim=True)
        self.center.copy_(self.center * self.momentum + batch_center * (1 - self.momentum))


class DINOLoss(nn.Module):
    """lightly/loss/dino_loss.py in 1.5.11, without the temperature warm-up."""

    def __init__(self, output_dim=8, teacher_temp=0.04, student_temp=0.1):
        super().__init__()
        self.teacher_temp = teacher_temp
        self.student_temp = student_temp
        self._center = Center(size=(1, 1, output_dim), _register_buffer=False)
        self.register_buffer("center", self._center.center)  # the same tensor, as a buffer

    def forward(self, teacher_out, student_out):
        teacher_out = torch.stack(teacher_out)
        t_out = F.softmax((teacher_out - self._center.value) / self.teacher_temp, dim=-1)
        student_out = torch.stack(student_out)
        s_out = F.log_softmax(student_out / self.student_temp, dim=-1)
        loss = -torch.einsum("tbd,sbd->ts", t_out, s_out)
        loss.fill_diagonal_(0)
        n_terms = loss.numel() - loss.diagonal().numel()
        loss = loss.sum() / (n_terms * teacher_out.shape[1])
        self._center.update(teacher_out)
        return loss


torch.manual_seed(0)
device = torch.device("cuda")
loss_fn = DINOLoss(output_dim=8).to(device)  # moves the buffer, not the helper's attribute

teacher_out = [torch.randn(4, 8, device=device) for _ in range(2)]
student_out = [torch.randn(4, 8, device=device) for _ in range(2)]
loss = loss_fn(teacher_out, student_out)
print(loss)
