"""SoftGroup (`softgroup/model/softgroup.py`), reduced to its test-time path, with the fix from
the SoftGroup#215 thread: before `get_instances` indexes the CPU `proposals_idx` with the GPU mask
`mask_inds`, it moves it to the mask's device, `proposals_idx = proposals_idx.to(mask_inds.device)`.

Upstream: https://github.com/thangvubk/SoftGroup/issues/215 (LDP626's comment, 2025-03-02).
"""

import torch
from torch import nn


def ball_query_and_bfs_cluster(coords, batch_idxs, radius):
    """A stand-in for softgroup/ops `ball_query` + `bfs_cluster`: points whose shifted coordinates
    fall in the same cell of a `radius` grid form one proposal. Like the C++ op, it works on the
    CPU and returns `proposals_idx` (rows of [proposal id, point index], int32) and
    `proposals_offset` there."""
    cells = torch.cat([batch_idxs[:, None], torch.div(coords, radius, rounding_mode="floor").long()], 1).cpu()
    _, cluster_of = torch.unique(cells, dim=0, return_inverse=True)
    order = torch.argsort(cluster_of, stable=True)
    counts = torch.bincount(cluster_of)
    proposals_idx = torch.stack([cluster_of[order], order], 1).int()
    proposals_offset = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]).int()
    return proposals_idx, proposals_offset


