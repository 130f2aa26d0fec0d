"""Views share storage: view/reshape/permute/expand/squeeze/.../indexing on every device and input
layout, checked for shape, strides, offset, values and sharing against PyTorch (numpy where it agrees),
writes through views and __setitem__, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.tensor import contiguous_format
from tests.conftest import fp64_ok

LAYOUTS = ("contiguous", "transposed", "sliced", "offset")
pytestmark = pytest.mark.filterwarnings("ignore:The use of `x.T` on tensors")  # PyTorch's deprecation, not ours


def build(m, arr: np.ndarray, layout: str, device="cpu"):
    """``arr`` as a tensor of module ``m`` (clgrad or torch) laid out as ``layout``, built by the same
    ops in both libraries so that strides and offsets are comparable."""
    if layout == "contiguous" or arr.ndim == 0:
        return m.tensor(arr, device=device)
    if layout == "transposed":
        return m.tensor(np.ascontiguousarray(arr.transpose()), device=device).permute(*reversed(range(arr.ndim)))
    if layout == "sliced":
        big = np.zeros(tuple(2 * n + 1 for n in arr.shape), arr.dtype)
        big[tuple(slice(1, None, 2) for _ in arr.shape)] = arr
        return m.tensor(big, device=device)[tuple(slice(1, None, 2) for _ in arr.shape)]
    flat = np.concatenate([np.zeros(3, arr.dtype), arr.reshape(-1)])
    return m.tensor(flat, device=device)[3:].view(arr.shape)


def shares(r, base) -> bool:
    if isinstance(r, clgrad.Tensor):
        return r._storage is base._storage
    return r.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def describe(r, base):
    """What must agree between clgrad and torch: shape, strides, offset, values, dtype name, sharing."""
    if not hasattr(r, "stride"):
        return r
    return (tuple(r.shape), tuple(r.stride()), r.storage_offset(), r.tolist(), str(r.dtype).split(".")[-1],
            shares(r, base))


def outcome(fn, x):
    """``fn(x)`` described, or the exception it raised (type and message, library names unified)."""
    try:
        return describe(fn(x), x)
    except Exception as exc:  # noqa: BLE001 - comparing failures is the point
        return type(exc), _unify(str(exc))


def _unify(msg: str) -> str:
    return msg.replace("clgrad.opencl.", "torch.").replace("clgrad.", "torch.")


def run_both(fn, shape, layout, device, dtype="float32"):
    """``fn`` on the same data and layout in clgrad (on ``device``) and torch: (clgrad's, torch's) outcome."""
    torch = pytest.importorskip("torch")
    arr = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return outcome(fn, build(clgrad, arr, layout, device)), outcome(fn, build(torch, arr, layout))


def run_error(fn, shape, layout, device):
    """Both raise: the same exception type, and the same message once the library name is swapped."""
    torch = pytest.importorskip("torch")
    arr = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
    errors = []
    for m, dev in ((torch, "cpu"), (clgrad, device)):
        with pytest.raises(Exception) as info:
            fn(build(m, arr, layout, dev))
        errors.append(info.value)
    return errors


# (name, input shape, op); each op is written once and applied to a clgrad and a torch tensor
VIEWS = [
    ("view-1,8", (2, 3, 4), lambda x: x.view(-1, 8)),
    ("view_tuple", (2, 3, 4), lambda x: x.view((4, 6))),
    ("view_split_dim", (2, 3, 4), lambda x: x.view(2, 3, 2, 2)),
    ("view_merge_lead", (2, 3, 4), lambda x: x.view(6, 4)),
    ("view_ones", (2, 3, 4), lambda x: x.view(1, 2, 1, 12, 1)),
    ("view_0d_to_1x1", (), lambda x: x.view(1, 1)),
    ("view_to_0d", (1,), lambda x: x.view(())),
    ("view_as", (2, 3, 4), lambda x: x.view_as(x.new_zeros(4, 6))),
    ("view_empty", (0, 3), lambda x: x.view(-1)),
    ("view_empty2", (0, 3), lambda x: x.view(3, 0)),
    ("reshape_view", (2, 3, 4), lambda x: x.reshape(4, -1)),
    ("reshape_T_copy", (2, 3, 4), lambda x: x.transpose(0, 2).reshape(-1)),
    ("reshape_T_view", (2, 3, 4), lambda x: x.transpose(0, 1).reshape(3, 2, 2, 2)),
    ("reshape_as", (2, 3, 4), lambda x: x.reshape_as(x.new_zeros(3, 8))),
    ("t", (3, 4), lambda x: x.t()),
    ("t_1d", (4,), lambda x: x.t()),
    ("t_0d", (), lambda x: x.t()),
    ("T", (2, 3, 4), lambda x: x.T),
    ("mT", (2, 3, 4), lambda x: x.mT),
    ("transpose", (2, 3, 4), lambda x: x.transpose(0, -1)),
    ("transpose_same", (2, 3, 4), lambda x: x.transpose(1, 1)),
    ("transpose_0d", (), lambda x: x.transpose(0, -1)),
    ("swapaxes", (2, 3, 4), lambda x: x.swapaxes(0, 1)),
    ("permute", (2, 3, 4), lambda x: x.permute(2, 0, 1)),
    ("permute_neg", (2, 3, 4), lambda x: x.permute(-1, 0, -2)),
    ("permute_list", (2, 3, 4), lambda x: x.permute([1, 2, 0])),
    ("expand", (3,), lambda x: x.expand(2, 3)),
    ("expand_keep", (3, 1), lambda x: x.expand(-1, 4)),
    ("expand_lead", (3, 1), lambda x: x.expand(2, 3, 5)),
    ("expand_0", (3, 1), lambda x: x.expand(3, 0)),
    ("expand_0d", (), lambda x: x.expand(2, 2)),
    ("expand_size", (1, 3), lambda x: x.expand(x.new_zeros(4, 3).shape)),
    ("expand_as", (3,), lambda x: x.expand_as(x.new_zeros(2, 3))),
    ("expand_expanded", (3,), lambda x: x.expand(2, 3).expand(4, 2, 3)),
    ("squeeze", (1, 2, 1, 3), lambda x: x.squeeze()),
    ("squeeze_0", (1, 2, 1, 3), lambda x: x.squeeze(0)),
    ("squeeze_not1", (1, 2, 1, 3), lambda x: x.squeeze(1)),
    ("squeeze_neg", (1, 2, 1, 3), lambda x: x.squeeze(-2)),
    ("squeeze_tuple", (1, 2, 1, 3), lambda x: x.squeeze((0, 2))),
    ("squeeze_tuple_mixed", (1, 2, 1, 3), lambda x: x.squeeze((0, -1))),
    ("squeeze_0d", (), lambda x: x.squeeze()),
    ("squeeze_0d_dim", (), lambda x: x.squeeze(-1)),
    ("unsqueeze0", (2, 3), lambda x: x.unsqueeze(0)),
    ("unsqueeze1", (2, 3), lambda x: x.unsqueeze(1)),
    ("unsqueeze_end", (2, 3), lambda x: x.unsqueeze(2)),
    ("unsqueeze_neg", (2, 3), lambda x: x.unsqueeze(-1)),
    ("unsqueeze_neg3", (2, 3), lambda x: x.unsqueeze(-3)),
    ("unsqueeze_0d", (), lambda x: x.unsqueeze(0)),
    ("unsqueeze_expanded", (3,), lambda x: x.expand(2, 3).unsqueeze(1)),
    ("flatten", (2, 3, 4), lambda x: x.flatten()),
    ("flatten_1", (2, 3, 4), lambda x: x.flatten(1)),
    ("flatten_0_1", (2, 3, 4), lambda x: x.flatten(0, 1)),
    ("flatten_same", (2, 3, 4), lambda x: x.flatten(1, 1)),
    ("flatten_0d", (), lambda x: x.flatten()),
    ("flatten_T", (2, 3, 4), lambda x: x.transpose(0, 2).flatten()),
    ("narrow", (2, 3, 4), lambda x: x.narrow(2, 1, 2)),
    ("narrow_neg", (2, 3, 4), lambda x: x.narrow(-1, -3, 2)),
    ("narrow_empty", (2, 3, 4), lambda x: x.narrow(1, 3, 0)),
    ("select", (2, 3, 4), lambda x: x.select(1, 2)),
    ("select_neg", (2, 3, 4), lambda x: x.select(-1, -1)),
    ("chain", (2, 3, 4), lambda x: x.permute(2, 0, 1)[1:, :, ::2].unsqueeze(0).transpose(0, 3).squeeze(0)),
]
IDS = [v[0] for v in VIEWS]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, shape, fn", VIEWS, ids=IDS)
def test_view_matches_torch(device, name, shape, fn, layout):
    got, expected = run_both(fn, shape, layout, device)
    assert got == expected


# (name, index): basic indexing, the same in numpy and torch
INDICES = [
    ("int", 1), ("neg_int", -1), ("ints", (1, -2)), ("all_ints", (1, 2, 3)), ("slice", slice(1, None)),
    ("step", (slice(None), slice(None, None, 2), slice(1, None, 2))), ("neg_bounds", (slice(None), slice(-2, None), slice(None, -1))),
    ("empty_slice", (slice(None), slice(3, 1))), ("past_end", (slice(None), slice(1, 100))),
    ("big_step", (Ellipsis, slice(None, None, 5))), ("none", (None, slice(None), None)),
    ("ellipsis_int", (Ellipsis, 1)), ("ellipsis_none", (Ellipsis, None)), ("int_ellipsis_int", (1, Ellipsis, 1)),
    ("ellipsis_only", Ellipsis), ("empty_tuple", ()), ("np_int", np.int64(1)), ("mixed", (None, 1, None, slice(0, 2), -1)),
    ("none_end", (0, 0, 0, None)),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, index", INDICES, ids=[i[0] for i in INDICES])
def test_getitem_vs_numpy(device, name, index, layout):
    arr = np.arange(24, dtype="float32").reshape(2, 3, 4)
    x = build(clgrad, arr, layout, device)
    r = x[index]
    expected = arr[index]
    assert tuple(r.shape) == expected.shape
    np.testing.assert_array_equal(np.asarray(r.cpu().numpy()), expected)
    assert r._storage is x._storage


@pytest.mark.parametrize("name, index", INDICES, ids=[i[0] for i in INDICES])
def test_getitem_strides_match_torch(device, name, index):
    got, expected = run_both(lambda x: x[index], (2, 3, 4), "sliced", device)
    assert got == expected


def test_index_with_0dim_int_tensor(device):
    x = clgrad.arange(6, device=device).view(2, 3)
    r = x[clgrad.tensor(1)]
    assert r.tolist() == [3, 4, 5] and r._storage is x._storage
    r[0] = 100
    assert x.tolist() == [[0, 1, 2], [100, 4, 5]]
    assert x[:, clgrad.tensor(1):].tolist() == [[1, 2], [4, 5]]


# (name, shape, op) that must fail like PyTorch; exact: the message is PyTorch's word for word
ERRORS = [
    ("view_incompatible", (2, 3, 4), lambda x: x.transpose(1, 2).view(-1), True),
    ("view_expanded", (3,), lambda x: x.expand(4, 3).view(12), True),
    ("view_bad_size", (2, 3, 4), lambda x: x.view(5, -1), True),
    ("view_two_infer", (2, 3, 4), lambda x: x.view(-1, -1), True),
    ("view_negative", (2, 3, 4), lambda x: x.view(-2, 12), True),
    ("view_ambiguous", (0, 3), lambda x: x.view(0, -1), True),
    ("view_float", (2, 3), lambda x: x.view(2.0, 3), False),
    ("reshape_bad", (2, 3), lambda x: x.reshape(4), True),
    ("transpose_oob", (2, 3, 4), lambda x: x.transpose(0, 3), True),
    ("transpose_0d", (), lambda x: x.transpose(0, 1), True),
    ("t_3d", (2, 3, 4), lambda x: x.t(), False),
    ("permute_short", (2, 3, 4), lambda x: x.permute(0, 1), True),
    ("permute_dup", (2, 3, 4), lambda x: x.permute(0, 1, 1), True),
    ("permute_oob", (2, 3), lambda x: x.permute(0, 2), True),
    ("expand_bad", (3,), lambda x: x.expand(2, 4), True),
    ("expand_fewer", (2, 3, 4), lambda x: x.expand(3, 4), True),
    ("expand_lead_infer", (3,), lambda x: x.expand(-1, 3), True),
    ("squeeze_oob", (1, 2), lambda x: x.squeeze(2), True),
    ("squeeze_dup", (1, 2, 1), lambda x: x.squeeze((0, 0)), True),
    ("unsqueeze_oob", (2, 3), lambda x: x.unsqueeze(3), True),
    ("flatten_order", (2, 3, 4), lambda x: x.flatten(2, 1), True),
    ("narrow_past", (2, 3, 4), lambda x: x.narrow(2, 3, 2), True),
    ("narrow_start", (2, 3, 4), lambda x: x.narrow(2, 5, 0), True),
    ("narrow_len", (2, 3, 4), lambda x: x.narrow(2, 1, -1), True),
    ("narrow_0d", (), lambda x: x.narrow(0, 0, 1), True),
    ("select_oob", (2, 3, 4), lambda x: x.select(1, 3), True),
    ("select_0d", (), lambda x: x.select(0, 0), True),
    ("index_oob", (2, 3, 4), lambda x: x[2], True),
    ("index_oob_neg", (2, 3, 4), lambda x: x[0, -4], True),
    ("index_too_many", (2, 3), lambda x: x[1, 1, 1], True),
    ("index_0d_int", (), lambda x: x[0], True),
    ("index_0d_slice", (), lambda x: x[:], True),
    ("index_zero_step", (2, 3), lambda x: x[::0], True),
    ("index_neg_step", (2, 3), lambda x: x[::-1], True),
    ("index_float", (2, 3), lambda x: x[1.0], True),
    ("stride_0d", (), lambda x: x.stride(0), True),
    ("size_0d", (), lambda x: x.size(-1), True),
    ("size_oob", (2, 3), lambda x: x.size(2), True),
    ("len_0d", (), lambda x: len(x), True),
    ("iter_0d", (), lambda x: list(x), True),
    ("item_many", (2, 3), lambda x: x.item(), True),
    ("item_empty", (0,), lambda x: x.item(), True),
    ("float_many", (2,), lambda x: float(x), True),
    ("bool_many", (2,), lambda x: bool(x), True),
    ("bool_empty", (0,), lambda x: bool(x), True),
]


@pytest.mark.parametrize("name, shape, fn, exact", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(device, name, shape, fn, exact):
    et, ec = run_error(fn, shape, "contiguous", device)
    assert type(ec) is type(et), (ec, et)
    if exact:
        assert _unify(str(ec)) == str(et)


# (name, op producing the view to overwrite): writes through a view land in the base
WRITES = [
    ("index", lambda x: x[1]), ("column", lambda x: x[:, 1]), ("step", lambda x: x[:, ::2, 1::2]),
    ("transpose", lambda x: x.transpose(0, 2)), ("permute_slice", lambda x: x.permute(1, 2, 0)[1:]),
    ("view", lambda x: x.view(6, 4)[2:4]), ("narrow", lambda x: x.narrow(2, 1, 2)),
    ("select", lambda x: x.select(2, 3)), ("unsqueeze", lambda x: x[0].unsqueeze(1)),
    ("none_ellipsis", lambda x: x[None, ..., 2]), ("flatten", lambda x: x[1].flatten()),
]


@pytest.mark.parametrize("how", ["fill_", "copy_", "zero_", "setitem"])
@pytest.mark.parametrize("name, fn", WRITES, ids=[w[0] for w in WRITES])
def test_writes_through_views(device, name, fn, how):
    torch = pytest.importorskip("torch")
    arr = np.arange(24, dtype="float32").reshape(2, 3, 4)
    bases = []
    for m, dev in ((torch, "cpu"), (clgrad, device)):
        base = m.tensor(arr, device=dev)
        v = fn(base)
        if how == "fill_":
            v.fill_(-7.5)
        elif how == "zero_":
            v.zero_()
        elif how == "copy_":
            v.copy_(m.arange(v.numel(), dtype=m.float32).view(v.shape) * -1)
        else:
            v[...] = -3
        bases.append(base.cpu().tolist())
    assert bases[1] == bases[0]


# (name, index, value maker(m, dev)) for __setitem__, compared with torch
SETITEMS = [
    ("scalar", (1, 2), lambda m, d: 99),
    ("row_scalar", 0, lambda m, d: -1),
    ("float_into_int", 0, lambda m, d: 2.7),
    ("bool_scalar", (slice(None), 0), lambda m, d: True),
    ("np_scalar", 1, lambda m, d: np.int32(5)),
    ("column", (slice(None), 1), lambda m, d: 7),
    ("tensor_row", 0, lambda m, d: m.tensor([5, 6, 7, 8], device=d)),
    ("broadcast_rows", slice(0, 2), lambda m, d: m.tensor([5, 6, 7, 8], device=d)),
    ("broadcast_col", (slice(None), slice(0, 2)), lambda m, d: m.tensor([[5], [6], [7]], device=d)),
    ("float_tensor", 0, lambda m, d: m.tensor([5.5, -6.5, 7.9, 8.1], device=d)),
    ("0d_tensor", 0, lambda m, d: m.tensor(5, device=d)),
    ("0d_cpu_tensor", 0, lambda m, d: m.tensor(5)),
    ("cpu_tensor", 0, lambda m, d: m.tensor([1, 2, 3, 4])),
    ("lead_ones", 0, lambda m, d: m.tensor([[5, 6, 7, 8]], device=d)),
    ("lead_ones_0d", (0, 0), lambda m, d: m.tensor([[5]], device=d)),
    ("ellipsis", Ellipsis, lambda m, d: 3),
    ("none", (None, 0), lambda m, d: 4),
    ("strided", (slice(None, None, 2), slice(1, None, 2)), lambda m, d: m.tensor([[10, 20], [30, 40]], device=d)),
]


@pytest.mark.parametrize("name, index, value", SETITEMS, ids=[s[0] for s in SETITEMS])
def test_setitem_matches_torch(device, name, index, value):
    torch = pytest.importorskip("torch")
    out = []
    for m, dev in ((torch, "cpu"), (clgrad, device)):
        a = m.arange(12, device=dev).view(3, 4)
        a[index] = value(m, dev)
        out.append(a.cpu().tolist())
    assert out[1] == out[0]


def test_setitem_column_from_column(device):
    """The issue's ``c[:, 1] = c[:, 2]``: same storage, interleaved but not overlapping."""
    dt = np.float64 if fp64_ok(device) else np.float32  # float64 can't be on a device without cl_khr_fp64
    c = clgrad.tensor(np.arange(12.0, dtype=dt).reshape(3, 4), device=device)
    c[:, 1] = c[:, 2]
    expected = np.arange(12.0, dtype=dt).reshape(3, 4)
    expected[:, 1] = expected[:, 2]
    np.testing.assert_array_equal(c.cpu().numpy(), expected)


