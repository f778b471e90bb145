"""CUDA machine mode: under the alias, torch.cuda answers for the simulated GPUs."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from samedevice import sim
from samedevice.sim import _machine
from samedevice.sim._naming import INVALID_ORDINAL


def test_the_machine_reports_its_gpus(cuda):
    n = sim.device_count()
    assert torch.cuda.is_available() is True
    assert torch.cuda.device_count() == n == torch.accelerator.device_count()
    props = torch.cuda.get_device_properties(0)
    assert props.name == torch.cuda.get_device_name() == "samedevice simulated GPU"
    assert (props.major, props.minor) == torch.cuda.get_device_capability(0) == (8, 0)
    assert props.total_memory == 16 * 2**30 and props.multi_processor_count == 108
    assert torch.version.cuda == "12.8"
    assert torch.backends.cudnn.is_available() and torch.backends.cudnn.version() == 90100


def test_the_alias_off_restores_pytorchs_answers(simdev):
    with sim.cuda_alias():
        assert torch.cuda.is_available()
    assert torch.cuda.is_available() is False
    assert torch.version.cuda is None


def test_set_device_and_device_context(cuda):
    assert torch.cuda.current_device() == 0
    with torch.cuda.device(1):
        assert torch.cuda.current_device() == 1
        assert torch.ones(1).cuda().device == torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(1)
    try:
        assert torch.zeros(1, device="cuda").device == torch.device("cuda", 1)
    finally:
        torch.cuda.set_device(0)


def test_an_index_past_the_last_gpu_raises_cudas_invalid_ordinal(cuda):
    past = sim.device_count()
    with pytest.raises(torch.AcceleratorError) as e:
        torch.zeros(1, device=f"cuda:{past}")
    assert str(e.value) == INVALID_ORDINAL
    with pytest.raises(torch.AcceleratorError) as e:
        torch.cuda.set_device(past)
    assert str(e.value).startswith("CUDA error: invalid device ordinal\nGPU device may be out of range")


def test_streams_and_events_keep_cudas_observable_semantics(cuda):
    s = torch.cuda.Stream()
    assert s != torch.cuda.current_stream() == torch.cuda.default_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    with torch.cuda.stream(s):
        assert torch.cuda.current_stream() == s
        x = torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda")
        x.record_stream(s)
        time.sleep(0.01)
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    torch.cuda.current_stream().wait_stream(s)
    end.record()
    end.synchronize()
    assert s.query() and end.query()
    assert end.elapsed_time(start) < 0 < 10.0 <= start.elapsed_time(end)  # ms, real timestamps
    generic = torch.Stream("cuda")
    assert isinstance(generic, torch.cuda.Stream) and isinstance(torch.accelerator.current_stream(), torch.Stream)


def test_event_elapsed_time_checks_as_cuda_does(cuda):
    untimed, timed = torch.cuda.Event(), torch.cuda.Event(enable_timing=True)
    with pytest.raises(ValueError, match=r"^Both events must be created with argument 'enable_timing=True'\.$"):
        untimed.elapsed_time(timed)
    with pytest.raises(ValueError, match=r"^Both events must be recorded before calculating elapsed time\.$"):
        timed.elapsed_time(torch.cuda.Event(enable_timing=True))


def test_memory_statistics_count_the_simulated_tensors(cuda):
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    x = torch.empty(1000, device="cuda")  # 4,000 bytes -> 4,096 in 512-byte granules
    assert torch.cuda.memory_allocated() - before == 4096
    y = x[10:20]  # a view allocates nothing
    assert torch.cuda.memory_allocated() - before == 4096
    del x, y
    assert torch.cuda.memory_allocated() == before
    assert torch.cuda.max_memory_allocated() - before == 4096
    assert torch.cuda.memory_reserved() >= torch.cuda.max_memory_allocated()
    free, total = torch.cuda.mem_get_info()
    assert total == 16 * 2**30 and free == total - torch.cuda.memory_reserved()
    assert torch.cuda.memory_stats()["allocated_bytes.all.peak"] == torch.cuda.max_memory_allocated()
    assert torch.accelerator.memory_allocated() == torch.cuda.memory_allocated()


def test_rng_state_round_trips(cuda):
    torch.cuda.manual_seed(3)
    state = torch.cuda.get_rng_state()
    a = torch.randn(4, device="cuda")
    torch.cuda.set_rng_state(state)
    assert torch.equal(a, torch.randn(4, device="cuda"))
    assert len(torch.cuda.get_rng_state_all()) == torch.cuda.device_count()


def test_legacy_tensor_types(cuda):
    t = torch.cuda.FloatTensor([1.0, 2.0])
    assert t.device == torch.device("cuda", 0) and t.dtype == torch.float32
    assert isinstance(t, torch.cuda.FloatTensor) and not isinstance(t, torch.cuda.LongTensor)
    assert torch.cuda.LongTensor(2, 3).shape == (2, 3)
    assert torch.ones(2).type(torch.cuda.HalfTensor).dtype == torch.float16
    assert torch.ones(2).type("torch.cuda.DoubleTensor").device == torch.device("cuda", 0)


def test_pinned_memory_reports_pinned(cuda):
    pinned = torch.ones(3).pin_memory()
    assert pinned.is_pinned() and not torch.ones(3).is_pinned()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2, pin_memory=True)
    assert all(batch.is_pinned() for (batch,) in loader)


def test_the_alias_holds_in_every_thread(cuda):
    def work(_: int) -> torch.device:
        return torch.ones(2).cuda().device

    with ThreadPoolExecutor(2) as pool:
        assert set(pool.map(work, range(4))) == {torch.device("cuda", 0)}
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.zeros(1, device="cuda").is_cuda))
    t.start()
    t.join()
    assert seen == [True]


def test_checkpoints_load_onto_the_simulated_gpu(cuda, tmp_path):
    torch.save({"w": torch.arange(3.0, device="cuda")}, tmp_path / "ck.pt")
    assert torch.load(tmp_path / "ck.pt", map_location="cuda")["w"].device == torch.device("cuda", 0)
    assert torch.load(tmp_path / "ck.pt", map_location="cpu")["w"].device == torch.device("cpu")


def test_safetensors_loads_onto_the_simulated_gpu(cuda, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    import safetensors

    st.save_file({"a": torch.arange(4.0)}, tmp_path / "a.safetensors")
    assert st.load_file(tmp_path / "a.safetensors", device="cuda")["a"].device == torch.device("cuda", 0)
    with safetensors.safe_open(tmp_path / "a.safetensors", framework="pt", device="cuda") as f:
        assert f.get_tensor("a").is_cuda and f.get_slice("a")[1:].tolist() == [1.0, 2.0, 3.0]


def test_grad_scaler_is_enabled(cuda):
    assert torch.amp.GradScaler("cuda").is_enabled()


def test_data_parallel_uses_every_gpu(cuda):
    model = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert model.device_ids == list(range(torch.cuda.device_count()))
    out = model.cuda()(torch.ones(4, 3, device="cuda"))
    assert out.device == torch.device("cuda", 0) and out.shape == (4, 2)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: torch.cuda.CUDAGraph(), "torch.cuda.CUDAGraph"),
    (lambda: torch.cuda.graph(None), "torch.cuda.graph"),
    (lambda: torch.cuda.make_graphed_callables(None, ()), "torch.cuda.make_graphed_callables"),
    (lambda: torch.cuda.nccl.all_reduce([]), "torch.cuda.nccl.all_reduce"),
    (lambda: torch.cuda.utilization(), "torch.cuda.utilization"),
    (lambda: torch.cuda.Event(interprocess=True), "torch.cuda.Event(interprocess=True)"),
])
def test_what_cannot_be_simulated_is_refused_by_name(cuda, call, name):
    with pytest.raises(sim.Unsupported, match=rf"^{__import__('re').escape(name)} is not simulated"):
        call()


def test_a_refused_class_can_still_be_named(cuda):
    """transformers 5 annotates ``-> torch.cuda.CUDAGraph | None`` at import: naming a refused
    class must work; only making one raises."""
    assert (torch.cuda.CUDAGraph | None).__args__[0] is torch.cuda.CUDAGraph
    assert not isinstance(object(), torch.cuda.MemPool)


def test_triton_and_cuda_extensions_are_refused(cuda):
    with pytest.raises(sim.Unsupported, match=r"^triton is not simulated") as e:
        import triton  # noqa: F401
    # a probe answers instead of raising (transformers' is_triton_available); loading refuses
    import importlib.util

    assert importlib.util.find_spec("triton") is not None
    assert isinstance(e.value, ImportError)  # libraries probing for Triton fall back
    from torch.utils import cpp_extension

    with pytest.raises(sim.Unsupported, match=r"^torch.utils.cpp_extension.load_inline is not simulated"):
        cpp_extension.load_inline("k", cpp_sources="", cuda_sources="__global__ void k() {}")
    with pytest.raises(sim.Unsupported, match=r"^torch.utils.cpp_extension.CUDAExtension is not simulated"):
        cpp_extension.CUDAExtension("k", ["k.cu"])


def test_refused_classes_stay_classes(cuda):
    # transformers 5 annotates `def get_graph(...) -> torch.cuda.CUDAGraph | None` at import
    assert isinstance(torch.cuda.CUDAGraph, type) and isinstance(torch.cuda.MemPool, type)
    assert (torch.cuda.CUDAGraph | None) is not None
    assert not isinstance(object(), torch.cuda.CUDAGraph)
    with pytest.raises(sim.Unsupported, match=r"^torch.cuda.CUDAGraph is not simulated: CUDA graphs"):
        torch.cuda.CUDAGraph()
    with pytest.raises(sim.Unsupported, match=r"^torch.cuda.utilization is not simulated"):
        torch.cuda.utilization()


def test_the_docs_table_lists_every_registry_entry():
    table = _machine.table()
    assert table.count("\n") == len(_machine.REGISTRY) + 1
    assert "| `torch.cuda.synchronize` |" in table
    assert "| `torch.cuda.CUDAGraph` | **refused**" in table


def test_the_docs_page_shows_the_generated_tables():
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "run-gpu-code-on-cpu.md").read_text()
    assert "<!-- samedevice:cuda-calls -->" in page and "<!-- samedevice:simulated-gpu -->" in page


def test_backend_flags_are_pytorchs_own(cuda):
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.benchmark
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark = before


def test_set_default_device_cuda_makes_tensors_on_the_simulated_gpu(cuda):
    torch.set_default_device("cuda")
    try:
        assert torch.ones(2).device == torch.device("cuda", 0)
        assert torch.get_default_device() == torch.device("cuda", 0)
    finally:
        torch.set_default_device("cpu")
    assert torch.ones(2).device == torch.device("cpu")


def test_a_cuda_generator_under_a_cuda_default_device_samples_on_the_gpu(cuda):
    # pyro#3264's fix: DataLoader(generator=torch.Generator(device=x.device)) with the default
    # device set to CUDA; randperm gets no device argument, so the default device decides
    torch.set_default_device("cuda")
    try:
        perm = torch.randperm(10, generator=torch.Generator(device="cuda"))
    finally:
        torch.set_default_device("cpu")
    assert perm.device == torch.device("cuda", 0)
    with pytest.raises(RuntimeError, match=r"^Expected a 'cpu' device type for generator but found 'cuda'$"):
        torch.randperm(10, generator=torch.Generator(device="cuda"))  # CPU default: CUDA rejects it


def test_a_checkpoint_from_a_missing_gpu_raises_cudas_deserialize_text(cuda, tmp_path):
    # Saved on cuda:1 of a two-GPU machine, loaded without map_location on a one-GPU machine.
    from samedevice.sim import _backend

    before = _backend.DEVICE_COUNT
    try:
        _backend.set_device_count(2)
        torch.save({"w": torch.arange(3.0, device="cuda:1")}, tmp_path / "ck.pt")
        _backend.set_device_count(1)
        with pytest.raises(RuntimeError) as info:
            torch.load(tmp_path / "ck.pt")
        assert str(info.value) == (
            "Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. "
            "Please use torch.load with map_location to map your storages to an existing device."
        )
        assert torch.load(tmp_path / "ck.pt", map_location="cuda:0")["w"].device == torch.device("cuda", 0)
    finally:
        _backend.set_device_count(before)


def test_backward_runs_user_code_under_the_alias(cuda):
    # autograd.Function.backward and tensor hooks run from inside backward(): on a GPU they see
    # cuda tensors (FSDP's pre-backward hook checks the compute device this way)
    seen = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            seen.append((str(grad.device), grad.is_cuda))
            return grad * 2

    x = torch.ones(3, device="cuda", requires_grad=True)
    x.register_hook(lambda grad: seen.append((str(grad.device), grad.is_cuda)))
    Scale.apply(x).sum().backward()
    torch.autograd.backward(Scale.apply(x).sum())
    (grad,) = torch.autograd.grad(Scale.apply(x).sum(), x)
    assert seen == [("cuda:0", True)] * 6
    assert grad.device == torch.device("cuda", 0) and x.grad.tolist() == [4.0] * 3
    # the second GPU too (the engine runs the pass on the calling thread: its per-device
    # ready queues are sized for one device by a Python backend's guard)
    seen.clear()
    y = torch.ones(3, device="cuda:1", requires_grad=True)
    y.register_hook(lambda grad: seen.append((str(grad.device), grad.is_cuda)))
    Scale.apply(y).sum().backward()
    assert seen == [("cuda:1", True)] * 2 and y.grad.device == torch.device("cuda", 1)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointing_recomputes_under_the_alias(cuda, reentrant):
    # backward recomputes the forward, which says "cuda" as it did the first time; the
    # non-reentrant variant compares the devices its pack hooks saw then with what it recomputes
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3).cuda()
    seen = []

    def f(x):
        seen.append(torch.ones(1, device="cuda").device)
        return lin(x).relu() * 2

    x = torch.randn(2, 3, device="cuda", requires_grad=True)
    checkpoint(f, x, use_reentrant=reentrant).sum().backward()
    expected = torch.func.grad(lambda x: f(x).sum())(x.detach())
    assert seen[:2] == [torch.device("cuda", 0)] * 2
    torch.testing.assert_close(x.grad, expected)
