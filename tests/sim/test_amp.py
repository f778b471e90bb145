"""AMP under the "cuda" alias: autocast casts per CUDA's op lists; GradScaler works as on CUDA.

Expectations are computed on the CPU with the casts CUDA's autocast makes written out by hand.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from samedevice.sim import _autocast_policy

LOW = (torch.float16, torch.bfloat16)


def test_policies_come_from_the_wheels_autocast_header():
    policies = _autocast_policy.parse_policies(_autocast_policy.header_path().read_text())
    assert policies["mm"] == policies["linear"] == policies["conv2d"] == _autocast_policy.LOWER
    assert policies["scaled_dot_product_attention"] == _autocast_policy.LOWER
    assert policies["layer_norm"] == policies["mse_loss"] == policies["pow.Tensor_Scalar"] == _autocast_policy.FP32
    assert policies["softmax.int"] == policies["sum.dim_IntList"] == _autocast_policy.FP32_SET_OPT_DTYPE
    assert policies["addcmul"] == policies["index_put"] == _autocast_policy.PROMOTE
    assert policies["binary_cross_entropy"] == _autocast_policy.BANNED
    assert len(policies) > 100


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_autocast_output_dtypes_and_values(cuda, dtype):
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(4, 8, generator=g), torch.randn(3, 8, generator=g), torch.randn(3, generator=g)
    img, k = torch.randn(2, 3, 6, 6, generator=g), torch.randn(4, 3, 3, 3, generator=g)
    t = torch.tensor([0, 1, 2, 0])
    xs, ws, bs, imgs, ks, ts = (v.to(cuda) for v in (x, w, b, img, k, t))
    with torch.autocast("cuda", dtype=dtype):
        y = F.linear(xs, ws, bs)
        got = {
            "linear": y, "matmul": xs @ ws.t(), "conv2d": F.conv2d(imgs, ks),
            "softmax": y.softmax(-1), "log_softmax": F.log_softmax(y, -1),
            "layer_norm": F.layer_norm(y, (3,)), "cross_entropy": F.cross_entropy(y, ts),
            "relu": y.relu(), "sum": y.sum(), "exp": y.exp(), "addcmul": torch.addcmul(xs, xs.to(dtype), xs),
        }
    yl = F.linear(x.to(dtype), w.to(dtype), b.to(dtype))
    want = {
        "linear": yl, "matmul": x.to(dtype) @ w.t().to(dtype), "conv2d": F.conv2d(img.to(dtype), k.to(dtype)),
        "softmax": yl.float().softmax(-1), "log_softmax": F.log_softmax(yl.float(), -1),
        "layer_norm": F.layer_norm(yl.float(), (3,)), # cross_entropy asks log_softmax for the input's own dtype (explicit: kept), then
        # nll_loss runs in float32
        "cross_entropy": F.nll_loss(F.log_softmax(yl, -1, dtype=dtype).float(), t),
        "relu": yl.relu(), "sum": yl.sum(dtype=torch.float32), "exp": yl.float().exp(),
        "addcmul": torch.addcmul(x, x.to(dtype).float(), x),
    }
    for name, value in want.items():
        assert got[name].dtype == value.dtype, name
        assert got[name].device == torch.device("cuda", 0), name
        torch.testing.assert_close(got[name].cpu(), value, msg=name)
    assert F.linear(xs, ws).dtype == torch.float32  # outside the block: no casts


def test_autocast_without_a_dtype_uses_cudas_default(cuda):
    x = torch.randn(2, 2, device=cuda)
    with torch.autocast("cuda"):
        assert (x @ x).dtype == torch.float16
        with torch.autocast("cuda", enabled=False):
            assert (x @ x).dtype == torch.float32


def test_binary_cross_entropy_is_banned_as_on_cuda(cuda):
    p = torch.rand(3, device=cuda)
    with torch.autocast("cuda"), pytest.raises(RuntimeError) as info:
        F.binary_cross_entropy(p, p)
    assert str(info.value).startswith(
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n")


def _scaler(device: str, monkeypatch: pytest.MonkeyPatch) -> torch.amp.GradScaler:
    # GradScaler("cuda") disables itself unless torch.cuda.is_available() (the simulated CUDA
    # machine answers True; here it is said for the constructor only).
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**16, growth_interval=2)
    monkeypatch.undo()
    assert scaler.is_enabled()
    return scaler


def _amp_loop(device: torch.device, scaler: torch.amp.GradScaler, autocast: bool):
    torch.manual_seed(0)
    model = nn.Linear(8, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, t = torch.randn(4, 8).to(device), torch.tensor([0, 1, 2, 0]).to(device)
    scales = []
    for step in range(5):
        opt.zero_grad()
        if autocast:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x), t)
        else:  # the casts CUDA's autocast makes, by hand
            out = F.linear(x.half(), model.weight.half(), model.bias.half())
            loss = F.nll_loss(F.log_softmax(out, -1, dtype=out.dtype).float(), t)
        if step == 2:
            loss = loss * float("inf")  # an overflow: the step is skipped, the scale backs off
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, [p.detach().cpu() for p in model.parameters()]


def test_grad_scaler_scales_skips_and_updates_as_on_cuda(cuda, monkeypatch):
    scales, params = _amp_loop(cuda, _scaler("cuda", monkeypatch), autocast=True)
    want_scales, want_params = _amp_loop(torch.device("cpu"), _scaler("cpu", monkeypatch), autocast=False)
    assert scales == want_scales == [2.0**16, 2.0**17, 2.0**16, 2.0**16, 2.0**17]
    for got, want in zip(params, want_params, strict=True):
        torch.testing.assert_close(got, want)
