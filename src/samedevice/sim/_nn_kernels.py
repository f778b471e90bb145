"""Kernels that CUDA has and the CPU lacks, or whose checks live in device-specific code.

* Convolution: ATen's composite ``convolution`` would send a PrivateUse1 input to
  ``convolution_overrideable`` (not implemented). CUDA's ``_convolution`` checks that input,
  weight and bias have the same type once it picked a backend from the *input's* device:
  cuDNN for an accelerator input (plain message), MKLDNN for a float CPU input (the message
  with "or input should be a MKLDNN tensor ..."). The kernel re-enacts that and computes on
  the CPU.
* RNN cells: for non-CPU inputs ATen's LSTM/GRU layers call the fused cell kernels
  ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` that exist only for CUDA. They are
  written here with the CUDA kernels' formulas (aten/src/ATen/native/cuda/RNN.cu), including
  the workspaces their backward kernels read. ATen's own ``check_device`` runs before them,
  so a CPU hidden state still raises PyTorch's genuine "Input and hidden tensors are not at
  the same device" message.
* Packed-sequence RNNs: on CUDA, ``lstm.data`` / ``gru.data`` / ``rnn_*.data`` go to cuDNN's
  ``_cudnn_rnn``, which first calls ``check_attributes`` (aten/src/ATen/native/RNN.h) and so
  names a CPU hidden state ("Input and hidden tensors are not at the same device"). ATen's
  generic packed path has no such check and would fail later, in a matmul, with another text.
  The kernels below re-enact cuDNN's check, then run the composite implementation.
* ``scaled_dot_product_attention``: ATen picks a kernel through a per-device stub that a Python
  backend cannot fill, so a PrivateUse1 input always takes the math path while the same program
  on the CPU takes the CPU flash kernel -- results differ in the last bits and an optimizer
  amplifies that. The kernel here asks the CPU which kernel it would choose and calls that one
  (``_scaled_dot_product_flash_attention_for_cpu`` has its own backward), so a simulated run
  equals the CPU run bit for bit. It sits at ``AutogradPrivateUse1``, in front of the composite.
  A mask on another device takes the math path (CUDA's fallback), whose TensorIterator rejects
  it. Which message CUDA prints for that depends on the kernel the GPU picks (math:
  ``found at least two devices``; memory-efficient or cuDNN: their generated check naming
  ``attn_bias``), so the simulator gives the math path's.
* ``_pin_memory``: pinning asks the accelerator's hooks for a pinned allocator; on a CPU-only
  machine ordinary memory is what a copy gets anyway.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any

import torch

from . import _kernel
from ._naming import device_text, type_text
from ._plumbing import from_cpu, is_sim, to_cpu

aten = torch.ops.aten


def _cpu(t: Any) -> Any:
    return to_cpu(t) if isinstance(t, torch.Tensor) and is_sim(t) else t


def _same_type(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.dtype == b.dtype


def _check_conv_types(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    __tracebackhide__ = True
    mkldnn = not is_sim(input) and input.dtype in (torch.float32, torch.bfloat16)
    for name, other in (("weight", weight), ("bias", bias)):
        if other is None or _same_type(input, other):
            continue
        suffix = (
            f" or input should be a MKLDNN tensor and {name} is a dense tensor" if mkldnn else ""
        )
        raise RuntimeError(
            f"Input type ({type_text(input)}) and {name} type ({type_text(other)}) "
            f"should be the same{suffix}"
        )


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    __tracebackhide__ = True
    _check_conv_types(input, weight, bias)
    out = aten.convolution.default(
        _cpu(input), _cpu(weight), _cpu(bias), stride, padding, dilation, transposed,
        output_padding, groups,
    )
    return from_cpu(out, input.get_device())


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    __tracebackhide__ = True
    index = grad_output.get_device()
    grads = aten.convolution_backward.default(
        _cpu(grad_output), _cpu(input), _cpu(weight), bias_sizes, stride, padding, dilation,
        transposed, output_padding, groups, output_mask,
    )
    return tuple(from_cpu(g, index) if isinstance(g, torch.Tensor) else g for g in grads)


# -- RNN cells ---------------------------------------------------------------------------------


def _gate_sum(gates: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return gates if bias is None else gates + bias


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    index = input_gates.get_device()
    ig, hg, c = _cpu(input_gates), _cpu(hidden_gates), _cpu(cx)
    gates = _gate_sum(ig, _cpu(input_bias)) + _gate_sum(hg, _cpu(hidden_bias))
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * c + i * g
    hy = o * cy.tanh()
    workspace = torch.cat([i, f, g, o], 1)
    return from_cpu(hy, index), from_cpu(cy, index), from_cpu(workspace, index)


def fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    index = workspace.get_device()
    ws, c, c_new = _cpu(workspace), _cpu(cx), _cpu(cy)
    i, f, g, o = ws.chunk(4, 1)
    ghy = _cpu(grad_hy) if grad_hy is not None else torch.zeros_like(c_new)
    tanh_cy = c_new.tanh()
    g_o = ghy * tanh_cy * o * (1 - o)
    g_c = ghy * o * (1 - tanh_cy * tanh_cy)
    if grad_cy is not None:
        g_c = g_c + _cpu(grad_cy)
    g_i = g_c * g * i * (1 - i)
    g_f = g_c * c * f * (1 - f)
    g_g = g_c * i * (1 - g * g)
    grad_gates = torch.cat([g_i, g_f, g_g, g_o], 1)
    grad_cx = g_c * f
    grad_bias = grad_gates.sum(0) if has_bias else None
    return (
        from_cpu(grad_gates, index),
        from_cpu(grad_cx, index),
        from_cpu(grad_bias, index) if grad_bias is not None else None,
    )


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    index = input_gates.get_device()
    ig = _gate_sum(_cpu(input_gates), _cpu(input_bias))
    hg = _gate_sum(_cpu(hidden_gates), _cpu(hidden_bias))
    h = _cpu(hx)
    ir, ii, in_ = ig.chunk(3, 1)
    hr, hi, hn = hg.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (h - n)
    workspace = torch.cat([r, z, n, hn, h], 1)
    return from_cpu(hy, index), from_cpu(workspace, index)


def fused_gru_cell_backward(grad_hy, workspace, has_bias):
    index = workspace.get_device()
    r, z, n, hn, h = _cpu(workspace).chunk(5, 1)
    go = _cpu(grad_hy)
    g_z = go * (h - n) * z * (1 - z)
    g_h = go * z
    g_n = go * (1 - z) * (1 - n * n)
    g_hn = g_n * r
    g_r = g_n * hn * r * (1 - r)
    grad_input_gates = torch.cat([g_r, g_z, g_n], 1)
    grad_hidden_gates = torch.cat([g_r, g_z, g_hn], 1)
    outs = [grad_input_gates, grad_hidden_gates, g_h]
    if has_bias:
        outs += [grad_input_gates.sum(0), grad_hidden_gates.sum(0)]
        return tuple(from_cpu(x, index) for x in outs)
    return (*(from_cpu(x, index) for x in outs), None, None)


# -- attention ---------------------------------------------------------------------------------

_SDP_FLASH = 1  # sdp::SDPBackend::flash_attention


def _bool_mask_to_additive(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """``convert_boolean_attn_mask`` (aten/src/ATen/native/transformers/attention.cpp)."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    with torch._C._ExcludeDispatchKeyGuard(_AUTOGRAD_SIM):
        return torch.where(
            mask.logical_not(), -float("inf"), torch.scalar_tensor(0.0, dtype=dtype, device=mask.device)
        )


