"""segment-anything 1.0, SamAutomaticMaskGenerator._process_crop, reduced: the NMS categories
are `torch.zeros(len(boxes))`, a CPU tensor. With many candidate masks torchvision's
`batched_nms` switches to its per-class loop, which indexes the CPU category indices with the
CUDA indices `nms()` returns.

Upstream: https://github.com/facebookresearch/segment-anything/issues/17 (fixed by PR #41 on
GitHub `main`; the only PyPI release, 1.0, still has the bug). torchvision's `batched_nms`
is inlined (0.12-0.21) with `nms()` written in plain PyTorch.
"""

import torch


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def nms(boxes, scores, iou_threshold):
    """torchvision.ops.nms (a C++/CUDA kernel): greedy NMS, indices on the boxes' device."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        iou = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][iou <= iou_threshold]
    return torch.stack(keep)


def _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold):
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))  # moves idxs
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def _batched_nms_vanilla(boxes, scores, idxs, iou_threshold):
    keep_mask = torch.zeros_like(scores, dtype=torch.bool)
    for class_id in torch.unique(idxs):
        curr_indices = torch.where(idxs == class_id)[0]  # on idxs' device
        curr_keep_indices = nms(boxes[curr_indices], scores[curr_indices], iou_threshold)
        keep_mask[curr_indices[curr_keep_indices]] = True  # CPU tensor[CUDA indices]
    keep_indices = torch.where(keep_mask)[0]
    return keep_indices[scores[keep_indices].sort(descending=True)[1]]


def batched_nms(boxes, scores, idxs, iou_threshold):
    """torchvision/ops/boxes.py, 0.12-0.21: the per-class loop above 20,000 numel on a GPU."""
    if boxes.numel() > (4000 if boxes.device.type == "cpu" else 20000):
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


torch.manual_seed(0)
device = "cuda"
box_nms_thresh = 0.7

# MaskData from the model: 6,000 candidate masks' boxes (24,000 numel), around 8 objects
centers = torch.rand(8, 2, device=device) * 900
xy = centers.repeat_interleave(750, dim=0) + torch.rand(6000, 2, device=device) * 4
data = {
    "boxes": torch.cat([xy, xy + 60], dim=1).round().int(),
    "iou_preds": torch.rand(6000, device=device),
}

# Remove duplicates within this crop.
keep_by_nms = batched_nms(
    data["boxes"].float(),
    data["iou_preds"],
    torch.zeros(len(data["boxes"])),  # categories
    iou_threshold=box_nms_thresh,
)
print(keep_by_nms)
