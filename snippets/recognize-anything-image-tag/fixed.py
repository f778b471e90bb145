"""recognize-anything's finetune.py with the targets moved too (the fix proposed in issue
#155; never merged upstream).

Upstream: https://github.com/xinyu1205/recognize-anything/issues/155
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 6


class FinetuneDataset(Dataset):
    """Yields (image, image_224, caption, image_tag, parse_tag) like ram/data/dataset.py."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        image = torch.randn(3, 8, 8, generator=g)
        image_tag = torch.zeros(NUM_CLASSES, dtype=torch.long)
        image_tag[torch.randint(0, NUM_CLASSES, (2,), generator=g)] = 1
        return image, image, f"caption {i}", image_tag, torch.zeros(3, dtype=torch.long)


class AsymmetricLoss(nn.Module):
    """ram/models/utils.py (from Alibaba-MIIL/ASL), without the focusing term."""

    def __init__(self, clip=0.05, eps=1e-8):
        super().__init__()
        self.clip, self.eps = clip, eps

    def forward(self, x, y):
        xs_pos = torch.sigmoid(x)
        xs_neg = (1 - xs_pos + self.clip).clamp(max=1)
        los_pos = y * torch.log(xs_pos.clamp(min=self.eps))
        los_neg = (1 - y) * torch.log(xs_neg.clamp(min=self.eps))
        return -(los_pos + los_neg).sum()


torch.manual_seed(0)
device = torch.device("cuda")
tagging_head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, NUM_CLASSES)).to(device)
criterion = AsymmetricLoss()

for image, image_224, caption, image_tag, parse_tag in DataLoader(FinetuneDataset(), batch_size=4):
    image = image.to(device, non_blocking=True)
    image_224 = image_224.to(device, non_blocking=True)
    image_tag = image_tag.to(device, non_blocking=True)  # the targets travel with the images
    logits = tagging_head(image)
    loss = criterion(logits, image_tag)
    loss.backward()
    break
print(loss)
