"""Sparse COO tensors: ``sparse_coo_tensor``, ``Tensor.to_sparse`` / ``to_dense``, ``coalesce``, and the
``SparseTensor`` type (a ``Tensor`` subclass, so ``isinstance(s, clgrad.Tensor)`` holds as in torch).

A sparse tensor is two dense tensors: ``indices`` [sparse_dim, nnz] (int64) and ``values`` [nnz, *dense_shape].
Everything is composed from dense ops on them (coalescing sorts linear keys with ``unique`` and sums duplicates
with ``index_add``), except sparse @ dense: the backends' ``spmm`` primitive (ops/sparse_mm.py). Autograd
sees only the values: an op on a sparse tensor is an op on its values, so gradients reach the values (a leaf
made by ``requires_grad=True``, or whatever tensor the values were built from).

Dense-only ops on a sparse tensor raise NotImplementedError naming the op and suggesting ``.to_dense()``: every
Tensor method a sparse tensor does not implement is replaced by such a stub (``install``), and a function that
reaches for the dense memory (``_strides``, ``_offset``, the storage's data) raises the same error.
"""
from __future__ import annotations

import math
import sys
from numbers import Number

from .. import dtypes as D
from ..tensor import Tensor, is_tensor, sparse_coo
from . import creation, joins
from . import reduction as R
from . import sparse_mm as SM
from .views import wrap_dim

__all__ = ["sparse_coo_tensor"]
_GENERIC = ("method", "fn", "wrapper", "checked", "apply", "forward", "backward", "inner")


def _op_name() -> str:
    """The public clgrad function the user called (the outermost clgrad frame with a public name)."""
    frame, name = sys._getframe(2), None
    while frame is not None and frame.f_globals.get("__name__", "").startswith("clgrad"):
        code = frame.f_code.co_name
        if code in _GENERIC:  # a generated front end (ops/math.py's ``fn``) keeps its op's name in ``name``
            code = frame.f_locals.get("name", code)
        if isinstance(code, str) and not code.startswith(("_", "<")) and code not in _GENERIC:
            name = code
        frame = frame.f_back
    return name or "this op"


def dense_only(op: str) -> NotImplementedError:
    return NotImplementedError(
        f"'{op}' is not implemented for sparse COO tensors (layout=clgrad.sparse_coo) in clgrad; convert with "
        ".to_dense() first"
    )


