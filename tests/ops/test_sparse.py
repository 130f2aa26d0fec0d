"""Sparse COO tensors (ops/sparse.py, ops/sparse_mm.py, clgrad.sparse) against numpy and torch: construction,
coalescing, conversions, sparse @ dense (the spmm primitive) and its gradients, a GCN layer, errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad import backends
from clgrad.autograd import gradcheck
from tests.backends.test_oclgrind import ERROR_MARKERS
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, make, quiet_gradcheck

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def _coo(rng, shape, nnz, dup=True, dense=()):
    """Random COO indices [len(shape), nnz] (with duplicates when ``dup``) and values [nnz, *dense]."""
    idx = np.stack([rng.integers(0, n, nnz) if n else np.zeros(nnz, np.int64) for n in shape]).astype(np.int64)
    if dup and nnz > 2:
        idx[:, -1] = idx[:, 0]
    return idx, rng.uniform(-2, 2, (nnz, *dense))


def _dense_of(idx, vals, shape):
    out = np.zeros(shape, vals.dtype)
    np.add.at(out, tuple(idx), vals)
    return out


def _skip64(device, dtype):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")


# ---- construction, coalescing, conversions ------------------------------------------------------------
@pytest.mark.parametrize("dense", [(), (2,)])
def test_construct_and_coalesce_like_torch(device, dense):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    idx, vals = _coo(rng, (4, 5), 9, dense=dense)
    vals = vals.astype(np.float32)
    s = clgrad.sparse_coo_tensor(make(idx, device), make(vals, device), (4, 5, *dense))
    ts = torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals), (4, 5, *dense))
    assert isinstance(s, clgrad.Tensor) and s.is_sparse and s.layout is clgrad.sparse_coo
    assert (s.shape, s.dtype, s.device, s._nnz()) == (clgrad.Size([4, 5, *dense]), clgrad.float32,
                                                       clgrad.device(device), 9)
    assert (s.sparse_dim(), s.dense_dim(), s.is_coalesced()) == (2, len(dense), False)
    assert_close(s.to_dense(), ts.to_dense().numpy())
    c, tc = s.coalesce(), ts.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert_close(c.indices(), tc.indices().numpy())
    assert_close(c.values(), tc.values().numpy())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()


def test_size_inference_dtypes_and_int32_indices(device):
    s = clgrad.sparse_coo_tensor([[0, 2], [1, 0]], [1, 2], device=device)
    assert s.shape == (3, 2) and s.dtype is clgrad.int64 and s.device == clgrad.device(device)
    i32 = clgrad.tensor([[0, 1], [2, 0]], dtype=clgrad.int32, device=device)
    s = clgrad.sparse_coo_tensor(i32, clgrad.tensor([1.0, 2.0], device=device), (2, 3), dtype=clgrad.float32)
    assert s._indices().dtype is clgrad.int64
    assert_close(s.to_dense(), np.array([[0, 0, 1], [2, 0, 0]], np.float32))
    empty = clgrad.sparse_coo_tensor(clgrad.zeros(2, 0, dtype=clgrad.int64), clgrad.zeros(0), (3, 3))
    assert empty.is_coalesced() and empty._nnz() == 0
    assert_close(empty.to(device).to_dense(), np.zeros((3, 3), np.float32))


@pytest.mark.parametrize("sparse_dim", [None, 1])
def test_to_sparse_round_trip(device, sparse_dim):
    torch = pytest.importorskip("torch")
    x = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32)
    args = () if sparse_dim is None else (sparse_dim,)
    s = make(x, device, "transposed").to_sparse(*args)
    ts = torch.from_numpy(x).to_sparse(*args)
    assert s.is_coalesced() and s.to_sparse() is s and s.to_sparse_coo() is s
    assert_close(s.indices(), ts.indices().numpy())
    assert_close(s.values(), ts.values().numpy())
    assert_close(s.to_dense(), x)
    d = make(x, device)
    assert d.to_dense() is d and not d.is_sparse and d.layout is clgrad.strided


def test_to_device_dtype_and_copies(device):
    s = clgrad.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 2.0, 3.0], (2, 2))
    moved = s.to(device)
    assert moved.device == clgrad.device(device) and moved._indices().device == clgrad.device(device)
    assert s.to("cpu") is s
    back = moved.double().cpu() if fp64_ok(device) else moved.cpu()
    assert back.is_sparse and back.device.type == "cpu"
    assert_close(back.to_dense(), np.array([[0, 1], [2, 3]], back.dtype.np))
    assert_close(moved.clone().to_dense(), np.array([[0, 1], [2, 3]], np.float32))
    assert "layout=clgrad.sparse_coo" in repr(moved) and "nnz=3" in repr(moved)


# ---- sparse @ dense ------------------------------------------------------------------------------------
# (M, K, N, nnz): empty rows, nnz 0, zero sizes, more rows than a work-group
MM_CASES = [(4, 5, 3, 6), (6, 3, 2, 0), (0, 3, 2, 0), (3, 0, 2, 0), (3, 4, 0, 5), (1, 1, 1, 1), (70, 40, 5, 90)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("M,K,N,nnz", MM_CASES)
def test_spmm_against_numpy(device, dtype, M, K, N, nnz):
    _skip64(device, dtype)
    rng = np.random.default_rng(M * 7 + nnz)
    idx, vals = _coo(rng, (M, K), nnz)
    idx[0, : nnz // 2] = min(1, M - 1) if M else 0  # crowd some rows, leave others empty
    vals = vals.astype(dtype)
    dense = rng.uniform(-2, 2, (K, N)).astype(dtype)
    s = clgrad.sparse_coo_tensor(make(idx, device), make(vals, device), (M, K))
    want = _dense_of(idx, vals, (M, K)) @ dense
    for layout in ("contiguous", "transposed", "sliced"):
        d = make(dense, device, layout)
        assert_close(s @ d, want, **TOL[dtype])
        assert_close(clgrad.sparse.mm(s.coalesce(), d), want, **TOL[dtype])
    assert_close(clgrad.mm(make(dense.T.copy(), device), s.t()), want.T, **TOL[dtype])


def test_spmm_front_ends_like_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    idx, vals = _coo(rng, (5, 4), 7)
    vals, dense, vec = vals.astype(np.float32), rng.uniform(-1, 1, (4, 3)).astype(np.float32), rng.uniform(
        -1, 1, 4).astype(np.float32)
    left = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    s = clgrad.sparse_coo_tensor(make(idx, device), make(vals, device), (5, 4))
    ts = torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals), (5, 4))
    d, v, lt = make(dense, device), make(vec, device), make(left, device)
    td, tv, tl = torch.from_numpy(dense), torch.from_numpy(vec), torch.from_numpy(left)
    assert_close(clgrad.spmm(s, d), torch.spmm(ts, td).numpy(), rtol=1e-5, atol=1e-5)
    assert_close(clgrad.matmul(s, v), torch.matmul(ts, tv).numpy(), rtol=1e-5, atol=1e-5)
    assert_close(lt @ s, (tl @ ts).numpy(), rtol=1e-5, atol=1e-5)
    assert_close(clgrad.mm(lt, s), torch.mm(tl, ts).numpy(), rtol=1e-5, atol=1e-5)
    bias = make(np.ones((5, 3), np.float32), device)
    want = torch.sparse.addmm(torch.ones(5, 3), ts, td, beta=0.5, alpha=2.0).numpy()
    assert_close(clgrad.sparse.addmm(bias, s, d, beta=0.5, alpha=2.0), want, rtol=1e-5, atol=1e-5)


def test_spmm_primitive_int_indices_and_bad_columns(device):
    """The primitive itself: int32 or int64 row pointers and columns, duplicate columns add, columns outside
    [0, K) are skipped, float16 accumulates in float32, integers wrap."""
    be = backends.get(clgrad.device(device))
    rowptr = np.array([0, 3, 3, 6], np.int64)
    cols = np.array([1, 1, 9, 0, -1, 2], np.int64)
    dense = np.arange(12).reshape(3, 4)
    for vdt, idt in (("float32", "int32"), ("float16", "int64"), ("int32", "int32"), ("int64", "int64")):
        vals = np.array([1, 2, 3, 4, 5, 6], vdt)
        out = clgrad.empty(3, 4, dtype=getattr(clgrad, vdt), device=device)
        be.spmm(out, make(rowptr.astype(idt), device), make(cols.astype(idt), device), make(vals, device),
                make(dense.astype(vdt), device, "transposed"))
        want = np.stack([3 * dense[1], np.zeros(4), 4 * dense[0] + 6 * dense[2]]).astype(vdt)
        assert_close(out, want)


# ---- autograd ------------------------------------------------------------------------------------------
def test_gradcheck_dense_operand_and_values(device):
    dt, kw = grad_precision(device)
    dtype = getattr(clgrad, dt)
    rng = np.random.default_rng(5)
    idx, vals = _coo(rng, (4, 3), 6)
    i = make(idx, device)
    v = make(vals, device, dtype=dtype).requires_grad_()
    d = make(rng.uniform(-1, 1, (3, 2)), device, dtype=dtype).requires_grad_()
    assert quiet_gradcheck(gradcheck, lambda v, d: clgrad.sparse.mm(clgrad.sparse_coo_tensor(i, v, (4, 3)), d),
                           (v, d), **kw)
    left = make(rng.uniform(-1, 1, (2, 4)), device, dtype=dtype).requires_grad_()
    assert quiet_gradcheck(gradcheck, lambda v, x: x @ clgrad.sparse_coo_tensor(i, v, (4, 3)), (v, left), **kw)
    assert quiet_gradcheck(gradcheck, lambda v: clgrad.sparse_coo_tensor(i, v, (4, 3)).coalesce().to_dense(), (v,),
                           **kw)
    assert quiet_gradcheck(gradcheck, lambda v, d: (clgrad.sparse_coo_tensor(i, v, (4, 3)) * d.t()[:4]).to_dense()
                           + clgrad.sparse_coo_tensor(i, v, (4, 3)), (v, make(rng.uniform(-1, 1, (3, 4)), device,
                                                                              dtype=dtype).requires_grad_()), **kw)


def test_sparse_leaf_gets_a_sparse_grad(device):
    torch = pytest.importorskip("torch")
    idx = np.array([[0, 1, 1], [2, 0, 2]])
    vals = np.array([1.0, 2.0, 3.0], np.float32)
    dense = np.arange(6, dtype=np.float32).reshape(3, 2)
    s = clgrad.sparse_coo_tensor(make(idx, device), make(vals, device), (2, 3), requires_grad=True)
    d = make(dense, device).requires_grad_()
    ts = torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals), (2, 3), requires_grad=True)
    td = torch.from_numpy(dense).requires_grad_()
    assert s.requires_grad and s.is_leaf
    (s @ d).pow(2).sum().backward()
    torch.sparse.mm(ts, td).pow(2).sum().backward()
    assert s.grad.is_sparse
    assert_close(s.grad.to_dense(), ts.grad.to_dense().numpy(), rtol=1e-5, atol=1e-5)
    assert_close(d.grad, td.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_gcn_layer_forward_backward_like_torch(device):
    """Two GCN layers (Kipf & Welling): adj_norm @ (x @ W), with a normalized adjacency built the usual way."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    n, f, h, c = 9, 6, 5, 3
    edges = rng.integers(0, n, (2, 20))
    edges = np.concatenate([edges, edges[::-1], np.tile(np.arange(n), (2, 1))], 1)  # symmetric, self loops
    x, w1, w2 = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((n, f), (f, h), (h, c)))
    outs = []
    for lib, tensor in ((clgrad, lambda a: make(a, device)), (torch, torch.from_numpy)):
        adj = lib.sparse_coo_tensor(tensor(edges), tensor(np.ones(edges.shape[1], np.float32)), (n, n)).coalesce()
        deg = lib.sparse.sum(adj, 1).to_dense()
        norm = deg.pow(-0.5)
        i = adj.indices()
        adj = lib.sparse_coo_tensor(i, adj.values() * norm[i[0]] * norm[i[1]], (n, n))
        params = [tensor(w).requires_grad_() for w in (w1, w2)]
        hidden = lib.relu(lib.spmm(adj, tensor(x) @ params[0]))
        out = adj @ (hidden @ params[1])
        out.log_softmax(1)[:, 0].sum().backward()
        outs.append([out.detach()] + [p.grad for p in params])
    for got, want in zip(*outs):
        assert_close(got, want.numpy(), rtol=1e-4, atol=1e-5)


