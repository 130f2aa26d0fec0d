"""Devices: parsing like torch.device, resolution and listing errors, the clgrad.opencl queries,
CLGRAD_DEVICE selection (on real and on fake device lists) and the default device."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

import clgrad
from clgrad.backends.opencl import runtime
from clgrad.backends.opencl.health import Verdict
from clgrad.device import resolve

# (constructor args, type, index, str, repr)
PARSE = [
    (("cpu",), "cpu", None, "cpu", "device(type='cpu')"),
    (("cpu:0",), "cpu", 0, "cpu:0", "device(type='cpu', index=0)"),
    (("opencl",), "opencl", None, "opencl", "device(type='opencl')"),
    (("opencl:1",), "opencl", 1, "opencl:1", "device(type='opencl', index=1)"),
    (("opencl", 1), "opencl", 1, "opencl:1", "device(type='opencl', index=1)"),
    (("opencl:12",), "opencl", 12, "opencl:12", "device(type='opencl', index=12)"),
    ((2,), "opencl", 2, "opencl:2", "device(type='opencl', index=2)"),  # an int is an accelerator index
    ((clgrad.device("opencl:3"),), "opencl", 3, "opencl:3", "device(type='opencl', index=3)"),
]


@pytest.mark.parametrize("args, type_, index, text, rep", PARSE, ids=[str(p[0]) for p in PARSE])
def test_parse(args, type_, index, text, rep):
    d = clgrad.device(*args)
    assert (d.type, d.index, str(d), repr(d)) == (type_, index, text, rep)
    assert d == clgrad.device(text) and d == text and hash(d) == hash(clgrad.device(text))
    assert pickle.loads(pickle.dumps(d)) == d


def test_keywords_and_torch_parity():
    torch = pytest.importorskip("torch")
    assert clgrad.device(type="opencl", index=2) == "opencl:2"
    for text in ("cpu", "cpu:0", "cpu:3"):
        c, t = clgrad.device(text), torch.device(text)
        assert (c.type, c.index, str(c)) == (t.type, t.index, str(t))
        assert repr(c) == repr(t)


# (constructor args, exception, message fragment) — the messages are PyTorch's
BAD = [
    (("foo",), RuntimeError, "Expected one of cpu, opencl device type at start of device string: foo"),
    (("CPU",), RuntimeError, "Expected one of cpu, opencl device type"),
    (("cuda:0",), RuntimeError, "device string: cuda:0"),
    (("opencl:x",), RuntimeError, "Invalid device string: 'opencl:x'"),
    (("opencl:",), RuntimeError, "Invalid device string: 'opencl:'"),
    (("opencl:-1",), RuntimeError, "Invalid device string: 'opencl:-1'"),
    (("opencl:01",), RuntimeError, "Invalid device string: 'opencl:01'"),
    ((" cpu",), RuntimeError, "device string"),
    (("cpu", -1), RuntimeError, "Device index must not be negative"),
    (("opencl:1", 1), RuntimeError, "type (string) must not include an index because index was passed explicitly"),
    (("opencl", "1"), TypeError, "must be int, not str"),
    (("opencl", True), TypeError, "must be int, not bool"),
    ((None,), TypeError, "device()"),
    ((1.5,), TypeError, "device()"),
    ((clgrad.device("cpu"), 0), TypeError, "must be str"),
]


@pytest.mark.parametrize("args, exc, msg", BAD, ids=[str(b[0]) for b in BAD])
def test_bad_device(args, exc, msg):
    with pytest.raises(exc, match=None) as info:
        clgrad.device(*args)
    assert msg in str(info.value)


def test_equality_and_hashing():
    a, b = clgrad.device("opencl:1"), clgrad.device("opencl", 1)
    assert a == b and a == "opencl:1" and a != "opencl:2" and a != "opencl" and a != "cpu"
    assert a != "not a device" and a != 1 and a != None  # noqa: E711 - == must not raise
    assert len({a, b, clgrad.device("opencl:2"), clgrad.device("cpu")}) == 3
    assert {a: "x"}[clgrad.device("opencl:1")] == "x"
    assert clgrad.device("cpu:0") != clgrad.device("cpu")  # as in torch


def test_resolve():
    assert resolve("cpu") == "cpu" and resolve("cpu:0") == "cpu" and resolve("cpu:0").index is None
    assert resolve(None) == clgrad.get_default_device()
    if clgrad.opencl.device_count():
        assert resolve("opencl").index == runtime.default_index()
        assert resolve(0) == "opencl:0"


def test_bad_index_lists_devices():
    n = clgrad.opencl.device_count()
    with pytest.raises(RuntimeError) as info:
        clgrad.zeros(2, device=f"opencl:{n + 5}")
    text = str(info.value)
    assert f"opencl device index {n + 5}" in text.lower()
    for d in runtime.devices():
        assert d.describe() in text
    if not n:
        assert "no OpenCL device is present" in text


# ---- clgrad.opencl ---------------------------------------------------------------------------


def test_opencl_queries():
    devs = runtime.devices()
    assert clgrad.opencl.device_count() == len(devs)
    assert clgrad.opencl.is_available() == any(d.usable for d in devs)
    assert len(clgrad.opencl.devices()) == len(devs)
    for d in devs:
        props = clgrad.opencl.get_device_properties(d.index)
        assert clgrad.opencl.get_device_name(d.index) == props.name == d.props.name
        assert clgrad.opencl.get_device_properties(f"opencl:{d.index}") is props
        assert props.total_memory > 0 and props.compute_units > 0 and isinstance(props.fp64, bool)
        assert props.type in ("SIMULATOR",) or "CPU" in props.type or "GPU" in props.type or "ACC" in props.type
    if devs:
        assert clgrad.opencl.current_device() == runtime.default_index()
        assert clgrad.opencl.get_device_name() == devs[runtime.default_index()].props.name
    with pytest.raises(ValueError, match="Expected an opencl device, but got: cpu"):
        clgrad.opencl.memory_allocated("cpu")


def test_opencl_synchronize_and_memory(device):
    if device == "cpu":
        clgrad.opencl.synchronize() if clgrad.opencl.device_count() else None
        return
    t = clgrad.ones(1000, device=device)
    clgrad.opencl.synchronize(device)
    clgrad.opencl.synchronize()
    clgrad.synchronize()
    assert clgrad.opencl.memory_allocated(device) >= t.nbytes
    assert clgrad.opencl.max_memory_allocated(device) >= clgrad.opencl.memory_allocated(device)
    assert clgrad.opencl.memory_reserved(device) >= clgrad.opencl.memory_allocated(device)
    clgrad.opencl.empty_cache()


# ---- CLGRAD_DEVICE selection on a fake device list --------------------------------------------


@dataclasses.dataclass
class FakeDevice:
    """A device with its health verdict already given (never checked in a child)."""

    index: int
    props: runtime.DeviceProperties
    ok: dataclasses.InitVar[bool] = True

    def __post_init__(self, ok):
        self.health = Verdict(ok, "" if ok else "LLVM ERROR: Do not know how to split this operator's operand!")

    usable = property(lambda self: self.health.ok)
    rank = runtime.CLDevice.rank
    driver = runtime.CLDevice.driver
    preference = runtime.CLDevice.preference
    describe = runtime.CLDevice.describe


def _props(name, platform, version, vendor, type_, driver="1"):
    return runtime.DeviceProperties(
        name=name, platform=platform, platform_version=version, vendor=vendor, driver_version=driver,
        type=type_, compute_units=1, total_memory=1 << 30, max_alloc=1 << 28, max_work_group_size=256,
        local_memory=1 << 15, fp64=True, fp16=False, is_simulator=type_ == "SIMULATOR",
    )


def _fakes(gpu_usable=True):
    pocl = "Portable Computing Language"
    return [
        FakeDevice(0, _props("Oclgrind Simulator", "Oclgrind", "OpenCL 1.2 (Oclgrind 21.10)", "Oclgrind", "SIMULATOR")),
        FakeDevice(1, _props("pthread-AMD EPYC", pocl, "OpenCL 3.0 PoCL 3.0-rc2", "The pocl project", "ALL | CPU",
                             "3.0-rc2"), ok=False),
        FakeDevice(2, _props("pthread-skylake", pocl, "OpenCL 3.0 PoCL 3.1+debian", "The pocl project", "ALL | CPU",
                             "3.1+debian")),
        FakeDevice(3, _props("NVIDIA H100", "NVIDIA CUDA", "OpenCL 3.0 CUDA 12", "NVIDIA Corporation", "GPU"),
                   ok=gpu_usable),
    ]


# (CLGRAD_DEVICE, expected index): an index, or a case-insensitive substring of platform name,
# vendor, platform version or device name; among several matches the most capable healthy one wins
SELECT = [
    ("0", 0), ("3", 3), ("opencl:2", 2),
    ("pocl", 2),  # both PoCLs carry 'PoCL' only in the version; the healthy one wins
    ("POCL", 2), ("portable computing", 2), ("the pocl project", 2),
    ("skylake", 2), ("oclgrind", 0), ("nvidia", 3), ("cuda 12", 3), ("opencl", 3),
]


@pytest.mark.parametrize("spec, expected", SELECT)
def test_select_fake(monkeypatch, spec, expected):
    monkeypatch.setattr(runtime, "_devices", _fakes())
    assert runtime.select(spec) == expected
    monkeypatch.setenv("CLGRAD_DEVICE", spec)
    assert runtime.default_index() == expected


@pytest.mark.parametrize("spec", ["amd gpu", "7", "opencl:9"])
def test_select_fake_errors(monkeypatch, spec):
    monkeypatch.setattr(runtime, "_devices", _fakes())
    with pytest.raises(RuntimeError) as info:
        runtime.select(spec)
    assert "Oclgrind Simulator" in str(info.value) and "pthread-skylake" in str(info.value)


@pytest.mark.parametrize("spec", [" 1 ", "opencl:1", "3.0-rc2", "epyc"])
def test_select_broken_names_reason_and_alternatives(monkeypatch, spec):
    """Naming a device that failed the health check (by index, or by a name only it matches) raises its reason and
    the healthy devices, best first."""
    monkeypatch.setattr(runtime, "_devices", _fakes())
    with pytest.raises(RuntimeError) as info:
        runtime.select(spec)
    text = str(info.value)
    assert "pthread-AMD EPYC" in text and "failed clgrad's health check: LLVM ERROR: Do not know how to split" in text
    assert text.index("opencl:3 (NVIDIA H100") < text.index("opencl:2 (pthread-skylake") < text.index("opencl:0 (")
    assert text.rstrip().endswith("lists every device with its verdict") and ", cpu (" in text


def test_newer_driver_preferred(monkeypatch):
    """Two healthy builds of one implementation: the newer driver is the default, whatever the index order."""
    pocl = "Portable Computing Language"
    devs = [FakeDevice(0, _props("pthread-a", pocl, "PoCL 3.1+debian", "pocl", "CPU", "3.1+debian")),
            FakeDevice(1, _props("pthread-b", pocl, "PoCL 4.0", "pocl", "CPU", "4.0")),
            FakeDevice(2, _props("pthread-c", pocl, "PoCL 4.0-rc2", "pocl", "CPU", "4.0-rc2"))]
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    monkeypatch.setattr(runtime, "_devices", devs)
    assert runtime.default_index() == 1 and runtime.select("pocl") == 1
    assert [d.index for d in sorted(devs, key=lambda d: d.preference)] == [1, 2, 0]
    assert devs[2].driver == (4, 0, -1) and devs[0].driver == (3, 1, 0)


# (which fakes exist, gpu usable, expected default): GPU > accelerator > CPU > simulator, broken skipped
DEFAULTS = [((0, 1, 2, 3), True, 3), ((0, 1, 2, 3), False, 2), ((0, 1, 2), True, 2), ((0, 1), True, 0)]


@pytest.mark.parametrize("present, gpu_usable, expected", DEFAULTS)
def test_default_index_fake(monkeypatch, present, gpu_usable, expected):
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    monkeypatch.setattr(runtime, "_devices", [d for d in _fakes(gpu_usable) if d.index in present])
    assert runtime.default_index() == expected


def test_default_index_all_broken(monkeypatch):
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    monkeypatch.setattr(runtime, "_devices", [d for d in _fakes(False) if d.index in (1, 3)])
    with pytest.raises(RuntimeError, match="no OpenCL device passed clgrad's health check .*NVIDIA H100.*LLVM ERROR"):
        runtime.default_index()


def test_default_index_none(monkeypatch):
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    monkeypatch.setattr(runtime, "_devices", [])
    with pytest.raises(RuntimeError, match="OpenCL is not available"):
        runtime.default_index()
    assert not clgrad.opencl.is_available() and clgrad.opencl.device_count() == 0


def test_select_real(monkeypatch):
    devs = runtime.devices()
    if not devs:
        pytest.skip("no OpenCL device")
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    best = runtime.default_index()
    usable = [d for d in devs if d.usable]
    if usable:
        assert devs[best].usable
        assert devs[best].rank == min(d.rank for d in usable)
    for d in (d for d in devs if d.usable):
        assert runtime.select(str(d.index)) == d.index
        monkeypatch.setenv("CLGRAD_DEVICE", str(d.index))
        assert runtime.default_index() == d.index
        assert resolve("opencl") == f"opencl:{d.index}"
    pocl = [d for d in devs if "pocl" in d.props.platform_version.lower() and d.usable]
    if pocl:
        assert runtime.select("PoCL") in [d.index for d in pocl]


# ---- the default device ------------------------------------------------------------------------


@pytest.fixture
def restore_default():
    before = clgrad.get_default_device()
    yield
    clgrad.set_default_device(before)


def test_default_device(device, restore_default):
    clgrad.set_default_device(device)
    assert clgrad.get_default_device() == device
    for t in (clgrad.zeros(2), clgrad.tensor([1, 2]), clgrad.arange(3), clgrad.empty(1), clgrad.eye(2)):
        assert t.device == device
    assert clgrad.zeros(2, device="cpu").device == "cpu"
    clgrad.set_default_device(None)
    assert clgrad.get_default_device() == "cpu" and clgrad.zeros(1).device == "cpu"


def test_tensors_carry_device(device):
    t = clgrad.zeros(2, 3, device=device)
    assert t.device == device and str(t.device) == device and isinstance(t.device, clgrad.device)
    assert t[0].device == device and t.t().device == device and t.clone().device == device
    assert t.is_cpu == (device == "cpu") and t.get_device() == (-1 if device == "cpu" else int(device[7:]))
