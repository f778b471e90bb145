"""Depth-Anything-V2's README "Use our models" snippet after commit 4b8b3e4 (2024-06-30),
reduced: the README picks `DEVICE` the way `DepthAnythingV2.image2tensor()` does and moves the
model there, so the model and the image it prepares meet on the same device.

Upstream: https://github.com/DepthAnything/Depth-Anything-V2/commit/4b8b3e4 (fixes issue
#45). An image tensor stands in for `cv2.imread(...)`, without OpenCV or NumPy.
"""

import torch
import torch.nn.functional as F
from torch import nn


class PatchEmbed(nn.Module):
    """depth_anything_v2/dinov2_layers/patch_embed.py"""

    def __init__(self, patch_size=14, in_chans=3, embed_dim=16):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # B C H W
        return x.flatten(2).transpose(1, 2)  # B HW C


class DINOv2(nn.Module):
    """The encoder, reduced to its patch embedding and one block."""

    def __init__(self, embed_dim=16):
        super().__init__()
        self.embed_dim = embed_dim
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.block = nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, embed_dim), nn.GELU())

    def get_intermediate_layers(self, x):
        x = self.patch_embed(x)
        return x + self.block(x)


class DepthAnythingV2(nn.Module):
    """depth_anything_v2/dpt.py, with a one-convolution depth head."""

    def __init__(self, features=16):
        super().__init__()
        self.pretrained = DINOv2(embed_dim=features)
        self.depth_head = nn.Conv2d(features, 1, kernel_size=1)

    def forward(self, x):
        patch_h, patch_w = x.shape[-2] // 14, x.shape[-1] // 14
        features = self.pretrained.get_intermediate_layers(x)
        features = features.transpose(1, 2).reshape(x.shape[0], -1, patch_h, patch_w)
        depth = self.depth_head(features)
        depth = F.relu(depth)
        return depth.squeeze(1)

    @torch.no_grad()
    def infer_image(self, raw_image, input_size=56):
        image, (h, w) = self.image2tensor(raw_image, input_size)
        depth = self.forward(image)
        depth = F.interpolate(depth[:, None], (h, w), mode="bilinear", align_corners=True)[0, 0]
        return depth.cpu()  # .numpy() upstream

    def image2tensor(self, raw_image, input_size=56):
        h, w = raw_image.shape[:2]
        image = raw_image.flip(-1).float() / 255.0  # cv2.cvtColor(raw_image, cv2.COLOR_BGR2RGB) / 255.0
        image = F.interpolate(image.permute(2, 0, 1)[None], (input_size, input_size), mode="bicubic")
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        image = (image - mean) / std  # NormalizeImage, PrepareForNet

        # upstream: 'cuda' if torch.cuda.is_available() else 'mps' if ... else 'cpu'
        DEVICE = "cuda"
        image = image.to(DEVICE)
        return image, (h, w)


# README: DEVICE = 'cuda' if torch.cuda.is_available() else 'mps' if ... else 'cpu'
DEVICE = "cuda"

torch.manual_seed(0)
model = DepthAnythingV2()
# model.load_state_dict(torch.load(f'checkpoints/depth_anything_v2_{encoder}.pth', map_location='cpu'))
model = model.to(DEVICE).eval()

raw_img = torch.randint(0, 256, (60, 80, 3), dtype=torch.uint8)  # cv2.imread('your/image/path')
depth = model.infer_image(raw_img)  # HxW raw depth map
print(depth.sum())
