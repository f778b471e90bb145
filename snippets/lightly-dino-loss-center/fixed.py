"""Lightly 1.5.12's DINOLoss, reduced: the loss owns one registered buffer and reads it
directly; the update assigns a new tensor to the buffer.

Upstream: https://github.com/lightly-ai/lightly/pull/1629
"""

import torch
import torch.nn.functional as F
from torch import nn


def center_mean(x, dim):
    return torch.mean(x, dim=dim, keepdim=True)


def center_momentum(center, batch_center, momentum):
    return center * momentum + batch_center * (1 - momentum)


class DINOLoss(nn.Module):
    """lightly/loss/dino_loss.py in 1.5.12, without the temperature warm-up."""

    def __init__(self, output_dim=8, teacher_temp=0.04, student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.teacher_temp = teacher_temp
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, 1, output_dim))  # one owner

    def forward(self, teacher_out, student_out):
        teacher_out = torch.stack(teacher_out)
        t_out = F.softmax((teacher_out - self.center) / self.teacher_temp, dim=-1)
        student_out = torch.stack(student_out)
        s_out = F.log_softmax(student_out / self.student_temp, dim=-1)
        loss = -torch.einsum("tbd,sbd->ts", t_out, s_out)
        loss.fill_diagonal_(0)
        n_terms = loss.numel() - loss.diagonal().numel()
        loss = loss.sum() / (n_terms * teacher_out.shape[1])
        self.update_center(teacher_out)
        return loss

    @torch.no_grad()
    def update_center(self, teacher_out):
        batch_center = center_mean(teacher_out, dim=(0, 1))
        self.center = center_momentum(self.center, batch_center, self.center_momentum)


torch.manual_seed(0)
device = torch.device("cuda")
loss_fn = DINOLoss(output_dim=8).to(device)

teacher_out = [torch.randn(4, 8, device=device) for _ in range(2)]
student_out = [torch.randn(4, 8, device=device) for _ in range(2)]
loss = loss_fn(teacher_out, student_out)
print(loss)