_AUTOGRAD_SIM = torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradPrivateUse1)


def _traced(t: torch.Tensor) -> bool:
    """A tensor of ``torch.compile``'s tracing (FakeTensor, FunctionalTensor): no data."""
    return type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter


def _cpu_like(t: Any) -> Any:
    """A CPU tensor with ``t``'s sizes, strides, dtype and requires_grad, for asking the CPU which
    kernel it would pick. A real sim tensor lends its memory; a traced one has none, and gets
    untouched memory of its size, which the operating system only reserves."""
    if not isinstance(t, torch.Tensor) or not is_sim(t):
        return t
    if not _traced(t):
        return to_cpu(t)
    with torch.utils._python_dispatch._disable_current_modes():
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, requires_grad=t.requires_grad)


def _real_tensors(t: torch.Tensor) -> Any:
    """Outside the tracing modes while asking the CPU about :func:`_cpu_like` tensors."""
    if _traced(t):
        return torch.utils._python_dispatch._disable_current_modes()
    return contextlib.nullcontext()


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    __tracebackhide__ = True
    qkv = (query, key, value)
    if query.device != key.device or query.device != value.device:
        from ._naming import device_text

        raise RuntimeError(
            "Expected query, key, and value to have the same device type, but got query.device: "
            f"{device_text(query.device)} key.device: {device_text(key.device)} and value.device: "
            f"{device_text(value.device)} instead."
        )
    cpu = tuple(_cpu_like(t) for t in qkv)
    cpu_mask = _cpu_like(attn_mask)
    with _real_tensors(query):
        choice = torch._fused_sdp_choice(*cpu, cpu_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    mask_here = attn_mask is None or attn_mask.device == query.device
    if choice == _SDP_FLASH and is_sim(query) and mask_here:
        mask = _bool_mask_to_additive(attn_mask, query.dtype)
        if query.dim() == 3:
            # PyTorch >= 2.14 also picks the flash kernel for unbatched (3-D) inputs on the CPU
            # and runs them as a batch of one; the kernel itself takes only 4-D inputs
            q4, k4, v4 = (t.unsqueeze(0) for t in qkv)
            m4 = mask.unsqueeze(0) if mask is not None and mask.dim() == 3 else mask
            return aten._scaled_dot_product_flash_attention_for_cpu(
                q4, k4, v4, dropout_p, is_causal, attn_mask=m4, scale=scale)[0].squeeze(0)
        return aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, attn_mask=mask, scale=scale)[0]
    if query.dtype != key.dtype or query.dtype != value.dtype or min(t.dim() for t in qkv) < 2:
        # validate_sdpa_input's other checks: the CPU raises the same text
        with _real_tensors(query):
            aten.scaled_dot_product_attention.default(*cpu, cpu_mask, dropout_p, is_causal,
                                                      scale=scale, enable_gqa=enable_gqa)
    mask = _bool_mask_to_additive(attn_mask, query.dtype)
    return aten._scaled_dot_product_attention_math(
        query, key, value, mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)[0]


