"""Upstream driver for lightly-dino-loss-center: the real ``lightly.loss.DINOLoss`` on "cuda".

lightly-ai/lightly#1630. In 1.5.11 ``DINOLoss`` keeps its center twice (a registered buffer
and a plain attribute of its ``Center`` helper); ``.to("cuda")`` moves only the buffer, and
``forward`` subtracts the helper's CPU tensor from the CUDA teacher output. 1.5.10 and 1.5.12
(PR #1629) compute the loss. Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import os

import torch
from _report import imported, report
from _torchvision_ops import declare_torchvision_ops


def main() -> None:
    # On import lightly asks its server, in a background thread, whether a newer release
    # exists (lightly/__init__.py); this variable says it already did: no network, no noise.
    os.environ["LIGHTLY_DID_VERSION_CHECK"] = "True"
    declare_torchvision_ops()  # before lightly imports torchvision
    import lightly
    from lightly.loss import DINOLoss

    imported(lightly, "lightly")
    torch.manual_seed(0)
    loss_fn = DINOLoss(output_dim=8).to("cuda")  # as a training script or LightningModule does
    teacher_out = [torch.randn(4, 8, device="cuda") for _ in range(2)]  # two views, batch of 4
    student_out = [torch.randn(4, 8, device="cuda") for _ in range(2)]
    loss = loss_fn(teacher_out, student_out, epoch=0)
    report(event="done", loss=loss.item(), loss_device=str(loss.device),
           center_device=str(loss_fn.center.device))


if __name__ == "__main__":
    main()
