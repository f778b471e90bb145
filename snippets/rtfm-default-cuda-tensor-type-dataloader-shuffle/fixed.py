"""RTFM (`main.py`, `train.py`, `model.py`, `dataset.py`), reduced, as fixed by PR #74 ("remove
default cuda tensor"): the default is the CPU again, so the loaders' `RandomSampler` draws its
permutation on the CPU with its CPU generator; the model is moved with `model.to(device)`, the
batch with `.to(device)`, and the two tensors `forward` creates from scratch get
`device=inputs.device`.

Upstream: https://github.com/tianyu0207/RTFM/issues/47 (the report) and
https://github.com/tianyu0207/RTFM/pull/74 ("remove default cuda tensor", the fix).
"""

from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data as data
from torch.utils.data import DataLoader

torch.set_default_device("cpu")  # RTFM PR #74: torch.set_default_tensor_type('torch.FloatTensor')


class Dataset(data.Dataset):
    """dataset.py, with random I3D features in place of the .npy files of the list."""

    def __init__(self, args, is_normal=True, test_mode=False):
        self.is_normal = is_normal
        self.test_mode = test_mode
        rng = np.random.default_rng(0 if is_normal else 1)
        scale = 1.0 if is_normal else 2.0
        self.list = rng.normal(0.0, scale, size=(8, 10, 32, args.feature_size)).astype(np.float32)

    def __getitem__(self, index):
        label = self.get_label()  # get video level label 0/1
        features = np.array(self.list[index], dtype=np.float32)  # np.load(self.list[index])
        if self.test_mode:
            return features
        return features, label  # [10 crops, 32 segments, F]

    def get_label(self):
        if self.is_normal:
            label = torch.tensor(0.0)
        else:
            label = torch.tensor(1.0)
        return label

    def __len__(self):
        return len(self.list)


class Aggregate(nn.Module):
    """model.py's multi-scale temporal network, reduced to one convolution and the residual."""

    def __init__(self, len_feature):
        super().__init__()
        self.conv_1 = nn.Sequential(nn.Conv1d(len_feature, len_feature, kernel_size=3, padding=1), nn.ReLU())

    def forward(self, x):
        out = x.permute(0, 2, 1)  # x: (B, T, F)
        residual = out
        out = self.conv_1(out)
        out = out + residual
        return out.permute(0, 2, 1)


class Model(nn.Module):
    """model.py: feature magnitudes pick the top-k snippets of each bag."""

    def __init__(self, n_features, batch_size):
        super().__init__()
        self.batch_size = batch_size
        self.num_segments = 32
        self.k_abn = self.num_segments // 10
        self.k_nor = self.num_segments // 10

        self.Aggregate = Aggregate(len_feature=n_features)
        self.fc1 = nn.Linear(n_features, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 1)
        self.drop_out = nn.Dropout(0.7)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def forward(self, inputs):
        k_abn = self.k_abn
        k_nor = self.k_nor

        out = inputs
        bs, ncrops, t, f = out.size()
        out = out.view(-1, t, f)
        out = self.Aggregate(out)
        out = self.drop_out(out)

        features = out
        scores = self.relu(self.fc1(features))
        scores = self.drop_out(scores)
        scores = self.relu(self.fc2(scores))
        scores = self.drop_out(scores)
        scores = self.sigmoid(self.fc3(scores))
        scores = scores.view(bs, ncrops, -1).mean(1)
        scores = scores.unsqueeze(dim=2)

        normal_features = features[0:self.batch_size * 10]
        normal_scores = scores[0:self.batch_size]
        abnormal_features = features[self.batch_size * 10:]
        abnormal_scores = scores[self.batch_size:]

        feat_magnitudes = torch.norm(features, p=2, dim=2)
        feat_magnitudes = feat_magnitudes.view(bs, ncrops, -1).mean(1)
        nfea_magnitudes = feat_magnitudes[0:self.batch_size]  # normal feature magnitudes
        afea_magnitudes = feat_magnitudes[self.batch_size:]  # abnormal feature magnitudes
        n_size = nfea_magnitudes.shape[0]

        select_idx = torch.ones_like(nfea_magnitudes)
        select_idx = self.drop_out(select_idx)

        #######  process abnormal videos -> select top3 feature magnitude  #######
        afea_magnitudes_drop = afea_magnitudes * select_idx
        idx_abn = torch.topk(afea_magnitudes_drop, k_abn, dim=1)[1]
        idx_abn_feat = idx_abn.unsqueeze(2).expand([-1, -1, abnormal_features.shape[2]])
        abnormal_features = abnormal_features.view(n_size, ncrops, t, f)
        abnormal_features = abnormal_features.permute(1, 0, 2, 3)

        total_select_abn_feature = torch.zeros(0, device=inputs.device)
        for abnormal_feature in abnormal_features:
            feat_select_abn = torch.gather(abnormal_feature, 1, idx_abn_feat)
            total_select_abn_feature = torch.cat((total_select_abn_feature, feat_select_abn))

        idx_abn_score = idx_abn.unsqueeze(2).expand([-1, -1, abnormal_scores.shape[2]])
        score_abnormal = torch.mean(torch.gather(abnormal_scores, 1, idx_abn_score), dim=1)

        ####### process normal videos -> select top3 feature magnitude #######
        select_idx_normal = torch.ones_like(nfea_magnitudes)
        select_idx_normal = self.drop_out(select_idx_normal)
        nfea_magnitudes_drop = nfea_magnitudes * select_idx_normal
        idx_normal = torch.topk(nfea_magnitudes_drop, k_nor, dim=1)[1]
        idx_normal_feat = idx_normal.unsqueeze(2).expand([-1, -1, normal_features.shape[2]])
        normal_features = normal_features.view(n_size, ncrops, t, f)
        normal_features = normal_features.permute(1, 0, 2, 3)

        total_select_nor_feature = torch.zeros(0, device=inputs.device)
        for nor_fea in normal_features:
            feat_select_normal = torch.gather(nor_fea, 1, idx_normal_feat)
            total_select_nor_feature = torch.cat((total_select_nor_feature, feat_select_normal))

        idx_normal_score = idx_normal.unsqueeze(2).expand([-1, -1, normal_scores.shape[2]])
        score_normal = torch.mean(torch.gather(normal_scores, 1, idx_normal_score), dim=1)

        return score_abnormal, score_normal, total_select_abn_feature, total_select_nor_feature, scores


