"""transformers 4.55.0, Idefics3VisionEmbeddings.forward, reduced: the patch coordinates are now
built on the input's device, but `boundaries` (and `position_ids`) still come from factory calls
without `device=`, so `torch.bucketize` gets a CUDA input and CPU boundaries.

Upstream: https://github.com/huggingface/transformers/issues/39947 (fixed by PRs #39975 and
#39981, transformers 4.55.1). Idefics2 and SmolVLM carry the same code.
"""

import torch
from torch import nn


class Idefics3VisionEmbeddings(nn.Module):
    """transformers/models/idefics3/modeling_idefics3.py in 4.55.0, with a tiny config."""

    def __init__(self, image_size=32, patch_size=8, hidden_size=16, num_channels=3):
        super().__init__()
        self.embed_dim = hidden_size
        self.image_size = image_size
        self.patch_size = patch_size
        self.patch_embedding = nn.Conv2d(
            num_channels, self.embed_dim, kernel_size=patch_size, stride=patch_size
        )
        self.num_patches_per_side = self.image_size // self.patch_size
        self.num_patches = self.num_patches_per_side**2
        self.num_positions = self.num_patches
        self.position_embedding = nn.Embedding(self.num_positions, self.embed_dim)

    def forward(self, pixel_values, patch_attention_mask):
        batch_size, _, max_im_h, max_im_w = pixel_values.shape

        patch_embeds = self.patch_embedding(pixel_values)
        embeddings = patch_embeds.flatten(2).transpose(1, 2)

        max_nb_patches_h, max_nb_patches_w = max_im_h // self.patch_size, max_im_w // self.patch_size
        boundaries = torch.arange(1 / self.num_patches_per_side, 1.0, 1 / self.num_patches_per_side)
        position_ids = torch.full(size=(batch_size, max_nb_patches_h * max_nb_patches_w), fill_value=0)

        for batch_idx, p_attn_mask in enumerate(patch_attention_mask):
            nb_patches_h = p_attn_mask[:, 0].sum()
            nb_patches_w = p_attn_mask[0].sum()

            # new in 4.55.0: the coordinates are built on the input's device ...
            h_indices = torch.arange(nb_patches_h, device=pixel_values.device, dtype=pixel_values.dtype)
            w_indices = torch.arange(nb_patches_w, device=pixel_values.device, dtype=pixel_values.dtype)

            fractional_coords_h = h_indices / nb_patches_h * (1 - 1e-6)
            fractional_coords_w = w_indices / nb_patches_w * (1 - 1e-6)

            # ... and meet `boundaries`, still created on the CPU
            bucket_coords_h = torch.bucketize(fractional_coords_h, boundaries, right=True)
            bucket_coords_w = torch.bucketize(fractional_coords_w, boundaries, right=True)

            pos_ids = (bucket_coords_h[:, None] * self.num_patches_per_side + bucket_coords_w).flatten()
            position_ids[batch_idx][p_attn_mask.view(-1).cpu()] = pos_ids

        position_ids = position_ids.to(self.position_embedding.weight.device)
        embeddings = embeddings + self.position_embedding(position_ids)
        return embeddings


torch.manual_seed(0)
device = "cuda"
embeddings_module = Idefics3VisionEmbeddings().to(device)

pixel_values = torch.rand(2, 3, 32, 32, device=device)
patch_attention_mask = torch.ones(2, 4, 4, dtype=torch.bool, device=device)
patch_attention_mask[1, 3:, :] = False  # the second image is shorter: 3 rows of patches
embeddings = embeddings_module(pixel_values, patch_attention_mask)
print(embeddings.sum())
