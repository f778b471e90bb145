"""PyCIL `BEEFISONet.forward` (utils/inc_net.py), reduced and fixed: the zeros that pad the old
classifier weights are created on the device of those weights, not with `.cuda()` (which means
the current CUDA device, cuda:0, wherever the network is).

Upstream: https://github.com/LAMDA-CL/PyCIL/issues/60 ("When i run codes on GPU1, it seems
that .cuda() will put data on default GPU and then bugs occurred."). The backward prototypes
and bias layers that BEEF-ISO also merges into the classifier are left out here.
"""

import torch
from torch import nn


class BEEFISONet(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.out_dim = out_dim  # features per backbone
        self.convnets = nn.ModuleList()
        self.old_fc = None
        self.new_fc = None
        self.task_sizes = []
        self.in_dim = in_dim

    @property
    def feature_dim(self):
        return self.out_dim * len(self.convnets)

    def add_task(self, new_task_size):
        """update_fc_before + update_fc_after, reduced: one more backbone, one more head."""
        if self.new_fc is not None:
            self.old_fc = nn.Linear(self.feature_dim, sum(self.task_sizes))
        self.convnets.append(nn.Sequential(nn.Linear(self.in_dim, self.out_dim), nn.ReLU()))
        self.new_fc = nn.Linear(self.out_dim, new_task_size)
        self.task_sizes.append(new_task_size)

    def forward(self, x):
        features = torch.cat([convnet(x) for convnet in self.convnets], 1)
        if self.old_fc is None:
            return self.new_fc(features)
        new_task_size = self.task_sizes[-1]
        # merge the weights: old classes see the old features only
        fc_weight = torch.cat([self.old_fc.weight,
                               self.old_fc.weight.new_zeros((new_task_size, self.feature_dim - self.out_dim))], dim=0)
        fc_weight = torch.cat([fc_weight, torch.cat([torch.zeros(sum(self.task_sizes[:-1]), self.out_dim,
                                                                 device=x.device),
                                                     self.new_fc.weight])], dim=1)
        fc_bias = torch.cat([self.old_fc.bias, self.new_fc.bias])
        return features @ fc_weight.permute(1, 0) + fc_bias


torch.manual_seed(0)
device = torch.device("cuda:1")  # PyCIL's _set_device for a config with "device": ["1"]
net = BEEFISONet(in_dim=16, out_dim=8)
net.add_task(2)  # task 0: classes 0-1
net.add_task(2)  # task 1: classes 2-3, the classifier is merged in forward
net.to(device)

x = torch.randn(4, 16).to(device)
logits = net(x)
print(logits.sum())
