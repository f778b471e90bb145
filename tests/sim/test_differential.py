"""Differential test: the simulated accelerator against the CPU over 160+ operators.

For every operator, Hypothesis draws shapes and dtypes; the result on the simulated device
must equal the CPU result. Then one operand is moved to the CPU, and the simulator must raise
exactly when CUDA does. The expected behaviour of each operator is written down here by hand
from PyTorch's CUDA code (its category below), independently of the yaml the simulator reads:

* ``ITER``   -- TensorIterator op: a CPU operand raises ``found at least two devices``, except a
                0-dim CPU operand, which is read as a scalar;
* ``EXACT``  -- generated device check: any CPU operand raises ``got <arg> is on cpu``;
* ``FREE``   -- CUDA accepts the CPU operand (copies, CPU indices into accelerator tensors).
* ``KERNEL`` -- the CUDA kernel checks devices itself before any TensorIterator and raises its
                own text (``message``, with ``{dev}`` for the accelerator), e.g.
                ``masked_fill__cuda``; some of these reject a 0-dim CPU operand too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samedevice.testing import expect_device_error

ITER, EXACT, FREE, KERNEL = "iter", "exact", "free", "kernel"
F32, F64, I64 = torch.float32, torch.float64, torch.int64


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[..., object]
    make: Callable[[tuple[int, ...], torch.dtype, torch.Generator], list[torch.Tensor]]
    dtypes: tuple[torch.dtype, ...] = (F32, F64)
    category: str = ITER
    argument: str = ""  # EXACT ops: the argument CUDA names when the *last* operand is on the CPU
    mix: int = -1  # which operand goes to the CPU in the mixing check
    scalar_ok: bool = True  # ITER ops: does a 0-dim CPU operand get through? (False where the
    # Python wrapper broadcasts first: the expanded CPU view is no longer 0-dim)
    message: str = ""  # KERNEL ops: CUDA's text when the mixed operand is on the CPU
    scalar_rejected: bool = False  # a 0-dim CPU operand is rejected too (the kernel checks first)


def rand(shape, dtype, g, low=-2.0, high=2.0):
    if dtype.is_floating_point:
        return torch.rand(shape, generator=g, dtype=dtype) * (high - low) + low
    return torch.randint(int(low) if low >= 0 else 0, max(int(high), 1) + 3, shape, generator=g, dtype=dtype)


def one(shape, dtype, g):
    return [rand(shape, dtype, g)]


def pos(shape, dtype, g):
    return [rand(shape, dtype, g, 0.1, 3.0)]


def unit(shape, dtype, g):
    return [rand(shape, dtype, g, -0.9, 0.9)]


def two(shape, dtype, g):
    return [rand(shape, dtype, g), rand(shape, dtype, g)]


def two_pos(shape, dtype, g):
    return [rand(shape, dtype, g, 0.5, 3.0), rand(shape, dtype, g, 0.5, 3.0)]


def three(shape, dtype, g):
    return [rand(shape, dtype, g), rand(shape, dtype, g), rand(shape, dtype, g, 0.5, 2.0)]


def mats(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), rand((3, 2), dtype, g)]


def addmm_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 2), dtype, g), rand((n, 3), dtype, g), rand((3, 2), dtype, g)]


def bmm_in(shape, dtype, g):
    n = shape[0]
    return [rand((2, n, 3), dtype, g), rand((2, 3, 4), dtype, g)]


def vecs(shape, dtype, g):
    n = shape[0]
    return [rand((n,), dtype, g), rand((n,), dtype, g)]


def mat_vec(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), rand((3,), dtype, g)]


def index_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), torch.randint(0, n, (4,), generator=g)]


def gather_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), torch.randint(0, 3, (n, 2), generator=g)]


def scatter_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), torch.randint(0, 3, (n, 2), generator=g), rand((n, 2), dtype, g)]


def index_add_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), torch.randint(0, n, (2,), generator=g), rand((2, 3), dtype, g)]


def mask_in(shape, dtype, g):
    x = rand(shape, dtype, g)
    return [x, x > 0]


def mask_value_in(shape, dtype, g):
    x = rand(shape, dtype, g)
    return [x, x > 0, torch.tensor(0.5, dtype=dtype)]


def one_element_value_in(shape, dtype, g):
    x = rand(shape, dtype, g)
    return [x, x > 0, torch.tensor([0.5], dtype=dtype)]


def index_put_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), torch.randint(0, n, (2,), generator=g), rand((2, 3), dtype, g)]


def fill_in(shape, dtype, g):
    return [rand(shape, dtype, g), torch.tensor(0.25, dtype=dtype)]


def sorter_in(shape, dtype, g):
    boundaries = rand((8,), dtype, g)
    return [boundaries, rand(shape, dtype, g), torch.argsort(boundaries)]


def image(shape, dtype, g):
    return [rand((2, 3, 6, 6), dtype, g)]


def conv_in(shape, dtype, g):
    return [rand((2, 3, 6, 6), dtype, g), rand((4, 3, 3, 3), dtype, g), rand((4,), dtype, g)]


def conv1d_in(shape, dtype, g):
    return [rand((2, 3, 8), dtype, g), rand((4, 3, 3), dtype, g)]


def linear_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 3), dtype, g), rand((2, 3), dtype, g), rand((2,), dtype, g)]


def logits_target(shape, dtype, g):
    n = shape[0]
    return [rand((n, 4), dtype, g), torch.randint(0, 4, (n,), generator=g)]


def probs_target(shape, dtype, g):
    return [rand(shape, dtype, g, 0.05, 0.95), rand(shape, dtype, g, 0.0, 1.0)]


def sorted_in(shape, dtype, g):
    return [torch.sort(rand((8,), dtype, g)).values, rand(shape, dtype, g)]


def ints(shape, dtype, g):
    return [rand(shape, I64, g, 0, 6)]


def two_ints(shape, dtype, g):
    return [rand(shape, I64, g, 0, 6), rand(shape, I64, g, 1, 6)]


def norm_in(shape, dtype, g):
    n = shape[0]
    return [rand((n, 4), dtype, g), rand((4,), dtype, g), rand((4,), dtype, g)]


def bn_in(shape, dtype, g):
    n = max(shape[0], 2)
    return [rand((n, 3), dtype, g), rand((3,), dtype, g), rand((3,), dtype, g, 0.5, 1.5)]


def emb_in(shape, dtype, g):
    return [torch.randint(0, 5, (shape[0],), generator=g), rand((5, 3), dtype, g)]


def seq(shape, dtype, g):
    return [rand((shape[0], 5), dtype, g)]


UNARY = [
    "abs", "neg", "exp", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "atan", "sinh", "cosh",
    "floor", "ceil", "round", "trunc", "frac", "sign", "square", "erf", "erfc", "relu",
    "exp2", "sgn", "deg2rad", "rad2deg", "nan_to_num", "positive", "fix", "clone",
]
UNARY_POS = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "lgamma", "digamma"]
UNARY_UNIT = ["asin", "acos", "atanh", "erfinv", "logit"]
BINARY = [
    "add", "sub", "mul", "maximum", "minimum", "atan2", "hypot", "copysign", "fmax", "fmin",
    "eq", "ne", "lt", "le", "gt", "ge", "logaddexp", "xlogy", "nextafter", "heaviside",
    "isclose", "float_power", "ldexp",
]
BINARY_POS = ["div", "true_divide", "pow", "remainder", "fmod", "floor_divide"]
ACTIVATIONS = ["gelu", "silu", "mish", "elu", "selu", "celu", "softplus", "softsign", "hardtanh",
               "hardswish", "hardsigmoid", "leaky_relu", "relu6", "tanhshrink", "softshrink",
               "hardshrink", "logsigmoid"]
REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "std", "var", "logsumexp",
              "nansum", "count_nonzero", "norm", "max", "min"]


def _unary(name: str) -> Callable:
    return getattr(torch, name)


OPS: list[Op] = []
OPS += [Op(n, _unary(n), one) for n in UNARY]
OPS += [Op(n, _unary(n), pos) for n in UNARY_POS]
OPS += [Op(n, _unary(n), unit) for n in UNARY_UNIT]
# logaddexp, nextafter, gcd, lcm: structured TensorIterator kernels *without* NoCheck in
# native_functions.yaml, so CUDA's generated wrapper checks (and names) the argument first.
EXACT_BINARY = {"logaddexp": "other", "nextafter": "other"}
OPS += [Op(n, getattr(torch, n), two, category=EXACT if n in EXACT_BINARY else ITER,
           argument=EXACT_BINARY.get(n, "")) for n in BINARY if n not in ("ldexp",)]
OPS += [Op("ldexp", lambda a, b: torch.ldexp(a, b.round()), two)]
OPS += [Op(n, getattr(torch, n), two_pos) for n in BINARY_POS]
OPS += [Op(n, getattr(F, n), one) for n in ACTIVATIONS]
def _reduce(name: str) -> Callable:
    fn = getattr(torch, name)
    return lambda x: fn(x, dim=-1)


OPS += [Op(n, _reduce(n), one) for n in REDUCTIONS]
OPS += [
    Op("sum_all", torch.sum, one),
    Op("cumsum", lambda x: torch.cumsum(x, -1), one),
    Op("cumprod", lambda x: torch.cumprod(x, -1), unit),
    Op("cummax", lambda x: torch.cummax(x, -1), one),
    Op("logcumsumexp", lambda x: torch.logcumsumexp(x, -1), one),
    Op("softmax", lambda x: F.softmax(x, -1), one),
    Op("log_softmax", lambda x: F.log_softmax(x, -1), one),
    Op("any", lambda x: torch.any(x > 0, -1), one),
    Op("all", lambda x: torch.all(x > -1, -1), one),
    Op("sort", lambda x: torch.sort(x, -1), one),
    Op("argsort", lambda x: torch.argsort(x, dim=-1, stable=True), one),
    Op("topk", lambda x: torch.topk(x.reshape(-1), 1), one),
    Op("kthvalue", lambda x: torch.kthvalue(x.reshape(-1), 1), one),
    Op("unique", lambda x: torch.unique(x.round()), one),
    Op("flip", lambda x: torch.flip(x, [0]), one),
    Op("roll", lambda x: torch.roll(x, 1, 0), one),
    Op("transpose", lambda x: x.transpose(0, -1).contiguous(), one),
    Op("reshape", lambda x: x.reshape(-1), one),
    Op("unsqueeze", lambda x: x.unsqueeze(0) * 2, one),
    Op("expand", lambda x: x.unsqueeze(0).expand(2, *x.shape) + 0, one),
    Op("repeat", lambda x: x.repeat(2, *[1] * (x.dim() - 1)), one),
    Op("tile", lambda x: torch.tile(x, (2,)), one),
    Op("narrow", lambda x: x.narrow(0, 0, 1) + 1, one),
    Op("chunk", lambda x: [c + 1 for c in x.chunk(2, 0)], one),
    Op("tril", lambda x: torch.tril(x.reshape(x.shape[0], -1)), one),
    Op("triu", lambda x: torch.triu(x.reshape(x.shape[0], -1)), one),
    Op("diag", lambda x: torch.diag(x.reshape(-1)), one),
    Op("clamp_scalar", lambda x: x.clamp(-0.5, 0.5), one),
    Op("pad", lambda x: F.pad(x, (1, 1)), one),
    Op("dropout_eval", lambda x: F.dropout(x, 0.5, training=False), one),
    Op("nonzero", lambda x: torch.nonzero(x > 0), one),
    Op("masked_select", lambda x, m: torch.masked_select(x, m), mask_in, category=EXACT, argument="mask"),
    Op("isfinite", torch.isfinite, one),
    Op("histc", lambda x: torch.histc(x, bins=4, min=-2, max=2), one, dtypes=(F32,)),
    # binary / ternary elementwise
    Op("where", lambda c, a, b: torch.where(c > 0, a, b), three),
    Op("lerp", torch.lerp, three),
    Op("addcmul", torch.addcmul, three),
    Op("addcdiv", torch.addcdiv, three),
    # clamp.Tensor has a generated check (reports quote "wrapper_clamp_Tensor ... argument min")
    Op("clamp_tensor", lambda x, lo: torch.clamp(x, min=lo), two, category=EXACT, argument="min"),
    # the loss wrappers broadcast input and target in Python before the TensorIterator kernel
    Op("mse_loss", F.mse_loss, two, scalar_ok=False),
    Op("l1_loss", F.l1_loss, two, scalar_ok=False),
    Op("smooth_l1_loss", F.smooth_l1_loss, two, scalar_ok=False),
    Op("huber_loss", F.huber_loss, two, category=EXACT, argument="target"),
    Op("soft_margin_loss", F.soft_margin_loss, two),
    # CUDA kernel is a TensorIterator loop; the Python wrapper insists on equal sizes
    Op("bce", F.binary_cross_entropy, probs_target, scalar_ok=False),
    Op("bce_with_logits", F.binary_cross_entropy_with_logits, two, scalar_ok=False),
    Op("kl_div", lambda a, b: F.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"), two),
    # composite C++: x2's norm is computed on the CPU, then clamped with a device minimum
    Op("cosine_similarity", lambda a, b: F.cosine_similarity(a.reshape(1, -1), b.reshape(1, -1)), two,
       category=EXACT, argument="min"),
    Op("pairwise_distance", lambda a, b: F.pairwise_distance(a.reshape(1, -1), b.reshape(1, -1)), two,
       scalar_ok=False),
    Op("dist", torch.dist, two),  # composite: norm(a - b)
    Op("bitwise_and", torch.bitwise_and, two_ints, dtypes=(I64,)),
    Op("bitwise_or", torch.bitwise_or, two_ints, dtypes=(I64,)),
    Op("bitwise_xor", torch.bitwise_xor, two_ints, dtypes=(I64,)),
    Op("gcd", torch.gcd, two_ints, dtypes=(I64,), category=EXACT, argument="other"),
    Op("lcm", torch.lcm, two_ints, dtypes=(I64,), category=EXACT, argument="other"),
    Op("bitwise_not", torch.bitwise_not, ints, dtypes=(I64,)),
    # a Python number where the schema says Tensor reaches the kernel unwrapped
    Op("remainder_number", lambda x: x % 1.5, one),
    Op("fmod_number", lambda x: torch.fmod(x, 1.5), one),
    Op("copysign_number", lambda x: torch.copysign(x, -1.0), one),
    Op("xlogy_number", lambda x: torch.xlogy(x, 2.0), pos),
    Op("and_number", lambda x: x & 3, ints, dtypes=(I64,)),
    Op("shift_number", lambda x: x << 1, ints, dtypes=(I64,)),
    Op("int_tensor_float_number", lambda x: (x % 2.5, x + 0.5), ints, dtypes=(I64,)),
    Op("bincount", lambda x: torch.bincount(x.reshape(-1)), ints, dtypes=(I64,)),
    # linear algebra
    Op("mm", torch.mm, mats, category=EXACT, argument="mat2"),
    Op("matmul", torch.matmul, mats, category=EXACT, argument="mat2"),
    Op("addmm", torch.addmm, addmm_in, category=EXACT, argument="mat2"),
    Op("bmm", torch.bmm, bmm_in, category=EXACT, argument="mat2"),
    # mv is composite: the result is allocated like vec (CPU), then addmv_ checks it first
    Op("mv", torch.mv, mat_vec, category=EXACT, argument="mat"),
    Op("dot", torch.dot, vecs, category=EXACT, argument="tensor"),
    Op("outer", torch.outer, vecs, category=ITER),
    Op("einsum", lambda a, b: torch.einsum("ij,jk->ik", a, b), mats, category=EXACT, argument="mat2"),
    # a CPU bias is addmm's first argument: the check takes it as the reference and names mat1
    Op("linear", F.linear, linear_in, category=EXACT, argument="mat1"),
    Op("linalg_vector_norm", lambda x: torch.linalg.vector_norm(x, dim=-1), one),
    Op("cdist", lambda a, b: torch.cdist(a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)), two, category=EXACT, argument="x2"),
    # indexing
    Op("index_select", lambda x, i: x.index_select(0, i), index_in, category=EXACT, argument="index"),
    Op("gather", lambda x, i: x.gather(1, i), gather_in, category=EXACT, argument="index"),
    Op("scatter", lambda x, i, s: x.scatter(1, i, s), scatter_in, category=EXACT, argument="src"),
    Op("scatter_add", lambda x, i, s: x.scatter_add(1, i, s), scatter_in, category=EXACT, argument="src"),
    Op("index_add", lambda x, i, s: x.index_add(0, i, s), index_add_in, category=EXACT, argument="source"),
    Op("take", lambda x, i: torch.take(x, i), index_in, category=EXACT, argument="index"),
    Op("index_cpu_indices", lambda x, i: x[i], index_in, category=FREE),
    # masked_fill__cuda checks self and mask first, with no exception for a 0-dim CPU mask
    Op("masked_fill", lambda x, m: x.masked_fill(m, 0.5), mask_in, category=KERNEL,
       message="expected self and mask to be on the same device, but got mask on cpu and self on {dev}",
       scalar_rejected=True),
    Op("masked_fill_", lambda x, m: x.clone().masked_fill_(m, 0.5), mask_in, category=KERNEL,
       message="expected self and mask to be on the same device, but got mask on cpu and self on {dev}",
       scalar_rejected=True),
    # ... and reads a 0-dim value tensor with .item(), from any device
    Op("masked_fill_value_tensor", lambda x, m, v: x.masked_fill(m, v), mask_value_in, category=FREE),
    # index_put: with accumulate CUDA's sort kernel wants the value on self's device (a 0-dim
    # value is moved there first); without, a TensorIterator reads it
    Op("index_put_accumulate", lambda x, i, v: x.index_put((i,), v, accumulate=True), index_put_in,
       category=KERNEL, message="expected device {dev} but got device cpu for value tensor"),
    Op("index_put", lambda x, i, v: x.index_put((i,), v), index_put_in),
    # one CPU element under a boolean mask on self's device: index_put_ becomes masked_fill_
    Op("index_put_mask_one_value", lambda x, m, v: x.index_put((m,), v), one_element_value_in, category=FREE),
    Op("fill_tensor", lambda x, v: x.clone().fill_(v), fill_in, category=FREE),
    Op("fill_tensor_cpu_self", lambda x, v: x.clone().fill_(v), fill_in, category=FREE, mix=0),
    # index_fill_ restrides the index to self's rank: a 0-dim CPU index is no scalar there
    Op("index_fill", lambda x, i: x.index_fill(0, i, 1.5), index_in, scalar_ok=False, scalar_rejected=True),
    Op("searchsorted_sorter", lambda s, x, srt: torch.searchsorted(s, x, sorter=srt), sorter_in,
       category=KERNEL, scalar_ok=False, message="torch.searchsorted(): sorter and boundary tensors should have same device "
       "type, but got sorter tensor device type cpu and input value tensor device type {dev}"),
    Op("embedding", lambda i, w: F.embedding(i, w), emb_in, category=EXACT, argument="index", mix=0),
    Op("cat", lambda a, b: torch.cat([a, b]), two, category=EXACT, argument="tensors"),
    Op("stack", lambda a, b: torch.stack([a, b]), two, category=EXACT, argument="tensors"),
    Op("searchsorted", torch.searchsorted, sorted_in, category=EXACT, argument="self"),
    Op("bucketize", lambda s, x: torch.bucketize(x, s), sorted_in, category=EXACT, argument="boundaries", mix=0),
    Op("copy", lambda a, b: a.clone().copy_(b), two, category=FREE),
    # neural-network layers
    Op("conv2d", F.conv2d, conv_in, category="conv", mix=1),
    Op("conv1d", F.conv1d, conv1d_in, category="conv", mix=1),
    Op("max_pool2d", lambda x: F.max_pool2d(x, 2), image),
    Op("avg_pool2d", lambda x: F.avg_pool2d(x, 2), image),
    Op("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 1), image),
    Op("interpolate", lambda x: F.interpolate(x, scale_factor=2), image),
    Op("pixel_shuffle", lambda x: F.pixel_shuffle(x[:, :1].repeat(1, 4, 1, 1), 2), image),
    Op("unfold", lambda x: F.unfold(x, 2), image),
    Op("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), norm_in, category=EXACT, argument="weight", mix=1),
    Op("batch_norm_eval", lambda x, m, v: F.batch_norm(x, m, v, training=False), bn_in, category=EXACT, argument="running_mean", mix=1),
    Op("group_norm", lambda x: F.group_norm(x, 1), image),
    Op("cross_entropy", F.cross_entropy, logits_target, category=EXACT, argument="target"),
    Op("nll_loss", lambda x, t: F.nll_loss(x.log_softmax(-1), t), logits_target, category=EXACT, argument="target"),
    Op("normalize", lambda x: F.normalize(x, dim=-1), one),
    Op("one_hot", lambda x: F.one_hot(x.reshape(-1), 16), ints, dtypes=(I64,)),
    Op("glu", lambda x: F.glu(x.repeat(*[1] * (x.dim() - 1), 2)), one),
    Op("sdpa", lambda x: F.scaled_dot_product_attention(x.reshape(1, 1, -1, 1), x.reshape(1, 1, -1, 1), x.reshape(1, 1, -1, 1)), one, dtypes=(F32,)),
    Op("rnn_cell", lambda x: F.linear(x, torch.ones(5, 5, device=x.device, dtype=x.dtype)).tanh(), seq),
]

SHAPES = st.sampled_from([(3,), (2, 3), (4, 1), (2, 3, 2), (1,), (5, 4)])


def _on(device, tensors):
    return [t.to(device) for t in tensors]


def _cpu(x):
    if isinstance(x, torch.Tensor):
        return x.to("cpu")
    if isinstance(x, (list, tuple)):
        return [_cpu(v) for v in x]
    return x


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(shape=SHAPES, seed=st.integers(0, 2**16), dtype_index=st.integers(0, 1))
def test_simulated_equals_cpu(simdev, op, shape, seed, dtype_index):
    dtype = op.dtypes[dtype_index % len(op.dtypes)]
    g = torch.Generator().manual_seed(seed)
    inputs = op.make(shape, dtype, g)
    expected = op.fn(*inputs)
    got = op.fn(*_on(simdev, inputs))
    torch.testing.assert_close(_cpu(got), _cpu(expected), equal_nan=True, rtol=1e-6, atol=1e-6)


MIXABLE = [o for o in OPS if len(o.make((3,), o.dtypes[0], torch.Generator().manual_seed(0))) >= 2]


def test_the_table_covers_enough_operators():
    assert len(OPS) >= 150
    assert len(MIXABLE) >= 50


@pytest.mark.parametrize("op", MIXABLE, ids=[o.name for o in MIXABLE])
def test_mixing_a_cpu_operand_raises_exactly_when_cuda_does(simdev, op):
    g = torch.Generator().manual_seed(0)
    inputs = op.make((3, 2) if op.make is not mats else (3,), op.dtypes[0], g)
    moved = _on(simdev, inputs)
    moved[op.mix] = inputs[op.mix]  # one operand stays on the CPU
    if op.category == FREE:
        op.fn(*moved)
    elif op.category == ITER:
        with expect_device_error(template="T1", devices=("sim:0", "cpu")):
            op.fn(*moved)
    elif op.category == EXACT:
        with expect_device_error(template="T2", argument=op.argument):
            op.fn(*moved)
    elif op.category == "conv":
        with expect_device_error(template="T3", argument="weight"):
            op.fn(*moved)
    elif op.category == KERNEL:
        with pytest.raises(RuntimeError) as info:
            op.fn(*moved)
        assert str(info.value) == op.message.format(dev=simdev_text(simdev))


def simdev_text(device: torch.device) -> str:
    return f"{device.type}:{device.index or 0}"


@pytest.mark.parametrize("op", [o for o in MIXABLE if o.scalar_rejected], ids=lambda o: o.name)
def test_a_cpu_scalar_tensor_is_rejected_where_the_kernel_checks_first(simdev, op):
    g = torch.Generator().manual_seed(0)
    inputs = op.make((3, 2), op.dtypes[0], g)
    moved = _on(simdev, inputs)
    moved[op.mix] = inputs[op.mix].reshape(-1)[0].clone()  # 0-dim CPU tensor: CUDA rejects it here
    if op.category == KERNEL:
        with pytest.raises(RuntimeError) as info:
            op.fn(*moved)
        assert str(info.value) == op.message.format(dev=simdev_text(simdev))
    else:
        with expect_device_error(template="T1", devices=("sim:0", "cpu")):
            op.fn(*moved)


@pytest.mark.parametrize("op", [o for o in MIXABLE if o.category in (ITER, KERNEL) and o.scalar_ok
                                and not o.scalar_rejected],
                         ids=lambda o: o.name)
def test_a_cpu_scalar_tensor_is_read_as_a_scalar(simdev, op):
    g = torch.Generator().manual_seed(0)
    inputs = op.make((3, 2), op.dtypes[0], g)
    moved = _on(simdev, inputs)
    moved[-1] = inputs[-1].reshape(-1)[0].clone()  # 0-dim CPU tensor: CUDA accepts it
    try:
        op.fn(*moved)
    except RuntimeError as e:
        assert "same device" not in str(e), f"{op.name} rejected a CPU scalar: {e}"