class _SparseStorage:
    """What a sparse tensor shows as ``_storage``: its device and a version (autograd's saved-tensor checks), and
    an error naming the op for anything a dense kernel would read."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    @property
    def device(self):
        return self.owner._v.device

    @property
    def dtype(self):
        return self.owner.dtype

    @property
    def version(self) -> int:
        return self.owner._v._version + self.owner._i._version

    def __getattr__(self, name):
        raise dense_only(_op_name())


def _no_dense(self):
    raise dense_only(_op_name())


class SparseTensor(Tensor):
    """A sparse COO tensor. Build one with ``clgrad.sparse_coo_tensor(indices, values, size)`` or
    ``x.to_sparse()``; ``s.to_dense()`` gives it back dense.

    >>> s = clgrad.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
    >>> (s @ clgrad.ones(3, 1)).tolist()
    [[3.0], [4.0]]
    """

    layout = sparse_coo
    is_sparse = True
    _strides = property(_no_dense)
    _offset = property(_no_dense)

    @classmethod
    def _new(cls, indices, values, shape, coalesced: bool, owned: bool = False) -> SparseTensor:
        """The sparse tensor over ``indices`` and ``values`` (no checks); ``owned``: the values are a leaf it made."""
        s = object.__new__(cls)
        s._shape, s.dtype = tuple(shape), values.dtype
        s.__dict__.update(_i=indices, _v=values, _coalesced=coalesced or indices.shape[1] <= 1, _owned=owned,
                          _csr=None)
        return s

    @property
    def _storage(self):
        return _SparseStorage(self)

    @property
    def device(self):
        return self._v.device

    # ---- autograd: the values carry it --------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._v.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        """Make this sparse tensor a leaf that requires grad: its ``grad`` is then sparse, over its indices."""
        v = self._v
        if v.grad_fn is not None:
            v.requires_grad_(requires_grad)  # PyTorch's error for a non-leaf when turning it off
            return self
        if not self._owned:
            self.__dict__.update(_v=v.detach(), _owned=True)
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._v.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._v.grad_fn is None

    @property
    def grad(self):
        g = self._v.grad if self._owned else None
        return None if g is None else SparseTensor._new(self._i, g, self._shape, self._coalesced)

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise RuntimeError("clgrad: a sparse tensor's grad can only be set to None")
        self._v.grad = None

    def detach(self) -> SparseTensor:
        return SparseTensor._new(self._i, self._v.detach(), self._shape, self._coalesced)

    def clone(self, memory_format=None) -> SparseTensor:
        return SparseTensor._new(self._i.clone(), self._v.clone(), self._shape, self._coalesced)

    # ---- structure ----------------------------------------------------------------------------------
    def sparse_dim(self) -> int:
        return self._i.shape[0]

    def dense_dim(self) -> int:
        return self._v.dim() - 1

    def _nnz(self) -> int:
        return self._i.shape[1]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self):
        return self._i

    def _values(self):
        return self._v

    def indices(self):
        """The [sparse_dim, nnz] int64 indices of a coalesced tensor (``_indices()`` for any)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._i

    def values(self):
        """The [nnz, *dense_shape] values of a coalesced tensor (``_values()`` for any)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._v

    def coalesce(self) -> SparseTensor:
        """Indices sorted (row-major) and unique, duplicates summed: ``self`` when already so."""
        return coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        return to_dense(self)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
        if layout not in (None, sparse_coo) or blocksize is not None:
            raise NotImplementedError(f"clgrad has sparse COO tensors only: to_sparse(layout={layout}) is not "
                                      "implemented")
        if sparse_dim not in (None, self.sparse_dim()):
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self.sparse_dim"
                               "() is not supported")
        return self

    to_sparse_coo = to_sparse

    def stride(self, dim=None):
        raise RuntimeError("sparse tensors do not have strides")

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("sparse tensors do not have is_contiguous")

    def to(self, *args, **kwargs) -> SparseTensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``: the indices and values moved and converted."""
        v = self._v.to(*args, **kwargs)
        if v is self._v:
            return self
        return SparseTensor._new(self._i.to(v.device), v, self._shape, self._coalesced)

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            where = "" if self.device.type == "cpu" else "opencl."
            return f"clgrad.{where}sparse.{self.dtype.tensor_type_name}"
        return self.to(dtype)

    def __repr__(self) -> str:
        pad = " " * len("tensor(indices=")
        indices = repr(self._i.cpu()).replace("\n", "\n" + pad)  # the device goes on the last line, as in torch
        values = repr(self._v.detach().cpu()).replace("\n", "\n" + " " * len("       values="))
        extra = f", device='{self.device}'" if self.device.type != "cpu" else ""
        extra += f", dtype={self.dtype!r}" if self.dtype is not D.get_default_dtype() else ""
        grad = f", grad_fn=<{type(self.grad_fn).__name__}>" if self.grad_fn is not None else \
            (", requires_grad=True" if self.requires_grad else "")
        return (f"tensor(indices={indices},\n       values={values},\n       size={tuple(self._shape)}, "
                f"nnz={self._nnz()}{extra}, layout=clgrad.sparse_coo{grad})")

    __str__ = __repr__

    # ---- arithmetic: sparse results, or dense ones where torch gives dense --------------------------
    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other):
        if not isinstance(other, Number) or isinstance(other, bool):
            raise dense_only("div by a tensor")
        return SparseTensor._new(self._i, self._v / other, self._shape, self._coalesced)

    div = __truediv__

    def __neg__(self):
        return SparseTensor._new(self._i, -self._v, self._shape, self._coalesced)

    neg = __neg__

    def __add__(self, other):
        if isinstance(other, Number):
            raise dense_only("add of a scalar (the result would be dense)")
        return add(self, other) if is_tensor(other) else NotImplemented

    def __radd__(self, other):
        return add(other, self) if is_tensor(other) else NotImplemented

    def __sub__(self, other):
        return add(self, -other) if is_tensor(other) else NotImplemented

    def __rsub__(self, other):
        return add(other, -self) if is_tensor(other) else NotImplemented

    def add(self, other, *, alpha=1):
        return add(self, other if alpha == 1 else other * alpha)

    def t(self) -> SparseTensor:
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense")
        return self.transpose(0, 1)

    def transpose(self, dim0, dim1) -> SparseTensor:
        """The sparse dims ``dim0`` and ``dim1`` swapped (their index rows exchanged)."""
        d0, d1 = wrap_dim(dim0, self.dim()), wrap_dim(dim1, self.dim())
        if max(d0, d1) >= self.sparse_dim():
            raise NotImplementedError("clgrad transposes the sparse dims of a sparse tensor only")
        order = list(range(self.sparse_dim()))
        order[d0], order[d1] = order[d1], order[d0]
        shape = list(self._shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        idx = self._i.index_select(0, creation.tensor(order, device=self.device))
        return SparseTensor._new(idx, self._v, shape, d0 == d1 and self._coalesced)

    def __matmul__(self, other):
        return SM.matmul(self, other) if is_tensor(other) else NotImplemented

    def __rmatmul__(self, other):
        return SM.matmul(other, self) if is_tensor(other) else NotImplemented

    def mm(self, mat2):
        return SM.mm(self, mat2)

    def matmul(self, other):
        return SM.matmul(self, other)

    def sum(self, dim=None, keepdim=False, dtype=None):
        if keepdim:
            raise NotImplementedError("clgrad: sum(keepdim=True) of a sparse tensor is not implemented")
        return sparse_sum(self, dim, dtype)


# ---- construction and conversion ------------------------------------------------------------------
def _as_tensor(x, dtype=None, device=None):
    if is_tensor(x):
        return x if dtype is None and device is None else x.to(device or x.device, dtype or x.dtype)
    return creation.tensor(x, dtype=dtype, device=device)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]``; duplicates add up (see ``coalesce``).

    ``size`` defaults to the smallest that holds every index. Indices are always checked against the size (torch
    checks only with ``check_invariants=True``): a bad index raises here, not later in a kernel.

    >>> clgrad.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3)).to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]]
    """
    values = _as_tensor(values, dtype, device)
    indices = _as_tensor(indices, device=values.device)
    indices = indices.to(D.int64)  # torch converts int32 (and even float) indices too
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sd, nnz = indices.shape
    if values.dim() == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: "
                           f"{values.shape[0] if values.dim() else 0}")
    lo, hi = _index_range(indices)
    if size is None:
        size = [h + 1 if nnz else 0 for h in hi] + list(values.shape[1:])
    size = tuple(int(n) for n in size)
    _check_size(size, sd, values, lo, hi)
    coalesced = bool(is_coalesced) if is_coalesced is not None else False
    out = SparseTensor._new(indices, values, size, coalesced)
    return out.requires_grad_() if requires_grad else out


def _index_range(indices):
    """Each sparse dim's smallest and largest index, in one host read."""
    sd, nnz = indices.shape
    if nnz == 0 or sd == 0:
        return [0] * sd, [-1] * sd
    both = joins.cat([R.amin(indices, 1), R.amax(indices, 1)]).tolist()
    return both[:sd], both[sd:]


