"""mmdeploy dev-1.x (2022-06-19 to 2022-11-09), reduced: `BaseTask.build_pytorch_model` calls
mmengine's `load_checkpoint(model, model_checkpoint)` without `map_location`. A checkpoint saved
on a GPU records `cuda:0` for every tensor, and `torch.load` cannot put them there on a machine
without CUDA, so `tools/deploy.py ... --device cpu` stops before the model exists.

Upstream: https://github.com/open-mmlab/mmdeploy/pull/1324 (the report and the fix, merged as
commit 0da93ea). `checkpoint.pth` was written on a GPU by make_checkpoint.py, next to this file.
"""

from pathlib import Path

import torch
from torch import nn

CHECKPOINT = Path(__file__).with_name("checkpoint.pth")  # tools/deploy.py ... checkpoint.pth


def load_checkpoint(model, filename, map_location=None, strict=False):
    """mmengine/runner/checkpoint.py, reduced: CheckpointLoader.load_from_local, then the weights."""
    checkpoint = torch.load(filename, map_location=map_location)
    state_dict = checkpoint.get("state_dict", checkpoint)
    model.load_state_dict(state_dict, strict=strict)
    return checkpoint


class BaseTask:
    """mmdeploy/codebase/base/task.py, reduced."""

    def __init__(self, device):
        self.device = device

    def build_pytorch_model(self, model_checkpoint=None):
        model = nn.Sequential(  # MODELS.build(self.model_cfg.model)
            nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
        )
        if model_checkpoint is not None:
            load_checkpoint(model, model_checkpoint)
        model = model.to(self.device)
        model.eval()
        return model


torch.manual_seed(0)
task_processor = BaseTask(device="cpu")  # tools/deploy.py deploy_cfg model_cfg checkpoint img --device cpu
torch_model = task_processor.build_pytorch_model(CHECKPOINT)  # torch2onnx(...)
with torch.no_grad():
    output = torch_model(torch.rand(1, 3, 8, 8))
print(output)