# (name, index, value maker) that fail like PyTorch
SETITEM_ERRORS = [
    ("bad_shape", 0, lambda m, d: m.tensor([5, 6, 7], device=d), True),
    ("list", 0, lambda m, d: [1, 2, 3, 4], True),
    ("ndarray", 0, lambda m, d: np.arange(4), True),
    ("too_many", (0, 0, 0), lambda m, d: 1, True),
    ("overlap", slice(1, None), None, True),
]


@pytest.mark.parametrize("name, index, value, exact", SETITEM_ERRORS, ids=[s[0] for s in SETITEM_ERRORS])
def test_setitem_errors(device, name, index, value, exact):
    torch = pytest.importorskip("torch")
    errs = []
    for m, dev in ((torch, "cpu"), (clgrad, device)):
        a = m.arange(12, device=dev).view(3, 4)
        with pytest.raises(Exception) as info:
            a[index] = value(m, dev) if value is not None else a[:-1]
        errs.append(info.value)
    assert type(errs[1]) is type(errs[0])
    assert _unify(str(errs[1])) == str(errs[0]) or not exact


# ---- metadata ----------------------------------------------------------------------------------

# (name, shape, query); results compared with torch
META = [
    ("stride", (2, 3, 4), lambda x: x.stride()), ("stride_dim", (2, 3, 4), lambda x: x.stride(-1)),
    ("stride_T", (2, 3, 4), lambda x: x.transpose(0, 2).stride()), ("stride_0d", (), lambda x: x.stride()),
    ("stride_empty", (2, 0, 3), lambda x: x.stride()), ("stride_ones", (2, 1, 3), lambda x: x.stride()),
    ("offset", (2, 3, 4), lambda x: x[1, 2:].storage_offset()), ("size", (2, 3, 4), lambda x: tuple(x.size())),
    ("size_dim", (2, 3, 4), lambda x: x.size(1)), ("size_0d", (), lambda x: tuple(x.size())),
    ("shape_repr", (2, 3), lambda x: repr(x.shape).split(".")[1]), ("shape_repr_0d", (), lambda x: repr(x.shape).split(".")[1]),
    ("dim", (2, 3, 4), lambda x: x.dim()), ("ndim_0d", (), lambda x: x.ndim), ("numel", (2, 3, 4), lambda x: x.numel()),
    ("numel_empty", (2, 0), lambda x: x.numel()), ("nelement", (5,), lambda x: x.nelement()),
    ("element_size", (2,), lambda x: x.element_size()), ("nbytes", (2, 3), lambda x: x.nbytes),
    ("itemsize", (2, 3), lambda x: x.itemsize),
    ("item", (2, 3), lambda x: x[1, 2].item()), ("item_1elem", (1, 1), lambda x: x.item()),
    ("item_int", (2,), lambda x: x.long()[1].item()), ("item_bool", (2,), lambda x: x.bool()[1].item()),
    ("item_half", (2,), lambda x: (x + 0.1).half()[1].item()),
    ("tolist", (2, 3), lambda x: x.tolist()), ("tolist_T", (2, 3), lambda x: x.t().tolist()),
    ("tolist_0d", (), lambda x: x.tolist()), ("tolist_empty", (2, 0), lambda x: x.tolist()),
    ("tolist_int", (3,), lambda x: x.int().tolist()), ("tolist_bool", (3,), lambda x: x.bool().tolist()),
    ("len", (4, 2), lambda x: len(x)), ("iter", (2, 3), lambda x: [r.tolist() for r in x]),
    ("iter_T", (2, 3), lambda x: [r.tolist() for r in x.t()]),
    ("bool_true", (1,), lambda x: bool(x + 1)), ("bool_false", (), lambda x: bool(x)),
    ("int", (1,), lambda x: int(x + 3.7)), ("float", (), lambda x: float(x + 2)),
    ("index", (2,), lambda x: [10, 20, 30][x.long()[1]]),
    ("is_contiguous", (2, 3), lambda x: x.is_contiguous()), ("is_contiguous_T", (2, 3), lambda x: x.t().is_contiguous()),
    ("is_contiguous_ones", (3, 1), lambda x: x.t().is_contiguous()),
    ("is_contiguous_empty", (0, 3), lambda x: x.t().is_contiguous()),
    ("is_contiguous_expand", (1, 3), lambda x: x.expand(4, 3).is_contiguous()),
    ("is_contiguous_step", (2, 4), lambda x: x[:, ::2].is_contiguous()),
    ("is_floating_point", (2,), lambda x: (x.is_floating_point(), x.long().is_floating_point())),
]