def _check_size(size, sd: int, values, lo, hi) -> None:
    dd = values.dim() - 1
    if len(size) != sd + dd:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {dd}")
    if tuple(values.shape[1:]) != size[sd:]:
        want = [values.shape[0], *size[sd:]]
        raise RuntimeError(f"values has incorrect size, expected {want}, got {list(values.shape)}")
    for d in range(sd):
        if lo[d] < 0:
            raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
        if hi[d] >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{hi[d]}")


def linear_keys(indices, sizes):
    """The row-major position of each index column in a tensor of shape ``sizes`` (int64 [nnz])."""
    key = indices[0] if len(sizes) else creation.zeros(indices.shape[1], dtype=D.int64, device=indices.device)
    for d in range(1, len(sizes)):
        key = key * sizes[d] + indices[d]
    return key


def _unravel(keys, sizes):
    """linear_keys' inverse: the [len(sizes), nnz] indices of row-major positions."""
    if not sizes:
        return keys.new_zeros(0, keys.shape[0])
    rows, rest = [], keys
    for n in reversed(sizes[1:]):
        rows.append(rest.remainder(n))
        rest = rest.div(n, rounding_mode="floor")
    rows.append(rest)
    return joins.stack(rows[::-1])


def coalesce(s: SparseTensor) -> SparseTensor:
    """Indices sorted (row-major) and unique, duplicates' values summed (differentiably, by ``index_add``)."""
    if s._coalesced:
        return s
    sizes = s._shape[: s.sparse_dim()]
    uniq, inverse = linear_keys(s._i, sizes).unique(return_inverse=True)
    values = s._v.new_zeros((uniq.shape[0],) + tuple(s._v.shape[1:])).index_add(0, inverse, s._v)
    return SparseTensor._new(_unravel(uniq, sizes), values, s._shape, True)