# ---- sums and arithmetic ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1, 2, (1, 2)])
def test_sparse_sum_like_torch(device, dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    idx, vals = _coo(rng, (3, 4), 7, dense=(2,))
    vals = vals.astype(np.float32)
    s = clgrad.sparse_coo_tensor(make(idx, device), make(vals, device), (3, 4, 2))
    ts = torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals), (3, 4, 2))
    got = clgrad.sparse.sum(s) if dim is None else clgrad.sparse.sum(s, dim)
    want = torch.sparse.sum(ts) if dim is None else torch.sparse.sum(ts, dim)
    assert got.is_sparse == want.is_sparse
    if want.is_sparse:
        assert got.is_coalesced()
        assert_close(got.indices(), want.indices().numpy())
        got, want = got.to_dense(), want.to_dense()
    assert_close(got, want.numpy(), rtol=1e-5, atol=1e-5)
    method = s.sum() if dim is None else s.sum(dim)  # Tensor.sum on a sparse tensor is sparse.sum
    assert_close(method.to_dense() if method.is_sparse else method, want.numpy(), rtol=1e-5, atol=1e-5)


def test_arithmetic(device):
    a = np.array([[0, 1.0, 0], [2, 0, 3]], np.float32)
    b = np.array([[1, 1.0, 1], [0, 5, 0]], np.float32)
    s, t, d = make(a, device).to_sparse(), make(b, device).to_sparse(), make(b, device, "transposed")
    assert_close(d + s, a + b)
    assert_close(s + d, a + b)
    assert_close(d - s, b - a)
    both = s + t
    assert both.is_sparse and both.is_coalesced()
    assert_close(both.to_dense(), a + b)
    assert_close((s - t).to_dense(), a - b)
    for r, want in ((s * 2, a * 2), (2 * s, a * 2), (s / 4, a / 4), (-s, -a), (s * d, a * b)):
        assert r.is_sparse
        assert_close(r.to_dense(), want)
    assert_close(s.t().to_dense(), a.T)