@pytest.mark.parametrize("name, shape, fn", META, ids=[m[0] for m in META])
def test_metadata_matches_torch(device, name, shape, fn):
    got, expected = run_both(fn, shape, "contiguous", device)
    assert got == expected and type(got) is type(expected)


def test_size_is_a_tuple():
    s = clgrad.zeros(2, 3, 4).shape
    assert isinstance(s, clgrad.Size) and isinstance(s, tuple) and s == (2, 3, 4)
    assert repr(s) == "clgrad.Size([2, 3, 4])" and repr(clgrad.Size([])) == "clgrad.Size([])"
    assert isinstance(s[1:], clgrad.Size) and s[1:] == (3, 4) and s[-1] == 4
    assert isinstance(s + (5,), clgrad.Size) and (1,) + s == (1, 2, 3, 4) and isinstance((1,) + s, clgrad.Size)
    assert s.numel() == 24 and clgrad.Size([]).numel() == 1


# ---- contiguous, clone ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_contiguous_and_clone(device, layout):
    torch = pytest.importorskip("torch")
    arr = np.arange(24, dtype="float32").reshape(2, 3, 4)
    xc, xt = build(clgrad, arr, layout, device), build(torch, arr, layout)
    c = xc.contiguous()
    assert c.is_contiguous() and c.tolist() == arr.tolist()
    assert (c is xc) == xc.is_contiguous() == xt.is_contiguous()
    k = xc.clone()
    assert k._storage is not xc._storage and k.tolist() == arr.tolist()
    assert k.stride() == xt.clone().stride()  # a dense layout (the transpose) is preserved, as in torch
    assert xc.clone(memory_format=contiguous_format).is_contiguous()
    k.fill_(0)
    assert xc.tolist() == arr.tolist()


