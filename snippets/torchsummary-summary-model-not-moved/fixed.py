"""torchsummary 1.5.1 `summary`, reduced, called the way the reporter of
sksq96/pytorch-summary#16 fixed it: `summary(model.to(device), ...)`, so the model is on the GPU
before `summary` feeds it a `torch.cuda.FloatTensor`.

Upstream: https://github.com/sksq96/pytorch-summary/issues/16.
"""

from collections import OrderedDict

import torch
from torch import nn


def summary(model, input_size, batch_size=-1, device="cuda"):
    """torchsummary/torchsummary.py (1.5.1), shrunk: the hooks record output shapes and sizes."""

    def register_hook(module):
        def hook(module, input, output):
            class_name = str(module.__class__).split(".")[-1].split("'")[0]
            m_key = f"{class_name}-{len(summary) + 1}"
            summary[m_key] = OrderedDict()
            summary[m_key]["output_shape"] = [batch_size, *list(output.size())[1:]]
            params = 0
            if hasattr(module, "weight") and hasattr(module.weight, "size"):
                params += torch.prod(torch.LongTensor(list(module.weight.size())))
            if hasattr(module, "bias") and hasattr(module.bias, "size"):
                params += torch.prod(torch.LongTensor(list(module.bias.size())))
            summary[m_key]["nb_params"] = params

        if not isinstance(module, nn.Sequential) and not isinstance(module, nn.ModuleList) and not (module == model):
            hooks.append(module.register_forward_hook(hook))

    device = device.lower()
    assert device in ["cuda", "cpu"], "Input device is not valid, please specify 'cuda' or 'cpu'"

    if device == "cuda" and torch.cuda.is_available():
        dtype = torch.cuda.FloatTensor
    else:
        dtype = torch.FloatTensor

    # multiple inputs to the network
    if isinstance(input_size, tuple):
        input_size = [input_size]

    # batch_size of 2 for batchnorm
    x = [torch.rand(2, *in_size).type(dtype) for in_size in input_size]

    summary = OrderedDict()
    hooks = []
    model.apply(register_hook)
    model(*x)  # make a forward pass
    for h in hooks:
        h.remove()

    for layer, info in summary.items():
        print("{:>20}  {:>25} {:>15}".format(layer, str(info["output_shape"]), f"{int(info['nb_params']):,}"))
    return summary


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(  # slideCNN-train.py's model, shrunk
    nn.Conv2d(3, 8, kernel_size=3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 14 * 7, 2)
)
layers = summary(model.to(device), (3, 30, 16))  # the reporter's fix in #16
