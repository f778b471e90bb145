"""Where the program made each CPU tensor (``sim._origins``): the line of the user's code, kept
through views and arithmetic, never stored on the tensor itself."""

from __future__ import annotations

import gc
import inspect
import io

import torch

from samedevice.sim import _origins


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno  # type: ignore[union-attr]


def test_a_factory_is_made_at_the_calling_line_and_its_views_keep_it(cuda):
    pos = torch.arange(8); made = _line()  # noqa: E702
    assert _origins.made_at(pos) == (__file__, made)
    view = pos.unsqueeze(0)[:, :4] * 2
    assert _origins.made_at(view) == (__file__, made)
    joined = torch.cat([view, view])
    assert _origins.made_at(joined) == (__file__, made)


def test_a_gpu_tensor_has_no_origin_and_its_copy_to_the_cpu_is_made_at_the_copy(cuda):
    x = torch.ones(3, device=cuda)
    assert _origins.made_at(x) is None
    back = x.cpu(); moved = _line()  # noqa: E702
    assert _origins.made_at(back) == (__file__, moved)


def test_an_in_place_op_keeps_the_first_origin(cuda):
    t = torch.zeros(4); made = _line()  # noqa: E702
    t.add_(1)
    assert _origins.made_at(t) == (__file__, made)


def test_a_tensor_made_inside_torch_is_placed_at_the_users_call(cuda):
    layer = torch.nn.functional.pad(torch.ones(2), (1, 1)); made = _line()  # noqa: E702
    assert _origins.made_at(layer) == (__file__, made)


def test_a_freed_tensor_is_forgotten(cuda):
    before = len(_origins._made)
    for _ in range(50):
        torch.zeros(2)
    gc.collect()
    assert len(_origins._made) <= before + 1


def test_a_saved_tensor_is_byte_for_byte_what_it_is_without_the_tracking(cuda):
    tracked = torch.arange(5)
    assert _origins.made_at(tracked) is not None
    plain = tracked.clone()
    _origins._made.pop(id(plain), None)
    a, b = io.BytesIO(), io.BytesIO()
    torch.save(tracked, a)
    torch.save(plain, b)
    assert a.getvalue() == b.getvalue()
    assert not hasattr(tracked, "__dict__") or not tracked.__dict__


def test_an_array_converted_with_from_numpy_is_made_at_the_conversion(cuda):
    import numpy as np

    t = torch.from_numpy(np.ones(3)); made = _line()  # noqa: E702
    assert _origins.made_at(t) == (__file__, made)
    assert torch.from_numpy.__name__ == "from_numpy"  # the wrapper passes for torch's own


def test_a_new_tensor_over_known_memory_has_that_memorys_origin(cuda):
    from torch.autograd import Variable

    base = torch.zeros(4, 2); made = _line()  # noqa: E702
    alias = Variable(base[1:3])  # a new tensor object no torch function mode sees
    assert id(alias) not in _origins._made
    assert _origins.made_at(alias) == (__file__, made)
    assert _origins.made_at(torch.ones(0)) is not None  # an empty tensor keeps its own
    assert _origins._shared_origin(torch.empty(0)) is None  # and shares no memory with another