def test_clone_expanded_and_0d(device):
    e = clgrad.arange(3, device=device).expand(2, 3).clone()
    assert e.stride() == (3, 1) and e.tolist() == [[0, 1, 2]] * 2
    z = clgrad.tensor(5.0, device=device).clone()
    assert z.shape == () and z.item() == 5.0
    assert clgrad.zeros(2, 0, device=device).clone().shape == (2, 0)


# ---- fill_ / zero_ ----------------------------------------------------------------------------

FILLS = [("float32", 2.5), ("int32", 2.7), ("int64", -3), ("bool", 5), ("uint8", 300 % 256), ("float16", 1.5),
         ("float32", True), ("int64", clgrad.tensor(4))]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype, value", FILLS, ids=[f"{d}-{v}" for d, v in FILLS])
def test_fill(device, dtype, value, layout):
    torch = pytest.importorskip("torch")
    arr = np.zeros((2, 3), dtype=dtype)
    x = build(clgrad, arr, layout, device)
    x.fill_(value)
    tv = torch.tensor(value.item()) if isinstance(value, clgrad.Tensor) else value
    expected = torch.zeros(2, 3, dtype=getattr(torch, dtype)).fill_(tv)
    assert x.tolist() == expected.tolist() and x.dtype.name == dtype
    x.zero_()
    assert x.tolist() == np.zeros((2, 3), dtype).tolist()


