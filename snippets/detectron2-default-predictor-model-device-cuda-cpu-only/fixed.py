"""detectron2's `DefaultPredictor`, reduced, configured the way the answer in detectron2#1416 says
for a machine without CUDA: `cfg.MODEL.DEVICE = 'cpu'`, so `build_model` moves the model to the
CPU and the CPU-only PyTorch build is never asked for CUDA.

Upstream: https://github.com/facebookresearch/detectron2/issues/1416 ("try adding this after
cfg.MODEL.WEIGHTS: cfg.MODEL.DEVICE = 'cpu'" -- "It's work!").
"""

import copy
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn


def get_cfg():
    """detectron2/config/defaults.py, the keys this program reads."""
    return SimpleNamespace(
        MODEL=SimpleNamespace(DEVICE="cuda", WEIGHTS="", PIXEL_MEAN=[103.530, 116.280, 123.675],
                              PIXEL_STD=[1.0, 1.0, 1.0], ROI_HEADS=SimpleNamespace(SCORE_THRESH_TEST=0.05,
                                                                                    NUM_CLASSES=80)),
        INPUT=SimpleNamespace(FORMAT="BGR"),
    )


class GeneralizedRCNN(nn.Module):
    """A stand-in for detectron2's meta-architecture: normalisation buffers, a backbone, a head."""

    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.roi_heads = nn.Linear(8, cfg.MODEL.ROI_HEADS.NUM_CLASSES)
        self.register_buffer("pixel_mean", torch.tensor(cfg.MODEL.PIXEL_MEAN).view(-1, 1, 1), False)
        self.register_buffer("pixel_std", torch.tensor(cfg.MODEL.PIXEL_STD).view(-1, 1, 1), False)

    @property
    def device(self):
        return self.pixel_mean.device

    def forward(self, batched_inputs):
        images = torch.stack([(x["image"].to(self.device) - self.pixel_mean) / self.pixel_std for x in batched_inputs])
        scores = self.roi_heads(self.backbone(images)).softmax(-1)
        return [{"scores": s} for s in scores]


def build_model(cfg):
    """detectron2/modeling/meta_arch/build.py"""
    model = GeneralizedRCNN(cfg)  # META_ARCH_REGISTRY.get(meta_arch)(cfg)
    model.to(torch.device(cfg.MODEL.DEVICE))
    return model


class DefaultPredictor:
    """detectron2/engine/defaults.py, without the checkpoint load and the resize."""

    def __init__(self, cfg):
        self.cfg = copy.deepcopy(cfg)  # cfg.clone()
        self.model = build_model(self.cfg)
        self.model.eval()
        self.input_format = cfg.INPUT.FORMAT

    def __call__(self, original_image):
        with torch.no_grad():
            height, width = original_image.shape[:2]
            image = torch.as_tensor(original_image.astype("float32").transpose(2, 0, 1))
            inputs = {"image": image, "height": height, "width": width}
            return self.model([inputs])[0]


torch.manual_seed(0)
im = np.random.default_rng(0).integers(0, 256, size=(32, 48, 3), dtype=np.uint8)  # cv2.imread("./input.jpg")
cfg = get_cfg()  # cfg.merge_from_file(model_zoo.get_config_file("COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x.yaml"))
cfg.MODEL.ROI_HEADS.SCORE_THRESH_TEST = 0.5
cfg.MODEL.DEVICE = "cpu"  # the answer in detectron2#1416 (or `MODEL.DEVICE cpu` after --opts)
predictor = DefaultPredictor(cfg)
outputs = predictor(im)
print("top class:", outputs["scores"].argmax().item())