# ---- errors --------------------------------------------------------------------------------------------
def test_bad_construction(device):
    i = make(np.array([[0, 1, 1, 0], [2, 0, 2, 2]]), device)
    v = make(np.ones(4, np.float32), device)
    cases = [
        (lambda: clgrad.sparse_coo_tensor(i, v, (2, 2)), "size is inconsistent with indices: for dim 1, size is 2 but "
                                                         "found index 2"),
        (lambda: clgrad.sparse_coo_tensor(-i, v, (2, 3)), "found negative index -1 for dim 0"),
        (lambda: clgrad.sparse_coo_tensor(i[0], v), r"indices must be sparse_dim x nnz, but got: \[4\]"),
        (lambda: clgrad.sparse_coo_tensor(i, v[:3]), "indices and values must have same nnz, but got nnz from "
                                                     "indices: 4, nnz from values: 3"),
        (lambda: clgrad.sparse_coo_tensor(i, v, (2, 3, 4)), r"'len\(size\) == sparse_dim \+ dense_dim' is not"),
        (lambda: clgrad.sparse_coo_tensor(i, v.reshape(4, 1), (2, 3, 2)), r"values has incorrect size, expected "
                                                                          r"\[4, 2\], got \[4, 1\]"),
    ]
    for fn, message in cases:
        with pytest.raises(RuntimeError, match=message):
            fn()