_PINNED: set[int] = set()  # data pointers of CPU storages made by pin_memory(), while alive


def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    """A copy in ordinary memory that ``is_pinned()`` reports as pinned (page-locking would buy
    nothing: the simulated GPU reads host memory anyway)."""
    out = self.clone()
    storage = out.untyped_storage()
    ptr = storage.data_ptr()
    if ptr:
        _PINNED.add(ptr)
        weakref.finalize(storage, _PINNED.discard, ptr)
    return out


def is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    return self.untyped_storage().data_ptr() in _PINNED


def record_stream(self: torch.Tensor, stream: Any) -> None:
    """Nothing to protect: a simulated kernel has finished when its call returns."""


def _check_rnn_attributes(input: torch.Tensor, hiddens: Any, params: Any) -> None:
    """``check_attributes`` in aten/src/ATen/native/RNN.h: hidden states first, then weights."""
    __tracebackhide__ = True
    for name, tensors in (("hidden", hiddens), ("parameter", params)):
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device != input.device:
                raise RuntimeError(
                    f"Input and {name} tensors are not at the same device, found input tensor at "
                    f"{device_text(input.device)} and {name} tensor at {device_text(t.device)}"
                )


def _packed_rnn(op: Any, hidden_is_list: bool) -> Any:
    """A packed RNN as CUDA runs it: cuDNN (and its check) for a floating accelerator input."""

    def kernel(data: torch.Tensor, batch_sizes: torch.Tensor, hx: Any, params: Any, *rest: Any) -> Any:
        __tracebackhide__ = True
        if is_sim(data) and data.is_floating_point():
            _check_rnn_attributes(data, hx if hidden_is_list else [hx], params)
        return op.decompose(data, batch_sizes, hx, params, *rest)

    return kernel


KERNELS = {
    ("convolution", "PrivateUse1"): convolution,
    ("convolution_backward", "PrivateUse1"): convolution_backward,
    ("_thnn_fused_lstm_cell", "PrivateUse1"): fused_lstm_cell,
    ("_thnn_fused_lstm_cell_backward_impl", "PrivateUse1"): fused_lstm_cell_backward_impl,
    ("_thnn_fused_gru_cell", "PrivateUse1"): fused_gru_cell,
    ("_thnn_fused_gru_cell_backward", "PrivateUse1"): fused_gru_cell_backward,
    ("_pin_memory", "CPU"): pin_memory,
    # Composite ops: AutogradPrivateUse1 is the key that runs before their decomposition.
    ("lstm.data", "AutogradPrivateUse1"): _packed_rnn(aten.lstm.data, hidden_is_list=True),
    ("gru.data", "AutogradPrivateUse1"): _packed_rnn(aten.gru.data, hidden_is_list=False),
    ("rnn_tanh.data", "AutogradPrivateUse1"): _packed_rnn(aten.rnn_tanh.data, hidden_is_list=False),
    ("rnn_relu.data", "AutogradPrivateUse1"): _packed_rnn(aten.rnn_relu.data, hidden_is_list=False),
    ("is_pinned", "CPU"): is_pinned,
    ("record_stream", "PrivateUse1"): record_stream,
    ("scaled_dot_product_attention", "AutogradPrivateUse1"): scaled_dot_product_attention,
}


def install(aten_lib: torch.library.Library) -> None:
    with warnings.catch_warnings():
        # "Overriding a previously registered kernel": functorch and the CPU build register
        # kernels for some of these keys; replacing them is the point.
        warnings.simplefilter("ignore", UserWarning)
        for (name, key), fn in KERNELS.items():
            aten_lib.m.impl(name, key, _kernel.hermetic(fn), False)