def test_fill_errors(device):
    x = clgrad.zeros(2, device=device)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."):
        x.fill_(clgrad.tensor([3.0]))
    with pytest.raises(TypeError):
        x.fill_("a")
    with pytest.raises(TypeError):
        x.fill_(None)
    clgrad.zeros(1, device=device).expand(3).fill_(5)  # allowed, as in torch


# ---- random chains of view ops ----------------------------------------------------------------


def _chain_strategy():
    from hypothesis import strategies as st

    @st.composite
    def chain(draw):
        shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
        steps, dims = [], list(shape)
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["permute", "slice", "unsqueeze", "expand", "view", "select"]))
            n = len(dims)
            if kind == "permute":
                steps.append(("permute", tuple(draw(st.permutations(range(n))))))
                dims = [dims[i] for i in steps[-1][1]]
            elif kind == "slice" and n:
                d = draw(st.integers(0, n - 1))
                start, step = draw(st.integers(0, dims[d])), draw(st.integers(1, 3))
                steps.append(("slice", d, start, step))
                dims[d] = len(range(start, dims[d], step))
            elif kind == "unsqueeze" and n < 5:
                d = draw(st.integers(0, n))
                steps.append(("unsqueeze", d))
                dims.insert(d, 1)
            elif kind == "expand" and 1 in dims:
                target = [draw(st.integers(1, 3)) if k == 1 else k for k in dims]
                steps.append(("expand", tuple(target)))
                dims = target
            elif kind == "select" and n > 1 and all(dims):
                d = draw(st.integers(0, n - 1))
                steps.append(("select", d, draw(st.integers(-dims[d], dims[d] - 1))))
                dims.pop(d)
            elif kind == "view":
                steps.append(("reshape", (-1,) if draw(st.booleans()) else tuple(reversed(dims))))
                dims = [int(np.prod(dims))] if steps[-1][1] == (-1,) else list(steps[-1][1])
        return tuple(shape), steps

    return chain()


def _apply(x, steps):
    for s in steps:
        if s[0] == "permute":
            x = x.permute(*s[1])
        elif s[0] == "slice":
            x = x[(slice(None),) * s[1] + (slice(s[2], None, s[3]),)]
        elif s[0] == "unsqueeze":
            x = x.unsqueeze(s[1])
        elif s[0] == "expand":
            x = x.expand(*s[1])
        elif s[0] == "select":
            x = x.select(s[1], s[2])
        else:
            x = x.reshape(*s[1])
    return x


def test_random_view_chains_match_torch(device):
    """Chains of permute/slice/unsqueeze/expand/select/reshape: same shape, strides, offset, values and
    sharing as PyTorch, including where reshape must copy."""
    pytest.importorskip("torch")
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_chain_strategy())
    def check(case):
        shape, steps = case
        got, expected = run_both(lambda x: _apply(x, steps), shape, "contiguous", device)
        assert got == expected

    check()
