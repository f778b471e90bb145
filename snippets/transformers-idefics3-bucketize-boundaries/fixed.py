"""transformers 4.55.1, Idefics3VisionEmbeddings.forward, reduced: `boundaries` and
`position_ids` are created on the input's device, so every tensor of the position-id
computation lives where the patch coordinates do.

Upstream: https://github.com/huggingface/transformers/pull/39975 and
https://github.com/huggingface/transformers/pull/39981 (fix for issue #39947).
"""

import torch
from torch import nn


class Idefics3VisionEmbeddings(nn.Module):
    """transformers/models/idefics3/modeling_idefics3.py in 4.55.1, with a tiny config."""

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
        boundaries = torch.arange(
            1 / self.num_patches_per_side, 1.0, 1 / self.num_patches_per_side, device=pixel_values.device
        )
        position_ids = torch.full(
            size=(batch_size, max_nb_patches_h * max_nb_patches_w), fill_value=0, device=pixel_values.device
        )

        for batch_idx, p_attn_mask in enumerate(patch_attention_mask):
            nb_patches_h = p_attn_mask[:, 0].sum()
            nb_patches_w = p_attn_mask[0].sum()

            h_indices = torch.arange(nb_patches_h, device=position_ids.device, dtype=position_ids.dtype)
            w_indices = torch.arange(nb_patches_w, device=position_ids.device, dtype=position_ids.dtype)

            fractional_coords_h = h_indices / nb_patches_h * (1 - 1e-6)
            fractional_coords_w = w_indices / nb_patches_w * (1 - 1e-6)

            bucket_coords_h = torch.bucketize(fractional_coords_h, boundaries, right=True)
            bucket_coords_w = torch.bucketize(fractional_coords_w, boundaries, right=True)

            pos_ids = (bucket_coords_h[:, None] * self.num_patches_per_side + bucket_coords_w).flatten()
            position_ids[batch_idx][p_attn_mask.view(-1)] = pos_ids

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
