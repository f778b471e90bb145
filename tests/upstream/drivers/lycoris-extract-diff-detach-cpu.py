"""Upstream driver for lycoris-extract-diff-detach-cpu: the real ``lycoris.utils.extract_diff``.

KohakuBlueleaf/LyCORIS#146. What ``tools/extract_locon.py --device cuda`` does, on a base and
a tuned "UNet" of one 3x3 ``Conv2d`` that differ: fixed-rank low-rank extraction with CP
decomposition (``small_conv=True``, the script's default), the branch that builds
``lora_mid``. 2.1.0.dev4 to dev7 compute ``root_weight - einsum(...).detach().cpu()`` with
``root_weight`` already moved to "cuda"; 2.1.0.dev8 (commit 49d4f1b) and 2.1.0 parenthesise
the subtraction. Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import torch
from _report import imported, report
from torch import nn


def main() -> None:
    import lycoris
    from lycoris.utils import extract_diff

    imported(lycoris, "lycoris-lora")
    torch.manual_seed(0)
    # extract_diff pairs the two models' layers by name; both are fresh, so they differ
    base_unet = nn.Sequential(nn.Conv2d(4, 8, kernel_size=3))
    tuned_unet = nn.Sequential(nn.Conv2d(4, 8, kernel_size=3))
    loras = extract_diff(
        base_tes=[], db_tes=[], base_unet=base_unet, db_unet=tuned_unet,
        mode="fixed", linear_mode_param=2, conv_mode_param=2,  # rank 2 < 8 outputs / 2
        extract_device="cuda", small_conv=True,
    )
    report(event="done", keys=sorted(loras))


if __name__ == "__main__":
    main()
