"""A LiDAR detector's point-cloud dataset (OpenPCDet style), reduced: `__getitem__` voxelises
each point cloud with spconv 2.x's `PointToVoxel`, built on the GPU
(`device=torch.device("cuda:0")`), and training reads the dataset through a `DataLoader` with
workers. By then the main process has initialised CUDA (the generator's tables and the model are
on the GPU), so every worker is a fork of it, and the generator's first GPU call there fails.

Upstream: https://github.com/traveller59/spconv/issues/408 -- the maintainer: "you can't use
cuda code in process with fork mode, I guess you use CUDA point-to-voxel in dataloader, you need
to change it to CPU."
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class PointToVoxel:
    """spconv.pytorch.utils.PointToVoxel, in plain PyTorch: points -> (voxels, ZYX coords, counts),
    each voxel holding the mean of its points."""

    def __init__(self, vsize_xyz, coors_range_xyz, num_point_features, max_num_voxels,
                 max_num_points_per_voxel, device="cpu:0"):
        self.device = torch.device(device)
        self.vsize = torch.tensor(vsize_xyz, device=self.device)
        self.coors_range = torch.tensor(coors_range_xyz, device=self.device)
        self.grid_size = ((self.coors_range[3:] - self.coors_range[:3]) / self.vsize).round().long()
        self.num_point_features = num_point_features
        self.max_num_voxels = max_num_voxels
        self.max_num_points_per_voxel = max_num_points_per_voxel

    def __call__(self, pc):
        pc = pc.to(self.device)
        xyz = ((pc[:, :3] - self.coors_range[:3]) / self.vsize).floor().long()
        inside = ((xyz >= 0) & (xyz < self.grid_size)).all(dim=1)
        pc, xyz = pc[inside], xyz[inside]
        gx, gy, gz = self.grid_size.tolist()
        keys = (xyz[:, 2] * gy + xyz[:, 1]) * gx + xyz[:, 0]
        uniq, inverse = torch.unique(keys, return_inverse=True)
        n = uniq.numel()
        num_points = torch.zeros(n, device=self.device).index_add_(0, inverse, torch.ones_like(keys, dtype=torch.float))
        voxels = torch.zeros(n, self.num_point_features, device=self.device).index_add_(0, inverse, pc)
        voxels = voxels / num_points[:, None]
        coords = torch.stack([uniq // (gx * gy), uniq // gx % gy, uniq % gx], dim=1)  # ZYX
        num_points = num_points.clamp(max=self.max_num_points_per_voxel)
        return voxels[:self.max_num_voxels], coords[:self.max_num_voxels], num_points[:self.max_num_voxels]


class PointCloudDataset(Dataset):
    def __init__(self, num_samples=8, device="cuda:0"):
        g = torch.Generator().manual_seed(0)
        self.point_clouds = [torch.rand(64, 4, generator=g) * 8 - 4 for _ in range(num_samples)]
        self.targets = torch.rand(num_samples, 1, generator=g)
        self.voxel_generator = PointToVoxel(
            vsize_xyz=[1.0, 1.0, 1.0],
            coors_range_xyz=[-4, -4, -4, 4, 4, 4],
            num_point_features=4,
            max_num_voxels=64,
            max_num_points_per_voxel=5,
            device=device)

    def __len__(self):
        return len(self.point_clouds)

    def __getitem__(self, index):
        voxels, coordinates, num_points = self.voxel_generator(self.point_clouds[index])
        return {"voxels": voxels, "voxel_coords": coordinates, "voxel_num_points": num_points,
                "target": self.targets[index]}


def collate_batch(batch_list):
    """As OpenPCDet's: voxels concatenated, a batch index put before each voxel's coordinates."""
    coords = [torch.nn.functional.pad(s["voxel_coords"], (1, 0), value=i) for i, s in enumerate(batch_list)]
    return {"voxels": torch.cat([s["voxels"] for s in batch_list]),
            "voxel_coords": torch.cat(coords),
            "voxel_num_points": torch.cat([s["voxel_num_points"] for s in batch_list]),
            "target": torch.stack([s["target"] for s in batch_list]),
            "batch_size": len(batch_list)}


class VoxelNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.vfe = nn.Linear(4, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, batch):
        features = torch.relu(self.vfe(batch["voxels"]))
        batch_idx = batch["voxel_coords"][:, 0]
        pooled = torch.zeros(batch["batch_size"], 16, device=features.device).index_add_(0, batch_idx, features)
        counts = torch.bincount(batch_idx, minlength=batch["batch_size"]).clamp(min=1)
        return self.head(pooled / counts[:, None])


torch.manual_seed(0)
device = torch.device("cuda:0")
model = VoxelNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_set = PointCloudDataset(device=device)
train_loader = DataLoader(train_set, batch_size=4, num_workers=2, collate_fn=collate_batch)

for batch in train_loader:
    batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
    loss = nn.functional.mse_loss(model(batch), batch["target"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(loss)
