"""CaricatureFace `cariface.py`, `CariFace.load_model`, fixed as the maintainer answered: each
`torch.load` maps the storages saved on `cuda:1` to `cuda:0`, a GPU this machine has.

Upstream: https://github.com/Juyong/CaricatureFace/issues/2 (the maintainer's answer: pass
`map_location='cuda:0'` on lines 145 and 146). The checkpoints beside this file were written by
make_checkpoint.py on a two-GPU machine; ResNet-34 and MyNet are reduced to small stand-ins.
"""

from pathlib import Path

import torch
from torch import nn

MODEL_DIR = Path(__file__).parent  # model/ in the repository


class CariFace:
    def init_numbers(self, landmark_num=68, vertex_num=3, device_num=0):
        self.landmark_num = landmark_num
        self.vertex_num = vertex_num
        self.device_num = device_num

    def load_model(self, model1_path=MODEL_DIR / "resnet34_adam.pth", model2_path=MODEL_DIR / "mynet_adam.pth"):
        # torchvision.models.resnet34 with a 100-way fc, and MyNet (fc1, fc2, fc3), reduced
        self.model1 = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 100))
        self.model1 = self.model1.to(self.device_num)
        self.model2 = nn.Sequential(nn.Linear(94, 32), nn.ReLU(), nn.Linear(32, 32), nn.Linear(32, self.vertex_num * 9))
        self.model2 = self.model2.to(self.device_num)
        ck1 = torch.load(model1_path, map_location="cuda:0")  # onto a GPU this machine has
        ck2 = torch.load(model2_path, map_location="cuda:0")
        self.model1.load_state_dict(ck1["net"])
        self.model2.load_state_dict(ck2["net"])


torch.manual_seed(0)
model = CariFace()
model.init_numbers(device_num=0)  # train.py / test.py: --device_num 0 (the default)
model.load_model()
img = torch.rand(2, 3, 16, 16).to(model.device_num)
output = model.model1(img)
delta = model.model2(output[:, 0:94])  # alpha parameters -> deformation representation
print(delta.sum())
