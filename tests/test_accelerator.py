"""clgrad.accelerator (torch.accelerator with OpenCL as the accelerator), the current device index, and
``device("opencl")`` (no index), ``current_accelerator()`` and ``"opencl"`` accepted everywhere a device is."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import clgrad
from clgrad import accelerator as acc
from clgrad.backends.opencl import runtime
from clgrad.device import set_current_index
from clgrad.nn.parallel.distributed import _single_device


@pytest.fixture
def opencl_device(device):
    """The fixture's OpenCL device as its index, made current for the test and restored after (cpu skips)."""
    if device == "cpu":
        pytest.skip("an OpenCL device test")
    index = int(device.split(":")[1])
    previous = set_current_index(index)
    default = clgrad.get_default_device()
    yield index
    set_current_index(previous)
    clgrad.set_default_device(default)


def test_idiom_and_queries():
    """``current_accelerator() if is_available() else "cpu"``: opencl where a healthy device exists."""
    present = bool(runtime.devices())
    assert acc.is_available() == clgrad.opencl.is_available()
    assert acc.device_count() == clgrad.opencl.device_count() == len(runtime.devices())
    expected = clgrad.device("opencl") if present else None
    assert acc.current_accelerator() == expected
    assert acc.current_accelerator(check_available=True) == (expected if acc.is_available() else None)
    device = acc.current_accelerator() if acc.is_available() else "cpu"
    assert clgrad.ones(2, device=device).device.type == clgrad.device(device).type
    if acc.is_available():
        assert acc.current_device_index() == acc.current_device_idx() == clgrad.opencl.current_device()
        assert acc.current_device_index() == runtime.default_index()
        assert repr(acc.current_accelerator()) == "device(type='opencl')"


def test_without_opencl(monkeypatch):
    monkeypatch.setattr(runtime, "_devices", [])
    assert acc.current_accelerator() is None and not acc.is_available() and acc.device_count() == 0
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        acc.current_device_index()
    with pytest.raises(RuntimeError, match="Accelerator expected"):
        acc.synchronize("opencl")


def test_torch_parity():
    torch = pytest.importorskip("torch")
    missing = sorted(set(torch.accelerator.__all__) - set(dir(acc)))
    # streams and graphs: clgrad has one in-order queue per device and no graph capture
    assert missing == ["Graph", "current_stream", "set_stream"]
    assert sorted(torch.accelerator.memory.__all__) == sorted(n for n in vars(acc.memory) if not n.startswith("_"))
    # without an accelerator torch answers as clgrad does without OpenCL
    if torch.accelerator.current_accelerator() is None:
        assert not torch.accelerator.is_available() and torch.accelerator.device_count() == 0


def test_set_device_index_moves_bare_opencl(opencl_device):
    i = opencl_device
    assert acc.current_device_index() == i and clgrad.opencl.current_device() == i
    for form in (clgrad.device("opencl"), acc.current_accelerator(), "opencl"):
        assert clgrad.zeros(1, device=form).device == f"opencl:{i}"
    set_current_index(None)
    acc.set_device_index(i)
    assert acc.current_device_index() == i
    acc.set_device_idx(clgrad.device("opencl", i))
    acc.set_device_index(f"opencl:{i}")
    assert clgrad.device("opencl") == "opencl" and clgrad.zeros(1, device="opencl").device == f"opencl:{i}"
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index or an integer"):
        acc.set_device_index("opencl")
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator opencl."):
        acc.set_device_index("cpu")
    with pytest.raises(RuntimeError, match="invalid OpenCL device index 99"):
        acc.set_device_index(99)


def test_device_index_context(opencl_device):
    i = opencl_device
    others = [d.index for d in runtime.devices() if d.usable]
    other = next((j for j in others if j != i), i)
    with acc.device_index(other):
        assert acc.current_device_index() == other and clgrad.empty(1, device="opencl").device == f"opencl:{other}"
        with acc.device_index(None):
            assert acc.current_device_index() == other
    assert acc.current_device_index() == i
    with clgrad.opencl.device(other):
        assert clgrad.opencl.current_device() == other
    with clgrad.opencl.device(-1):
        assert clgrad.opencl.current_device() == i
    assert clgrad.opencl.current_device() == i
    clgrad.opencl.set_device(f"opencl:{other}")
    assert acc.current_device_index() == other
    clgrad.opencl.set_device(None)  # torch ignores None and negative indices
    assert acc.current_device_index() == other


def test_synchronize_and_memory(opencl_device):
    i = opencl_device
    t = clgrad.ones(256, device="opencl")
    for form in (None, i, "opencl", f"opencl:{i}", clgrad.device("opencl")):
        acc.synchronize(form)
        assert acc.memory_allocated(form) >= t.nbytes
    assert acc.max_memory_allocated() >= acc.memory_allocated()
    assert acc.memory_reserved() >= acc.memory_allocated() and acc.max_memory_reserved() >= acc.memory_reserved()
    stats = acc.memory_stats()
    assert clgrad.opencl.memory_stats(i) == stats and clgrad.opencl.mem_get_info() == acc.get_memory_info()
    assert stats["allocated_bytes.all.current"] == acc.memory_allocated()
    assert stats["reserved_bytes.all.current"] == acc.memory_reserved()
    free, total = acc.get_memory_info()
    assert total == runtime.get(i).props.total_memory and 0 <= free <= total
    acc.reset_peak_memory_stats()
    assert acc.max_memory_allocated() == acc.memory_allocated()
    acc.reset_accumulated_memory_stats()
    acc.empty_cache()
    acc.empty_host_cache()
    assert acc.memory.memory_allocated is acc.memory_allocated
    dtypes = acc.get_device_capability()["supported_dtypes"]
    assert clgrad.float32 in dtypes and (clgrad.float64 in dtypes) == runtime.get(i).props.fp64
    assert clgrad.opencl.get_device_capability() >= (1, 0)
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator"):
        acc.memory_allocated("cpu")