def to_dense(s: SparseTensor):
    """The dense tensor (duplicates summed); differentiable with respect to the values."""
    sd = s.sparse_dim()
    flat = s._v.new_zeros((math.prod(s._shape[:sd]),) + tuple(s._shape[sd:]))
    return flat.index_add(0, linear_keys(s._i, s._shape[:sd]), s._v).reshape(s._shape)


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """The sparse COO form of a dense tensor (coalesced): its nonzero entries, or with ``sparse_dim`` < dim its
    nonzero slices over the first ``sparse_dim`` dims. ``x.to_sparse()``."""
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"clgrad has sparse COO tensors only: to_sparse(layout={layout}) is not implemented")
    sd = sparse_dim if sparse_dim is not None else self.dim() - (dense_dim or 0)
    if not 0 <= sd <= self.dim():
        raise RuntimeError(f"sparse_dim argument must be in [0,{self.dim()}] range, but {sd} is given")
    if sd == 0:
        return SparseTensor._new(creation.zeros(0, 1, dtype=D.int64, device=self.device), self.unsqueeze(0),
                                 self._shape, True)
    mask = self.ne(0)
    if sd < self.dim():
        mask = mask.reshape(tuple(self.shape[:sd]) + (-1,)).any(-1)
    indices = mask.nonzero().t().contiguous()
    values = self[tuple(indices[d] for d in range(sd))]
    return SparseTensor._new(indices, values, self._shape, True)


def _dense_to_dense(self, dtype=None, *, masked_grad=None):
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


# ---- arithmetic -------------------------------------------------------------------------------------
def _same_size(a, b) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size {list(a.shape)} "
                           f"while other has size {list(b.shape)} (FYI: dense-sparse addition does not currently "
                           "support broadcasting)")


def add(a, b):
    """sparse + dense and dense + sparse give dense; sparse + sparse gives sparse (coalesced)."""
    _same_size(a, b)
    if a.is_sparse and b.is_sparse:
        dt = D.promote_types(a.dtype, b.dtype)
        both = SparseTensor._new(joins.cat([a._i, b._i], 1), joins.cat([a._v.to(dt), b._v.to(dt)]), a._shape,
                                 False)
        return coalesce(both)
    s, d = (a, b) if a.is_sparse else (b, a)
    dt = D.promote_types(s.dtype, d.dtype)
    sd = s.sparse_dim()
    flat = d.to(dt).reshape((math.prod(s._shape[:sd]),) + tuple(s._shape[sd:]))
    return flat.index_add(0, linear_keys(s._i, s._shape[:sd]), s._v.to(dt)).reshape(s._shape)


def mul(s: SparseTensor, other):
    """sparse * scalar, or sparse * dense of the same shape: a sparse tensor over the same indices."""
    if isinstance(other, Number) and not isinstance(other, bool):
        return SparseTensor._new(s._i, s._v * other, s._shape, s._coalesced)
    if not is_tensor(other):
        return NotImplemented
    if other.is_sparse:
        raise dense_only("sparse * sparse")
    if tuple(other.shape) != s._shape:
        raise RuntimeError(f"mul: sparse * dense needs equal sizes in clgrad, got {list(s._shape)} and "
                           f"{list(other.shape)}")
    picked = other[tuple(s._i[d] for d in range(s.sparse_dim()))]
    return SparseTensor._new(s._i, s._v * picked, s._shape, s._coalesced)


def sparse_sum(s: SparseTensor, dim=None, dtype=None):
    """The sum over ``dim`` (all dims when None): dense when every sparse dim is summed, else sparse."""
    v = s._v if dtype is None else s._v.to(dtype)
    if dim is None:
        return v.sum()
    dims = sorted({wrap_dim(d, s.dim()) for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = s.sparse_dim()
    dense = [d - sd + 1 for d in dims if d >= sd]
    if dense:
        v = v.sum(dense)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:
        return v.sum(0)
    shape = [s._shape[d] for d in keep] + [n for d, n in enumerate(s._shape) if d >= sd and d not in dims]
    idx = s._i.index_select(0, creation.tensor(keep, device=s.device))
    return coalesce(SparseTensor._new(idx, v, shape, False))


# ---- dense-only methods raise on a sparse tensor -----------------------------------------------------
_KEEP = {"size", "dim", "numel", "nelement", "element_size", "is_floating_point", "get_device", "cpu", "opencl",
         "float", "double", "half", "long", "int", "short", "char", "byte", "bool", "requires_grad_", "__init__",
         "__len__", "__hash__", "__repr__", "__str__"}


def _stub(name: str):
    def method(self, *args, **kwargs):
        raise dense_only(name)

    method.__name__ = name
    return method


def install(T) -> None:
    """``Tensor.to_sparse``/``to_sparse_coo``/``to_dense``, and the dense-only stubs of SparseTensor."""
    T.to_sparse = T.to_sparse_coo = to_sparse
    T.to_dense = _dense_to_dense
    own = set(vars(SparseTensor))
    for cls in reversed(T.__mro__[:-1]):
        for name, attr in vars(cls).items():
            public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
            if public and callable(attr) and not isinstance(attr, (type, staticmethod, classmethod)) \
                    and name not in own and name not in _KEEP:
                setattr(SparseTensor, name, _stub(name))
