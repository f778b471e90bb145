"""Upstream driver for timm-model-ema-v3-force-cpu: the real ``timm.utils.ModelEmaV3`` kept on
the CPU while a real timm model trains on "cuda".

huggingface/pytorch-image-models#2127. timm's ``train.py --model-ema --model-ema-force-cpu``
builds ``ModelEmaV3(model, device='cpu')`` after ``model.to(device=device)``. In 0.9.16 the
per-tensor update (``apply_update_``) does ``ema_v.lerp_(model_v, ...)`` with the CPU copy and
the model's CUDA tensors; 1.0.3 (commit 24f6d4f) moves ``model_v`` to the EMA's device first.
Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import torch
from _report import imported, report
from _torchvision_ops import declare_torchvision_ops


def main() -> None:
    declare_torchvision_ops()  # timm imports torchvision (transforms, ops) at import time
    import timm
    from timm.utils import ModelEmaV3

    imported(timm, "timm")
    torch.manual_seed(0)
    # a real timm architecture, small enough for a CPU: ResNet-10-T, no pretrained weights
    model = timm.create_model("resnet10t", pretrained=False, num_classes=10)
    device = torch.device("cuda")  # train.py: --device cuda
    model.to(device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # train.py: "create EMA model after cuda(), DP wrapper, and AMP but before DDP wrapper";
    # --model-ema-force-cpu passes device='cpu'
    model_ema = ModelEmaV3(model, decay=0.9, device="cpu")
    for _ in range(2):  # train_one_epoch: step, then the EMA update
        images = torch.randn(2, 3, 32, 32).to(device)
        target = torch.randint(0, 10, (2,)).to(device)
        loss = torch.nn.functional.cross_entropy(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_ema.update(model)
    ema_param = next(model_ema.module.parameters())
    report(event="done", loss=loss.item(), ema_device=str(ema_param.device),
           model_device=str(next(model.parameters()).device))


if __name__ == "__main__":
    main()