def sparsity(arr, batch_size, lamda2):
    loss = torch.mean(torch.norm(arr, dim=0))
    return lamda2 * loss


def smooth(arr, lamda1):
    arr2 = torch.zeros_like(arr)
    arr2[:-1] = arr[1:]
    arr2[-1] = arr[-1]
    loss = torch.sum((arr2 - arr) ** 2)
    return lamda1 * loss


class RTFM_loss(torch.nn.Module):
    """train.py"""

    def __init__(self, alpha, margin):
        super().__init__()
        self.alpha = alpha
        self.margin = margin
        self.criterion = torch.nn.BCELoss()

    def forward(self, score_normal, score_abnormal, nlabel, alabel, feat_n, feat_a):
        label = torch.cat((nlabel, alabel), 0)
        score = torch.cat((score_normal, score_abnormal), 0)
        score = score.squeeze()
        label = label.cuda()
        loss_cls = self.criterion(score, label)  # BCE loss in the score space
        loss_abn = torch.abs(self.margin - torch.norm(torch.mean(feat_a, dim=1), p=2, dim=1))
        loss_nor = torch.norm(torch.mean(feat_n, dim=1), p=2, dim=1)
        loss_rtfm = torch.mean((loss_abn + loss_nor) ** 2)
        return loss_cls + self.alpha * loss_rtfm


def train(nloader, aloader, model, batch_size, optimizer, device):
    """train.py, without the visdom plots."""
    with torch.set_grad_enabled(True):
        model.train()
        ninput, nlabel = next(nloader)
        ainput, alabel = next(aloader)
        input = torch.cat((ninput, ainput), 0).to(device)

        score_abnormal, score_normal, feat_select_abn, feat_select_normal, scores = model(input)
        scores = scores.view(batch_size * 32 * 2, -1)
        scores = scores.squeeze()
        abn_scores = scores[batch_size * 32:]

        nlabel = nlabel[0:batch_size]
        alabel = alabel[0:batch_size]

        loss_criterion = RTFM_loss(0.0001, 100)
        loss_sparse = sparsity(abn_scores, batch_size, 8e-3)
        loss_smooth = smooth(abn_scores, 8e-4)
        cost = loss_criterion(score_normal, score_abnormal, nlabel, alabel, feat_select_normal,
                              feat_select_abn) + loss_smooth + loss_sparse
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        return cost


# main.py
torch.manual_seed(0)
args = SimpleNamespace(feature_size=16, batch_size=4, lr="[0.001]*15000", max_epoch=3)  # option.py, shrunk
lr = eval(args.lr)  # config.py

train_nloader = DataLoader(Dataset(args, test_mode=False, is_normal=True),
                           batch_size=args.batch_size, shuffle=True,
                           num_workers=0, pin_memory=False, drop_last=True)
train_aloader = DataLoader(Dataset(args, test_mode=False, is_normal=False),
                           batch_size=args.batch_size, shuffle=True,
                           num_workers=0, pin_memory=False, drop_last=True)

model = Model(args.feature_size, args.batch_size)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
model = model.to(device)
optimizer = optim.Adam(model.parameters(), lr=lr[0], weight_decay=0.005)

costs = []
for step in range(1, args.max_epoch + 1):
    if (step - 1) % len(train_nloader) == 0:
        loadern_iter = iter(train_nloader)
    if (step - 1) % len(train_aloader) == 0:
        loadera_iter = iter(train_aloader)
    cost = train(loadern_iter, loadera_iter, model, args.batch_size, optimizer, device)
    costs.append(cost.item())
    print(f"step {step}: cost {cost.item():.4f}")