def _forms(index):
    return [clgrad.device("opencl"), acc.current_accelerator(), "opencl", clgrad.device("opencl", index)]


def test_every_device_argument(opencl_device):
    """Factories, conversions, modules, generators, loading and data parallelism take each form of the
    accelerator device and put the tensor on the current OpenCL device."""
    x = clgrad.ones(2, 3)
    here = f"opencl:{opencl_device}"
    saved = io.BytesIO()
    clgrad.save({"x": x}, saved)
    makers = [
        lambda d: clgrad.tensor([1.0], device=d), lambda d: clgrad.zeros(2, device=d),
        lambda d: clgrad.full((2,), 1.0, device=d), lambda d: clgrad.arange(3, device=d),
        lambda d: clgrad.eye(2, device=d), lambda d: clgrad.rand(2, device=d),
        lambda d: clgrad.randint(0, 3, (2,), device=d), lambda d: clgrad.randperm(3, device=d),
        lambda d: clgrad.zeros_like(x, device=d), lambda d: clgrad.randn_like(x, device=d),
        lambda d: x.new_zeros(2, device=d), lambda d: x.to(d), lambda d: x.to(device=d, dtype=clgrad.float16),
        lambda d: clgrad.nn.Linear(2, 2).to(d).weight,
        lambda d: clgrad.rand(2, generator=clgrad.Generator(device=d), device=d),
        lambda d: clgrad.load(io.BytesIO(saved.getvalue()), map_location=d)["x"],
        lambda d: clgrad.nn.DataParallel(clgrad.nn.Linear(3, 2).to(d), device_ids=[d])(x.to(d)),
    ]
    for d in _forms(opencl_device):
        for make in makers:
            assert make(d).device == here, (d, make)
        assert _single_device(clgrad.nn.Linear(2, 2).to(d), [d], None) == here  # DistributedDataParallel's check
        assert clgrad.Generator(device=d).device == here


def test_default_device_forms(opencl_device):
    here = f"opencl:{opencl_device}"
    for d in _forms(opencl_device):
        clgrad.set_default_device(d)
        assert clgrad.get_default_device() == here and clgrad.zeros(1).device == here
        clgrad.set_default_device("cpu")
        with clgrad.device(d) if isinstance(d, str) else d:
            assert clgrad.get_default_device() == here
            assert clgrad.zeros(1).device == here and clgrad.rand(2).device == here
            assert clgrad.zeros(1, device="cpu").device == "cpu"
            with clgrad.device("cpu"):
                assert clgrad.zeros(1).device == "cpu"
            assert clgrad.tensor([1.0]).device == here
        assert clgrad.get_default_device() == "cpu" and clgrad.zeros(1).device == "cpu"


def test_device_context_on_cpu_restores_after_an_error():
    before = clgrad.get_default_device()
    with pytest.raises(KeyError):
        with clgrad.device("cpu") as d:
            assert d == "cpu" and clgrad.zeros(1).device == "cpu"
            raise KeyError("x")
    assert clgrad.get_default_device() == before


def test_device_type_comparisons_and_pickling():
    d = clgrad.device("opencl")
    assert d.type == "opencl" and d.index is None and d == "opencl" and d != "opencl:0"
    assert clgrad.device("opencl", 0).type == "opencl" and clgrad.device("opencl", 0) == "opencl:0"
    for e in (d, clgrad.device("opencl", 0), clgrad.device("cpu")):
        assert pickle.loads(pickle.dumps(e)) == e
    a = acc.current_accelerator()
    if a is not None:
        assert a.type == "opencl" and pickle.loads(pickle.dumps(a)) == a and str(a) == "opencl"


def test_tensor_device_kind_properties(device):
    torch = pytest.importorskip("torch")
    t = clgrad.zeros(2, device=device)
    kinds = ["is_cuda", "is_xpu", "is_mps", "is_meta", "is_ipu", "is_xla", "is_mtia", "is_maia", "is_vulkan",
             "is_mkldnn", "is_quantized", "is_nested"]
    assert not any(getattr(t, k) for k in kinds)
    assert all(hasattr(torch.zeros(1), k) for k in kinds)
    assert t.is_cpu == (device == "cpu") and t.is_opencl == (device != "cpu")
    assert not t.is_pinned() and not t.is_shared()


def test_opencl_seeding_is_the_default_generator():
    clgrad.opencl.manual_seed(5)
    a = clgrad.rand(3)
    clgrad.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), clgrad.rand(3).numpy())
    clgrad.opencl.manual_seed_all(7)
    assert clgrad.opencl.initial_seed() == clgrad.initial_seed() == 7
    clgrad.opencl.seed_all()  # a fresh seed from the OS: 7 again has odds of 2**-64
    assert clgrad.initial_seed() != 7
    clgrad.manual_seed(0)


def test_get_device_module():
    assert clgrad.get_device_module("opencl") is clgrad.opencl
    assert clgrad.get_device_module(clgrad.device("opencl", 1)) is clgrad.opencl
    assert clgrad.get_device_module("cuda") is clgrad.cuda and clgrad.get_device_module() is clgrad.opencl
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        clgrad.get_device_module("foo")
