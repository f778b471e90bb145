"""fast-reid after commit 62ad5e1 (master, 2021-06-17), reduced: `DefaultPredictor.__call__`
returns `predictions.cpu()`, so every consumer of the predictor, `demo/visualize_result.py`
included, gets host tensors.

Upstream: https://github.com/JDAI-CV/fast-reid/commit/62ad5e1a8b69a14663b6e8cfc06cbbd2d9c984f6
(for the report in PR #509).
"""

import torch
from torch import nn

torch.manual_seed(0)


class Baseline(nn.Module):
    """fastreid/modeling/meta_arch/baseline.py, shrunk: normalise the images, embed them."""

    def __init__(self, feat_dim=8):
        super().__init__()
        self.register_buffer("pixel_mean", torch.full((1, 3, 1, 1), 0.5))
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.heads = nn.Linear(4, feat_dim)

    @property
    def device(self):
        return self.pixel_mean.device

    def forward(self, batched_inputs):
        images = batched_inputs["images"] - self.pixel_mean
        return self.heads(self.backbone(images))


class DefaultPredictor:
    """fastreid/engine/defaults.py, after 62ad5e1."""

    def __init__(self, cfg):
        self.model = Baseline().to(cfg["MODEL.DEVICE"])  # build_model(cfg); Checkpointer(...).load(...)
        self.model.eval()

    def __call__(self, image):
        inputs = {"images": image.to(self.model.device)}
        with torch.no_grad():  # https://github.com/sphinx-doc/sphinx/issues/4258
            predictions = self.model(inputs)
        return predictions.cpu()  # 62ad5e1: "Move cuda tensor to host memory in predictor"


cfg = {"MODEL.DEVICE": "cuda"}  # the default of fast-reid's config
predictor = DefaultPredictor(cfg)  # FeatureExtractionDemo(cfg, parallel=False)

# demo/visualize_result.py: extract the features of the test set (query images first)
test_loader = [torch.rand(4, 3, 16, 16) for _ in range(3)]  # build_reid_test_loader(cfg, ...)
num_query = 4
feats = [predictor(images) for images in test_loader]  # demo.run_on_loader(test_loader)
feats = torch.cat(feats, dim=0)
q_feat = feats[:num_query]
g_feat = feats[num_query:]

# compute cosine distance
distmat = 1 - torch.mm(q_feat, g_feat.t())
distmat = distmat.numpy()
print(distmat.argsort(axis=1)[:, :3])  # evaluate_rank(distmat, q_pids, g_pids, ...)
