"""Each rule on small programs: the bug it is for, and the correct code next to it."""

from __future__ import annotations

import textwrap

import pytest

from samedevice.check import check_source

HEADER = "import torch\nfrom torch import nn\n"


def codes(src: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(HEADER + textwrap.dedent(src))]


FLAGGED = {
    "factory in forward meets the input": ("""
        class M(nn.Module):
            def forward(self, x):
                idx = torch.arange(x.shape[0])
                return x + idx
        """, [(6, "SD401")]),
    "plain tensor attribute read in forward": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(4)
            def forward(self, x):
                return x * self.scale
        """, [(7, "SD201")]),
    "modules in a plain list": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = [nn.Linear(4, 4) for _ in range(3)]
            def forward(self, x):
                return sum(h(x) for h in self.heads)
        """, [(7, "SD202")]),
    "modules appended to a plain list": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = []
                for _ in range(2):
                    self.blocks.append(nn.Linear(4, 4))
            def forward(self, x):
                return self.blocks[0](x)
        """, [(7, "SD202")]),
    "default state built on the CPU when the caller passes none": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(8, 4)
            def forward(self, x, states=None):
                if states is None:
                    h = torch.zeros(1, x.size(1), 4)
                    states = (h, h)
                return self.lstm(x, states)
        """, [(10, "SD401")]),
    "model never moved, its helper sends the input to cuda": ("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def prepare(self, x):
                return x.to("cuda")
            def infer(self, x):
                return self.fc(self.prepare(x))
        net = Net()
        net.eval()
        out = net.infer(torch.rand(2, 4))
        """, [(14, "SD303")]),
    "head replaced after the move": ("""
        model = nn.Sequential(nn.Linear(4, 4))
        model.to("cuda")
        model.head = nn.Linear(4, 2)
        """, [(6, "SD101")]),
    "optimizer state loaded before the move": ("""
        model = nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        opt.load_state_dict(torch.load("opt.pt"))
        model.cuda()
        """, [(6, "SD701")]),
    "cpu transfer bound to one operand": ("""
        def diff(layer, a, b):
            return layer.weight - (a @ b).cpu()
        """, [(5, "SD501")]),
    "batch target left behind": ("""
        def train(model, loader, criterion, device):
            for x, y in loader:
                x = x.to(device)
                loss = criterion(model(x), y)
        """, [(7, "SD301")]),
    "cpu generator with a device": ("""
        def sample(shape, generator, device):
            return torch.randn(shape, generator=generator, device=device)
        g = torch.Generator().manual_seed(0)
        sample((2,), g, "cuda")
        """, [(5, "SD902")]),
    "DataParallel on cuda:1": ("""
        net = nn.Linear(2, 2).to("cuda:1")
        net = nn.DataParallel(net)
        """, [(5, "SD801")]),
    "load without map_location where the device is known": ("""
        def build(path, device):
            model = nn.Linear(2, 2)
            model.load_state_dict(torch.load(path))
            return model.to(device)
        """, [(6, "SD1001")]),
}

CLEAN = {
    "factory with device=x.device": """
        class M(nn.Module):
            def forward(self, x):
                return x + torch.arange(x.shape[0], device=x.device)
        """,
    "zeros_like and new_zeros": """
        class M(nn.Module):
            def forward(self, x):
                return x + torch.zeros_like(x) + x.new_zeros(x.shape)
        """,
    "factory moved to the input's device afterwards": """
        class M(nn.Module):
            def forward(self, x):
                idx = torch.arange(x.shape[0]).to(x.device)
                return x + idx
        """,
    "0-dim factory meets the input": """
        class M(nn.Module):
            def forward(self, x):
                return x * torch.tensor(0.5)
        """,
    "registered buffer and parameter": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", torch.ones(4))
                self.bias = nn.Parameter(torch.zeros(4))
            def forward(self, x):
                return x * self.scale + self.bias
        """,
    "plain tensor never read outside __init__": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.init_value = torch.ones(4)
                self.weight = nn.Parameter(self.init_value.clone())
            def forward(self, x):
                return x * self.weight
        """,
    "ModuleList": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            def forward(self, x):
                return sum(h(x) for h in self.heads)
        """,
    "head replaced, then moved": """
        model = nn.Sequential(nn.Linear(4, 4))
        model.to("cuda")
        model.head = nn.Linear(4, 2)
        model.to("cuda")
        """,
    "stateless layer after the move": """
        model = nn.Sequential(nn.Linear(4, 4))
        model.to("cuda")
        model.act = nn.ReLU()
        """,
    "optimizer built before the move, nothing loaded": """
        model = nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.cuda()
        """,
    "the whole difference moved": """
        def diff(layer, a, b):
            return (layer.weight - a @ b).cpu()
        """,
    "both batch members moved in one branch": """
        def train(model, loader, criterion, device, use_cuda):
            for x, y in loader:
                if use_cuda:
                    x = x.to(device)
                    y = y.to(device)
                loss = criterion(model(x), y)
        """,
    "generator of the device, or drawn on the CPU": """
        def sample(shape, generator, device):
            return torch.randn(shape, generator=generator).to(device)
        g = torch.Generator().manual_seed(0)
        sample((2,), g, "cuda")
        """,
    "DataParallel with device_ids": """
        net = nn.Linear(2, 2).to("cuda:1")
        net = nn.DataParallel(net, device_ids=["cuda:1"])
        """,
    "load with map_location": """
        def build(path, device):
            model = nn.Linear(2, 2)
            model.load_state_dict(torch.load(path, map_location=device))
            return model.to(device)
        """,
    "builtins are not tensor ops (torch/_export/db/examples/tensor_setattr.py)": """
        class M(nn.Module):
            def forward(self, x, attr):
                setattr(x, attr, torch.randn(3, 2))
                return x + 4
        """,
    "type_as moves to the other tensor's device (transformers wav2vec2 rotary)": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("inv_freq", torch.ones(4))
            def forward(self, x):
                t = torch.arange(x.shape[1]).type_as(self.inv_freq)
                return t[:, None] * self.inv_freq
        """,
    "an empty placeholder argument (transformers wavlm)": """
        import torch.nn.functional as F
        class M(nn.Module):
            def forward(self, q, k, v):
                return F.multi_head_attention_forward(q, k, v, 4, 2, torch.empty([0]))
        """,
    "device hidden in **factory_kwargs (torch/_refs)": """
        def linspace(start, steps, device=None, dtype=None):
            factory_kwargs = {"device": device}
            out = torch.empty((steps,), dtype=dtype, **factory_kwargs)
            return torch.add(out, start)
        """,
    "pairs from zip are not one batch (timm ModelEmaV2)": """
        def update(self, model, update_fn):
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                model_v = model_v.to(device=self.device)
                ema_v.copy_(update_fn(ema_v, model_v))
        """,
    "a cache the class replaces itself (torch/_export/db/examples/model_attr_mutation.py)": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.attr_list = [torch.randn(3, 2)]
            def forward(self, x):
                self.attr_list = [torch.zeros(3, 2, device=x.device)]
                return x + self.attr_list[0]
        """,
    "a generator on a torch.device('cpu') (torch/quasirandom.py)": """
        def scramble(seed):
            g = torch.Generator()
            g.manual_seed(seed)
            cpu = torch.device("cpu")
            return torch.randint(2, (3, 4), device=cpu, generator=g)
        """,
    "a plain list turned into a ModuleList at the end (transformers LeViT)": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = []
                for _ in range(2):
                    self.layers.append(nn.Linear(4, 4))
                self.layers = nn.ModuleList(self.layers)
            def forward(self, x):
                return self.layers[0](x)
        """,
    "model moved where its helper sends the input": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def infer(self, x):
                return self.fc(x.to("cuda"))
        net = Net().to("cuda").eval()
        out = net.infer(torch.rand(2, 4))
        """,
    "lengths kept on the CPU for pack_padded_sequence": """
        model = nn.LSTM(8, 4).to("cuda")
        x = torch.randn(5, 3, 8, device="cuda")
        lengths = torch.tensor([5, 4, 2])
        out = model(x, lengths)
        """,
    "lengths sent to the CPU for pack_padded_sequence (what it requires)": """
        def encode(lstm, x, in_lens):
            packed = nn.utils.rnn.pack_padded_sequence(x.cuda(), in_lens.cpu(), batch_first=True)
            return lstm(packed)
        """,
    "a plain attribute moved at every use, through a chain": """
        class Prompted(nn.Module):
            def __init__(self):
                super().__init__()
                self.embedding = nn.Embedding(4, 8)
                self.prompt_tokens = {"default": torch.arange(4).long()}

            def forward(self, n):
                tokens = self.prompt_tokens["default"].unsqueeze(0).expand(n, -1).to(self.embedding.weight.device)
                return self.embedding(tokens)
        """,
    "load of a file this program saved": """
        def roundtrip(model, device):
            torch.save(model.state_dict(), "ckpt.pt")
            model.load_state_dict(torch.load("ckpt.pt"))
        """,
}


@pytest.mark.parametrize("name", FLAGGED)
def test_flagged(name):
    src, expected = FLAGGED[name]
    assert codes(src) == expected


@pytest.mark.parametrize("name", CLEAN)
def test_clean(name):
    assert codes(CLEAN[name]) == []


def test_noqa_silences_one_code_or_all():
    src = HEADER + textwrap.dedent("""
        class M(nn.Module):
            def forward(self, x):
                a = torch.arange(3)  # noqa: SD401
                b = torch.arange(3)  # noqa
                c = torch.arange(3)  # noqa: SD201
                return (x + a, x + b, x + c)
        """)
    assert [(f.line, f.code) for f in check_source(src)] == [(8, "SD401")]


def test_syntax_error_is_a_finding_not_an_exception():
    [f] = check_source("def f(:\n", "bad.py")
    assert (f.path, f.line, f.code) == ("bad.py", 1, "SD000")
    assert f.message.startswith("cannot parse:")