def test_bad_products_and_dense_only_ops(device):
    s = clgrad.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 3), device=device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"):
        s @ clgrad.ones(4, 2, device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Int"):
        clgrad.sparse.mm(s, clgrad.ones(3, 2, dtype=clgrad.int32, device=device))
    with pytest.raises(NotImplementedError, match="sparse @ sparse"):
        s @ s.t()
    with pytest.raises(RuntimeError, match="sparse_dim 3"):
        clgrad.sparse_coo_tensor([[0], [0], [0]], [1.0]) @ clgrad.ones(1, 1)
    with pytest.raises(RuntimeError, match="add: expected 'self' and 'other' to have same size"):
        clgrad.ones(3, 3, device=device) + s
    for fn, name in ((lambda: s.exp(), "exp"), (lambda: clgrad.relu(s), "relu"), (lambda: s.view(6), "view"),
                     (lambda: clgrad.cat([s, s]), "cat"), (lambda: s[0], "__getitem__"), (lambda: s + 1, "scalar")):
        with pytest.raises(NotImplementedError, match=f"{name}.*sparse COO.*to_dense"):
            fn()
    with pytest.raises(RuntimeError, match="sparse tensors do not have strides"):
        s.stride()


# ---- the kernel under the simulator: bounds ------------------------------------------------------------
@pytest.mark.oclgrind
@pytest.mark.parametrize("M,K,N,nnz", [(0, 3, 2, 0), (1, 1, 1, 1), (7, 5, 3, 11), (300, 9, 4, 40)])
def test_spmm_kernel_bounds(device, capfd, M, K, N, nnz):
    """Every launch shape (a tail past a work-group, empty rows, nnz 0) on strided operands; Oclgrind reports any
    read or write outside a buffer. The last row's range runs past nnz and one column is out of range: both are
    clamped / skipped by the kernel, as by the numpy reference."""
    rng = np.random.default_rng(M + nnz)
    rows = np.sort(rng.integers(0, max(M, 1), nnz))
    rowptr = np.searchsorted(rows, np.arange(M + 1)).astype(np.int32)
    if M:
        rowptr[-1] = nnz + 3
    cols = rng.integers(0, K, nnz)
    if nnz:
        cols[-1] = K
    vals = (rng.integers(-8, 8, nnz) / 4).astype(np.float32)
    dense = (rng.integers(-8, 8, (K, N)) / 4).astype(np.float32)
    outs = []
    for dev in (device, "cpu"):
        out = clgrad.empty(N, M, device=dev).t()
        backends.get(clgrad.device(dev)).spmm(out, make(rowptr, dev, "sliced"), make(cols, dev, "offset"),
                                              make(vals, dev, "sliced"), make(dense, dev, "transposed"))
        outs.append(out.cpu().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    err = capfd.readouterr().err
    assert not [m for m in ERROR_MARKERS if m.lower() in err.lower()], err[:4000]
