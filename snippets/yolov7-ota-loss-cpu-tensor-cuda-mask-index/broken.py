"""YOLOv7 `utils/loss.py`, `ComputeLossOTA.build_targets`, reduced (before the December 2022
fixes): `from_which_layer` is built without a device, on the CPU, and later indexed with a
boolean mask computed on the GPU. PyTorch up to 1.12 moved the mask silently; since 1.13
indexing a CPU tensor with CUDA indices is an error.

Upstream: https://github.com/WongKinYiu/yolov7/issues/1224 (and #306, #1045, #1101, #1228);
fixed by PRs #1311, #1337 and #1344.
"""

import torch


def xywh2xyxy(x):
    return torch.cat([x[:, :2] - x[:, 2:] / 2, x[:, :2] + x[:, 2:] / 2], dim=1)


def box_iou(box1, box2):
    area1 = (box1[:, 2] - box1[:, 0]) * (box1[:, 3] - box1[:, 1])
    area2 = (box2[:, 2] - box2[:, 0]) * (box2[:, 3] - box2[:, 1])
    inter = (torch.min(box1[:, None, 2:], box2[:, 2:]) - torch.max(box1[:, None, :2], box2[:, :2])).clamp(0).prod(2)
    return inter / (area1[:, None] + area2 - inter)


class ComputeLossOTA:
    """utils/loss.py: the SimOTA target assignment of build_targets, for the first image."""

    def __init__(self, stride=(8, 16, 32)):
        self.stride = stride

    def find_3_positive(self, p, targets):
        """Candidate cells per layer: the cell of each target and its right neighbour."""
        indices = []
        for pi in p:
            ny, nx = pi.shape[2:4]
            b = targets[:, 0].long().repeat(2)
            gxy = (targets[:, 2:4] * torch.tensor([nx, ny], device=targets.device)).long()
            gi = torch.cat([gxy[:, 0], (gxy[:, 0] + 1).clamp(max=nx - 1)])
            gj = gxy[:, 1].repeat(2)
            indices.append((b, torch.zeros_like(b), gj, gi))  # image, anchor, grid y, grid x
        return indices

    def build_targets(self, p, targets, imgs):
        indices = self.find_3_positive(p, targets)
        batch_idx = 0
        this_target = targets[targets[:, 0] == batch_idx]
        txyxy = xywh2xyxy(this_target[:, 2:6] * imgs[batch_idx].shape[1])

        pxyxys = []
        from_which_layer = []
        all_b = []
        for i, pi in enumerate(p):
            b, a, gj, gi = indices[i]
            all_b.append(b)
            from_which_layer.append(torch.ones(size=(len(b),)) * i)  # no device=: the CPU

            fg_pred = pi[b, a, gj, gi]
            grid = torch.stack([gi, gj], dim=1)
            pxy = (fg_pred[:, :2].sigmoid() * 2.0 - 0.5 + grid) * self.stride[i]
            pwh = (fg_pred[:, 2:4].sigmoid() * 2) ** 2 * self.stride[i]
            pxyxys.append(xywh2xyxy(torch.cat([pxy, pwh], dim=-1)))

        pxyxys = torch.cat(pxyxys, dim=0)
        from_which_layer = torch.cat(from_which_layer, dim=0)
        all_b = torch.cat(all_b, dim=0)

        pair_wise_iou = box_iou(txyxy, pxyxys)
        pair_wise_iou_loss = -torch.log(pair_wise_iou + 1e-8)
        top_k, _ = torch.topk(pair_wise_iou, min(10, pair_wise_iou.shape[1]), dim=1)
        dynamic_ks = torch.clamp(top_k.sum(1).int(), min=1)
        cost = 3.0 * pair_wise_iou_loss  # + pair_wise_cls_loss

        matching_matrix = torch.zeros_like(cost)  # on the GPU, like cost
        for gt_idx in range(this_target.shape[0]):
            _, pos_idx = torch.topk(cost[gt_idx], k=dynamic_ks[gt_idx].item(), largest=False)
            matching_matrix[gt_idx][pos_idx] = 1.0
        anchor_matching_gt = matching_matrix.sum(0)
        if (anchor_matching_gt > 1).sum() > 0:
            _, cost_argmin = torch.min(cost[:, anchor_matching_gt > 1], dim=0)
            matching_matrix[:, anchor_matching_gt > 1] *= 0.0
            matching_matrix[cost_argmin, anchor_matching_gt > 1] = 1.0
        fg_mask_inboxes = matching_matrix.sum(0) > 0.0  # a CUDA bool mask
        matched_gt_inds = matching_matrix[:, fg_mask_inboxes].argmax(0)

        from_which_layer = from_which_layer[fg_mask_inboxes]  # a CPU tensor, CUDA indices
        all_b = all_b[fg_mask_inboxes]
        this_target = this_target[matched_gt_inds]
        matching_bs = [all_b[from_which_layer == i] for i in range(len(p))]
        matching_targets = [this_target[from_which_layer == i] for i in range(len(p))]
        return matching_bs, matching_targets


torch.manual_seed(0)
device = torch.device("cuda")  # train.py: device = select_device(opt.device)

imgs = torch.rand(1, 3, 64, 64, device=device)
p = [torch.randn(1, 1, 64 // s, 64 // s, 7, device=device) for s in (8, 16, 32)]  # model(imgs)
targets = torch.tensor([[0, 1, 0.30, 0.40, 0.20, 0.30], [0, 0, 0.70, 0.60, 0.30, 0.20]], device=device)
compute_loss_ota = ComputeLossOTA()
matching_bs, matching_targets = compute_loss_ota.build_targets(p, targets, imgs)
print([t.shape[0] for t in matching_targets])