class SoftGroup(nn.Module):
    """softgroup/model/softgroup.py: a point-wise backbone (a stand-in for the sparse U-Net), then
    grouping, a per-proposal head (a stand-in for the tiny U-Net), and `get_instances`."""

    def __init__(self, in_channels=6, channels=16, semantic_classes=4, instance_classes=2,
                 sem2ins_classes=(), score_thr=0.3, radius=1.0, mask_score_thr=-0.5,
                 cls_score_thr=0.3, min_npoint=10):
        super().__init__()
        self.input_conv = nn.Sequential(nn.Linear(in_channels, channels), nn.ReLU(), nn.Linear(channels, channels))
        self.semantic_linear = nn.Linear(channels, semantic_classes)
        self.offset_linear = nn.Linear(channels, 3)
        self.cls_linear = nn.Linear(channels, instance_classes + 1)
        self.iou_score_linear = nn.Linear(channels, instance_classes)
        self.mask_linear = nn.Linear(channels, instance_classes)
        self.semantic_classes = semantic_classes
        self.instance_classes = instance_classes
        self.sem2ins_classes = sem2ins_classes
        self.grouping_cfg = dict(score_thr=score_thr, radius=radius, ignore_classes=(0, 1))
        self.test_cfg = dict(mask_score_thr=mask_score_thr, cls_score_thr=cls_score_thr, min_npoint=min_npoint)

    def forward_test(self, batch_idxs, coords_float, feats):
        output_feats = self.input_conv(torch.cat((feats, coords_float), 1))
        semantic_scores = self.semantic_linear(output_feats).softmax(-1)
        pt_offsets = self.offset_linear(output_feats)
        proposals_idx, proposals_offset = self.forward_grouping(semantic_scores, pt_offsets, batch_idxs,
                                                                coords_float)
        cls_scores, iou_scores, mask_scores = self.forward_instance(proposals_idx, proposals_offset,
                                                                    output_feats)
        return self.get_instances(proposals_idx, semantic_scores, cls_scores, iou_scores, mask_scores)

    def forward_grouping(self, semantic_scores, pt_offsets, batch_idxs, coords_float):
        proposals_idx_list, proposals_offset_list = [], []
        for class_id in range(self.semantic_classes):
            if class_id in self.grouping_cfg["ignore_classes"]:
                continue
            scores = semantic_scores[:, class_id].contiguous()
            object_idxs = (scores > self.grouping_cfg["score_thr"]).nonzero().view(-1)
            if object_idxs.size(0) < self.test_cfg["min_npoint"]:
                continue
            batch_idxs_ = batch_idxs[object_idxs]
            coords_ = coords_float[object_idxs]
            pt_offsets_ = pt_offsets[object_idxs]
            proposals_idx, proposals_offset = ball_query_and_bfs_cluster(
                coords_ + pt_offsets_, batch_idxs_, self.grouping_cfg["radius"])
            proposals_idx[:, 1] = object_idxs[proposals_idx[:, 1].long()].int()

            # merge proposals
            if len(proposals_offset_list) > 0:
                proposals_idx[:, 0] += sum([x.size(0) for x in proposals_offset_list]) - 1
                proposals_offset += proposals_offset_list[-1][-1]
                proposals_offset = proposals_offset[1:]
            if proposals_idx.size(0) > 0:
                proposals_idx_list.append(proposals_idx)
                proposals_offset_list.append(proposals_offset)
        proposals_idx = torch.cat(proposals_idx_list, dim=0)
        proposals_offset = torch.cat(proposals_offset_list)
        return proposals_idx, proposals_offset

    def forward_instance(self, proposals_idx, proposals_offset, output_feats):
        """Mean point features per proposal (clusters_voxelization + the tiny U-Net, reduced)."""
        num_instances = proposals_offset.size(0) - 1
        point_feats = output_feats[proposals_idx[:, 1].long().cuda()]
        inst_ids = proposals_idx[:, 0].long().cuda()
        inst_feats = torch.zeros(num_instances, point_feats.size(1), device=point_feats.device)
        inst_feats.index_add_(0, inst_ids, point_feats)
        inst_feats = inst_feats / (proposals_offset[1:] - proposals_offset[:-1]).cuda()[:, None]
        cls_scores = self.cls_linear(inst_feats)
        iou_scores = self.iou_score_linear(inst_feats)
        mask_scores = self.mask_linear(point_feats + inst_feats[inst_ids])
        return cls_scores, iou_scores, mask_scores

    def get_instances(self, proposals_idx, semantic_scores, cls_scores, iou_scores, mask_scores):
        num_instances = cls_scores.size(0)
        num_points = semantic_scores.size(0)
        cls_scores = cls_scores.softmax(1)
        cls_pred_list, score_pred_list, mask_pred_list = [], [], []
        for i in range(self.instance_classes):
            cls_pred = cls_scores.new_full((num_instances, ), i + 1, dtype=torch.long)
            cur_cls_scores = cls_scores[:, i]
            cur_iou_scores = iou_scores[:, i]
            cur_mask_scores = mask_scores[:, i]
            score_pred = cur_cls_scores * cur_iou_scores.clamp(0, 1)
            mask_pred = torch.zeros((num_instances, num_points), dtype=torch.int, device='cuda')
            mask_inds = cur_mask_scores > self.test_cfg["mask_score_thr"]
            proposals_idx = proposals_idx.to(mask_inds.device)  # the fix in SoftGroup#215
            cur_proposals_idx = proposals_idx[mask_inds].long()
            mask_pred[cur_proposals_idx[:, 0], cur_proposals_idx[:, 1]] = 1

            # filter low score instance
            inds = cur_cls_scores > self.test_cfg["cls_score_thr"]
            cls_pred = cls_pred[inds]
            score_pred = score_pred[inds]
            mask_pred = mask_pred[inds]

            # filter too small instances
            npoint = mask_pred.sum(1)
            inds = npoint >= self.test_cfg["min_npoint"]
            cls_pred_list.append(cls_pred[inds].cpu())
            score_pred_list.append(score_pred[inds].cpu())
            mask_pred_list.append(mask_pred[inds].cpu())
        return torch.cat(cls_pred_list), torch.cat(score_pred_list), torch.cat(mask_pred_list)


torch.manual_seed(0)
model = SoftGroup().cuda().eval()  # tools/test.py: model = SoftGroup(**cfg.model).cuda()
num_points = 300
batch = dict(  # @cuda_cast: every tensor of the batch goes to the GPU
    batch_idxs=torch.zeros(num_points, dtype=torch.int).cuda(),
    coords_float=(torch.rand(num_points, 3) * 2).cuda(),
    feats=torch.rand(num_points, 3).cuda(),
)
with torch.no_grad():
    cls_pred, score_pred, mask_pred = model.forward_test(**batch)
print(f"{len(cls_pred)} instances, classes {cls_pred.tolist()}, points per instance {mask_pred.sum(1).tolist()}")
