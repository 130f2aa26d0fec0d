"""Data movement and conversion: copy_ across devices, dtypes and layouts, .to()/.cpu()/.float()/...,
.type(), float64 on devices without cl_khr_fp64, float16 storage everywhere, and the issue's
acceptance snippets."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from conftest import fp64_ok
from helpers import make

import clgrad
from clgrad.backends.opencl import runtime


def usable_opencl():
    return [f"opencl:{d.index}" for d in runtime.devices() if d.usable]


# (src dtype, dst dtype): conversions a copy performs, compared with numpy's (in range) casts
CASTS = [("float32", "float32"), ("float32", "int32"), ("int64", "float16"), ("bool", "float32"),
         ("float16", "int64"), ("uint8", "bool"), ("float64", "uint8"), ("int32", "float64")]
# (src layout, dst layout)
LAYOUT_PAIRS = [("contiguous", "contiguous"), ("transposed", "contiguous"), ("contiguous", "sliced"),
                ("sliced", "transposed"), ("offset", "offset")]


def _values(dtype):
    base = np.array([[0, 1.5, -2.25], [3, 100, 7.75]])
    if dtype == "bool":
        return base != 0
    if dtype in ("uint8",):
        return np.abs(base).astype(dtype)
    return base.astype(dtype)


def _expected(src: np.ndarray, dst_dtype: str) -> np.ndarray:
    if dst_dtype == "bool":
        return src != 0
    if src.dtype.kind == "f" and np.dtype(dst_dtype).kind in "iu":
        return src.astype(np.int64).astype(dst_dtype)  # truncation toward zero, in range here
    return src.astype(dst_dtype)


def _directions(device):
    """(src device, dst device) pairs: within ``device`` and to/from cpu."""
    return sorted({(device, device), ("cpu", device), (device, "cpu")})


@pytest.mark.parametrize("layouts", LAYOUT_PAIRS, ids=["-".join(p) for p in LAYOUT_PAIRS])
@pytest.mark.parametrize("src_dt, dst_dt", CASTS, ids=[f"{a}-{b}" for a, b in CASTS])
def test_copy_across_devices_dtypes_layouts(device, src_dt, dst_dt, layouts):
    for src_dev, dst_dev in _directions(device):
        if "float64" in (src_dt, dst_dt) and not (fp64_ok(src_dev) and fp64_ok(dst_dev)):
            continue
        src_np = _values(src_dt)
        src = make(src_np, src_dev, layouts[0])
        dst = make(np.zeros((2, 3), dst_dt), dst_dev, layouts[1])
        storage, strides = dst._storage, dst.stride()
        assert dst.copy_(src) is dst
        assert dst._storage is storage and dst.stride() == strides and dst.device == dst_dev
        np.testing.assert_array_equal(dst.cpu().numpy(), _expected(src_np, dst_dt))
        np.testing.assert_array_equal(src.cpu().numpy(), src_np)  # the source is untouched


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_copy_between_two_opencl_devices(layout):
    devs = usable_opencl()
    if len(devs) < 2:
        pytest.skip("needs two usable OpenCL devices")
    src_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    for a, b in itertools.permutations(devs[:2]):
        src = make(src_np, a, layout)
        for dst in (clgrad.zeros(2, 3, device=b), make(np.zeros((2, 3), np.int32), b, layout)):
            dst.copy_(src)
            np.testing.assert_array_equal(dst.cpu().numpy(), src_np.astype(dst.dtype.np))
        moved = src.to(b)
        assert moved.device == b and moved.tolist() == src_np.tolist()


# (dst shape, src shape): copy_ broadcasts the source, never the destination
BROADCASTS = [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((2, 3), ()), ((3,), (1,)), ((0, 3), (3,))]


@pytest.mark.parametrize("dst_shape, src_shape", BROADCASTS, ids=str)
def test_copy_broadcasts(device, dst_shape, src_shape):
    for src_dev in sorted({"cpu", device}):
        src_np = np.arange(int(np.prod(src_shape)), dtype=np.float32).reshape(src_shape) + 1
        dst = clgrad.zeros(dst_shape, device=device).copy_(clgrad.tensor(src_np, device=src_dev))
        np.testing.assert_array_equal(dst.cpu().numpy(), np.broadcast_to(src_np, dst_shape))


# (name, op) that fail as in torch, with torch's message
COPY_ERRORS = [
    ("shape", lambda m, d: m.zeros(2, 3, device=d).copy_(m.ones(2, device=d))),
    ("bigger_src", lambda m, d: m.zeros(3, device=d).copy_(m.ones(1, 3, device=d))),
    ("0d_dst", lambda m, d: m.zeros((), device=d).copy_(m.ones(1, device=d))),
    ("list", lambda m, d: m.zeros(3, device=d).copy_([1, 2, 3])),
    ("partial_overlap", lambda m, d: (lambda a: a[1:].copy_(a[:-1]))(m.arange(5, device=d))),
    ("transpose_overlap", lambda m, d: (lambda a: a.copy_(a.t()))(m.arange(4.0, device=d).view(2, 2))),
    ("expanded_dst", lambda m, d: m.zeros(1, device=d).expand(3).copy_(m.ones(3, device=d))),
]


@pytest.mark.parametrize("name, fn", COPY_ERRORS, ids=[c[0] for c in COPY_ERRORS])
def test_copy_errors(device, name, fn):
    torch = pytest.importorskip("torch")
    errs = []
    for m, d in ((torch, "cpu"), (clgrad, device)):
        with pytest.raises(Exception) as info:
            fn(m, d)
        errs.append(info.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])


# (name, op) allowed in torch although source and destination share memory
COPY_SAME_MEMORY = [
    ("self", lambda m, d: (lambda a: a.copy_(a))(m.arange(3, device=d))),
    ("same_view", lambda m, d: (lambda a: a.copy_(a.view(3)))(m.arange(3.0, device=d))),
    ("columns", lambda m, d: (lambda a: (a[:, 0].copy_(a[:, 1]), a)[1])(m.arange(4.0, device=d).view(2, 2))),
    ("disjoint", lambda m, d: (lambda a: (a[:2].copy_(a[2:]), a)[1])(m.arange(4.0, device=d))),
    ("interleaved", lambda m, d: (lambda a: (a[::2].copy_(a[1::2]), a)[1])(m.arange(6.0, device=d))),
]


@pytest.mark.parametrize("name, fn", COPY_SAME_MEMORY, ids=[c[0] for c in COPY_SAME_MEMORY])
def test_copy_same_memory(device, name, fn):
    torch = pytest.importorskip("torch")
    assert fn(clgrad, device).tolist() == fn(torch, "cpu").tolist()


# ---- .to() and friends -------------------------------------------------------------------------

# (name, conversion): applied to a clgrad and a torch tensor; shape, dtype, values and strides compared
CONVERSIONS = [
    ("to_dtype", lambda x, m: x.to(m.float16)), ("to_kw", lambda x, m: x.to(dtype=m.int32)),
    ("to_other", lambda x, m: x.to(m.zeros(1, dtype=m.int16))), ("to_cpu_double", lambda x, m: x.to("cpu", m.double)),
    ("to_cpu_kw", lambda x, m: x.to(device="cpu", dtype=m.int64)), ("cpu", lambda x, m: x.cpu()),
    ("float", lambda x, m: x.float()), ("double", lambda x, m: x.double()), ("half", lambda x, m: x.half()),
    ("long", lambda x, m: x.long()), ("int", lambda x, m: x.int()), ("short", lambda x, m: x.short()),
    ("char", lambda x, m: x.char()), ("byte", lambda x, m: x.abs().byte()), ("bool", lambda x, m: x.bool()),
    ("type_dtype", lambda x, m: x.type(m.int32)), ("type_name", lambda x, m: x.type(f"{m.__name__}.DoubleTensor")),
    ("to_T", lambda x, m: x.t().to(m.int32)), ("to_sliced", lambda x, m: x[:, ::2].to(m.float64)),
    ("to_nonblocking", lambda x, m: x.to("cpu", non_blocking=True)),
]


@pytest.mark.parametrize("name, fn", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_conversions_match_torch(device, name, fn):
    torch = pytest.importorskip("torch")
    arr = np.array([[1.5, -2.5, 0.0], [3.25, 100.0, -7.0]], np.float32)
    to_cpu = name in ("to_other", "to_cpu_double", "to_cpu_kw", "cpu", "type_name", "to_nonblocking")
    t = fn(torch.tensor(arr), torch)
    if t.dtype is torch.float64 and not to_cpu and not fp64_ok(device):  # float64 on a device that can't hold it
        with pytest.raises(TypeError, match=f"{device}.*cl_khr_fp64"):
            fn(clgrad.tensor(arr, device=device), clgrad)
        return
    c = fn(clgrad.tensor(arr, device=device), clgrad)
    assert c.shape == t.shape and c.stride() == t.stride() and c.dtype.name == str(t.dtype)[6:]
    assert c.tolist() == t.tolist()
    assert c.device == ("cpu" if to_cpu else device)


def test_to_identity_and_copy(device):
    x = clgrad.arange(6.0, device=device).view(2, 3)
    for same in (x.to(x.dtype), x.to(device), x.to(device, x.dtype), x.to(x), x.float(), x.type(clgrad.float32),
                 x.to(clgrad.device(device))):
        assert same is x
    c = x.to(x.dtype, copy=True)
    assert c is not x and c._storage is not x._storage and c.tolist() == x.tolist()
    assert x.cpu() is x if device == "cpu" else x.cpu().device == "cpu"
    assert clgrad.arange(3, device="cpu").to(device).device == device
    with pytest.raises(TypeError):
        x.to(3.5)
    with pytest.raises(TypeError):
        x.to(bogus=1)
    with pytest.raises(RuntimeError, match="Expected one of cpu, opencl device type"):
        x.to("cuda")


def test_opencl_method():
    devs = usable_opencl()
    if not devs:
        pytest.skip("no usable OpenCL device")
    t = clgrad.arange(3).opencl(int(devs[0][7:]))
    assert t.device == devs[0] and t.tolist() == [0, 1, 2]
    assert clgrad.arange(3).opencl().device.type == "opencl"


@pytest.mark.parametrize("dtype, name", [("float32", "FloatTensor"), ("float64", "DoubleTensor"), ("float16", "HalfTensor"),
                                         ("int64", "LongTensor"), ("int32", "IntTensor"), ("int16", "ShortTensor"),
                                         ("int8", "CharTensor"), ("uint8", "ByteTensor"), ("bool", "BoolTensor")])
def test_type_strings(device, dtype, name):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no fp64")
    x = clgrad.zeros(2, dtype=getattr(clgrad, dtype), device=device)
    where = "" if device == "cpu" else "opencl."
    assert x.type() == f"clgrad.{where}{name}"
    y = clgrad.zeros(2, device=device).type(x.type())
    assert y.dtype is x.dtype and y.device == device
    assert clgrad.zeros(2, device=device).type(f"torch.{name}").device == "cpu"  # torch's cpu names work too


def test_type_errors():
    x = clgrad.zeros(2)
    for bad in ("clgrad.Foo", "clgrad.float64", "float", float):
        with pytest.raises(ValueError, match="invalid type"):
            x.type(bad)


# ---- float64 / float16 -------------------------------------------------------------------------


def test_float64_without_fp64_names_device_and_extension(device, monkeypatch):
    if device == "cpu":
        pytest.skip("cpu always has float64")
    dev = runtime.get(int(device[7:]))
    monkeypatch.setattr(dev, "props", dataclasses.replace(dev.props, fp64=False))
    x = clgrad.ones(3, device=device)
    makers = [lambda: clgrad.zeros(2, dtype=clgrad.float64, device=device), lambda: x.double(),
              lambda: x.to(clgrad.float64), lambda: clgrad.tensor([1.0], dtype=clgrad.float64, device=device),
              lambda: clgrad.tensor(np.ones(2), device=device), lambda: clgrad.ones(2, dtype=clgrad.float64).to(device),
              lambda: clgrad.arange(0.0, 1.0, 0.5, dtype=clgrad.float64, device=device)]
    for fn in makers:
        with pytest.raises(TypeError) as info:
            fn()
        msg = str(info.value)
        assert "cl_khr_fp64" in msg and device in msg and dev.props.name in msg
    monkeypatch.undo()
    if dev.props.fp64:
        assert clgrad.zeros(2, dtype=clgrad.float64, device=device).tolist() == [0.0, 0.0]


def test_float16_storage_everywhere(device):
    vals = np.array([0.1, -2.5, 65504, 1e-5, 3.14159], np.float32)
    h = clgrad.tensor(vals, dtype=clgrad.float16, device=device)
    assert h.dtype is clgrad.float16 and h.element_size() == 2
    np.testing.assert_array_equal(h.cpu().numpy(), vals.astype(np.float16))
    np.testing.assert_array_equal(h.float().cpu().numpy(), vals.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(clgrad.ones(2, 2, dtype=clgrad.half, device=device).t().contiguous().cpu().numpy(),
                                  np.ones((2, 2), np.float16))
    z = clgrad.zeros(5, dtype=clgrad.float16, device=device)
    z[1:3] = 2.5
    z[3:].copy_(clgrad.tensor([7.0, 8.0], device=device))
    assert z.tolist() == [0.0, 2.5, 2.5, 7.0, 8.0]


# ---- the acceptance snippets -------------------------------------------------------------


def test_acceptance_snippets(device):
    d = device
    x = clgrad.zeros(5, 3, dtype=clgrad.long, device=d)
    assert x.dtype is clgrad.int64 and x.tolist() == [[0] * 3] * 5 and x.device == d
    y = clgrad.ones(5, 3, dtype=clgrad.long, device=d)
    y.add_(x)
    x.copy_(y)
    assert x.tolist() == [[1] * 3] * 5
    if hasattr(clgrad, "randn"):
        assert isinstance(clgrad.randn(1, device=d).item(), float)
    x = clgrad.arange(16.0, device=d).view(4, 4)
    v = x.view(-1, 8)
    assert v.shape == (2, 8) and v._storage is x._storage
    col = x[:, 1]
    assert col.tolist() == [1.0, 5.0, 9.0, 13.0] and col.stride() == (4,)
    o = clgrad.ones_like(x, device=d)
    assert o.device == d and o.shape == x.shape
    z = x.to(d)
    assert z is x
    w = z.to("cpu", clgrad.double)
    assert w.device == "cpu" and w.dtype is clgrad.float64 and w.tolist() == x.tolist()
    # numpy's float64 becomes float64, which a device without cl_khr_fp64 can't hold: float32 there
    c = clgrad.tensor(np.arange(12.0, dtype=np.float64 if fp64_ok(d) else np.float32).reshape(3, 4), device=d)
    c[:, 1] = c[:, 2]
    assert c[:, 1].tolist() == [2.0, 6.0, 10.0]
