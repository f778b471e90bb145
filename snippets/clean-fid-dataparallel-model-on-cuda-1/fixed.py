"""clean-fid after PR #65 (GitHub `main`, merged 2025-07-31), reduced: `feature_extractor` passes
the requested device to DataParallel, `device_ids=[device]`, so `device_ids[0]` is the GPU the
network was moved to.

Upstream: https://github.com/GaParmar/clean-fid/pull/65 (fixes issue #60).
"""

import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda:1")  # fid.compute_fid(..., device=torch.device("cuda:1"))
use_dataparallel = True  # the default of compute_fid and feature_extractor

# cleanfid/features.py, feature_extractor(name="torchscript_inception", device=device, ...):
device_ids = [device]  # PR #65
model = nn.Sequential(  # InceptionV3W(path, download=True, resize_inside=False), shrunk
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16)
).to(device)
model.eval()
if use_dataparallel:
    model = torch.nn.DataParallel(model, device_ids=device_ids)


def model_fn(x):
    return model(x)


def get_batch_features(batch, model, device):
    """cleanfid/fid.py (which also calls .numpy() on the result)."""
    with torch.no_grad():
        feat = model(batch.to(device))
    return feat.detach().cpu()


batch = torch.randint(0, 256, (4, 3, 32, 32)).float()  # images in [0, 255] from the folder loader
feats = get_batch_features(batch, model_fn, device)
print(feats.shape)
