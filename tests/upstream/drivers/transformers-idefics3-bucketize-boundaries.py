"""Upstream driver for transformers-idefics3-bucketize-boundaries: the real Idefics3 vision
encoder on "cuda".

huggingface/transformers#39947. 4.55.0 builds the patch coordinates in
``Idefics3VisionEmbeddings.forward`` on the input's device but ``boundaries = torch.arange(...)``
without ``device=``, so ``torch.bucketize`` gets CPU boundaries and fails on every GPU forward;
4.55.1 creates them on the input's device. Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import torch
from _report import imported, report


def main() -> None:
    import transformers
    from transformers import Idefics3VisionConfig
    from transformers.models.idefics3.modeling_idefics3 import Idefics3VisionTransformer

    imported(transformers, "transformers")
    torch.manual_seed(0)
    # the vision tower of Idefics3 / SmolVLM, tiny and built from a config (no download)
    config = Idefics3VisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                  num_attention_heads=2, image_size=32, patch_size=8)
    encoder = Idefics3VisionTransformer(config).to("cuda")
    pixel_values = torch.randn(2, 3, 32, 32, device="cuda")
    patch_attention_mask = torch.ones(2, 4, 4, dtype=torch.bool, device="cuda")
    out = encoder(pixel_values=pixel_values, patch_attention_mask=patch_attention_mask)
    hidden = out.last_hidden_state
    report(event="done", shape=list(hidden.shape), device=str(hidden.device),
           mean=hidden.float().mean().item())


if __name__ == "__main__":
    main()
