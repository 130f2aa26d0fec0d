"""Sparse @ dense: the one sparse op with a kernel of its own (the backends' ``spmm`` primitive), its autograd
Function, and the products' front ends (``mm``, ``matmul``/``@``, ``spmm``, ``addmm``) that ``linalg`` and the
sparse tensor dispatch to when an operand is sparse.

A 2-D COO pattern becomes CSR: row pointers from a bincount and a cumsum of the row indices, the entries put in row
order by a stable argsort unless the tensor is coalesced (then they already are). Duplicate entries need no
coalescing: a row's kernel sums them. The pattern and its transpose (for the dense operand's gradient,
``A^T @ grad``) are cached on the sparse tensor, so a constant adjacency matrix (GCN) costs one launch per product
and two per backward after the first.

Sparse tensors are duck-typed here (``_i``, ``_v``, ``_shape``, ``_coalesced``, ``_csr``: ops/sparse.py), so this
module sits below ops/sparse.py and ops/linalg.py, which both import it.
"""
from __future__ import annotations

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from . import creation, joins
from . import pointwise as P

__all__ = ["spmm"]


class Pattern:
    """The CSR form of a 2-D COO pattern with M rows and K columns: ``rowptr`` [M + 1] and ``cols`` [nnz] in row
    order, ``perm`` taking row order to COO order (None when they agree), and the COO ``rows``/``coo_cols``."""

    def __init__(self, rows, cols, M: int, K: int, row_sorted: bool):
        self.rows, self.coo_cols, self.M, self.K = rows, cols, M, K
        self.perm = None if row_sorted or rows.shape[0] <= 1 else rows.argsort(stable=True)
        counts = rows.bincount(minlength=M)  # length M: the indices were checked against the size
        self.rowptr = joins.cat([creation.zeros(1, dtype=D.int64, device=rows.device), counts.cumsum(0)])
        self.cols = cols if self.perm is None else cols.index_select(0, self.perm)
        self._t = None

    def transposed(self) -> Pattern:
        """The pattern of the transpose (its ``perm`` also leads to this pattern's COO order)."""
        if self._t is None:
            self._t = Pattern(self.coo_cols, self.rows, self.K, self.M, False)
        return self._t


def pattern(s) -> Pattern:
    """The CSR pattern of the 2-D sparse tensor ``s``, cached on it until its indices change."""
    cached = s._csr
    version = s._i._version
    if cached is None or cached[0] != version:
        M, K = s._shape
        cached = (version, Pattern(s._i[0], s._i[1], M, K, s._coalesced))
        s.__dict__["_csr"] = cached
    return cached[1]


def _spmm_raw(p: Pattern, values, dense):
    v = values if p.perm is None else values.index_select(0, p.perm)
    out = Tensor._empty((p.M, dense.shape[1]), dense.dtype, dense.device)
    backends.get(dense.device).spmm(out, p.rowptr, p.cols, v, dense)
    return out


def _product(p: Pattern, values, dense):
    """A @ dense for the sparse A of pattern ``p`` and ``values`` (in COO order)."""
    if needs_graph(values, dense):
        return SparseMM.apply(values, dense, p)
    return _spmm_raw(p, values, dense)


class SparseMM(Function):
    """``A @ dense`` with A given by its values and (constant) pattern. Gradients: ``A^T @ grad`` for the dense
    operand (the transposed pattern through the same kernel), and for the values
    ``grad_values[k] = sum_j grad[row_k, j] * dense[col_k, j]``, both written in differentiable ops."""

    node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, values, dense, p):
        ctx.pattern = p
        need = ctx.needs_input_grad
        ctx.save_for_backward(values if need[1] else None, dense if need[0] else None)
        return _spmm_raw(p, values, dense)

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        p, need = ctx.pattern, ctx.needs_input_grad
        gv = (grad.index_select(0, p.rows) * dense.index_select(0, p.coo_cols)).sum(1) if need[0] else None
        gd = _product(p.transposed(), values, grad) if need[1] else None
        return gv, gd, None


def _shape(t) -> str:
    return "x".join(str(n) for n in t.shape)


def _check(s, d, op: str) -> None:
    if not is_tensor(d):
        raise TypeError(f"{op}(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"{op}: the sparse operand must be a 2-D matrix with 2 sparse dims and 0 dense dims, got "
                           f"sparse_dim {s.sparse_dim()} and dense_dim {s.dense_dim()}")
    if d.dim() != 2:
        raise RuntimeError(f"{op}: the dense operand must be a matrix, got {d.dim()}-D")
    if d.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {s.dtype.scalar_name} but found {d.dtype.scalar_name}")
    if s.dtype is D.bool:
        raise NotImplementedError(f"'{op}' is not implemented for dtype bool on device {s.device}")
    P.common_device([s._v, d])


def mm(mat1, mat2):
    """``mat1 @ mat2`` where one operand is a 2-D sparse COO tensor and the other dense: a dense result."""
    if mat1.is_sparse and getattr(mat2, "is_sparse", False):
        raise NotImplementedError("sparse @ sparse is not implemented in clgrad: convert one operand with .to_dense()")
    if mat1.is_sparse:
        _check(mat1, mat2, "mm")
        if mat1.shape[1] != mat2.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape(mat1)} and {_shape(mat2)})")
        return _product(pattern(mat1), mat1._v, mat2)
    _check(mat2, mat1, "mm")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape(mat1)} and {_shape(mat2)})")
    # dense @ sparse = (sparse^T @ dense^T)^T: the transposed pattern through the same kernel
    return _product(pattern(mat2).transposed(), mat2._v, mat1.t()).t()


def matmul(input, other):
    """``input @ other`` with a sparse operand: 2-D @ 2-D as ``mm``, or a 1-D dense operand as a vector."""
    dense = other if input.is_sparse else input
    if is_tensor(dense) and not dense.is_sparse and dense.dim() == 1:
        if input.is_sparse:
            return mm(input, other.unsqueeze(1)).squeeze(1)
        return mm(input.unsqueeze(0), other).squeeze(0)
    if is_tensor(dense) and not dense.is_sparse and dense.dim() != 2:
        raise NotImplementedError(f"clgrad multiplies a sparse matrix by a 1-D or 2-D dense operand only, got "
                                  f"{dense.dim()}-D")
    return mm(input, other)


def spmm(input, mat2):
    """``clgrad.spmm(sparse, dense)``: the dense product of a 2-D sparse COO matrix and a dense matrix."""
    if not getattr(input, "is_sparse", False):
        raise RuntimeError("spmm: expected the first argument to be a sparse COO tensor; use clgrad.mm for dense")
    return mm(input, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (dense ``input`` and ``mat2``)."""
    product = mm(mat1, mat2)
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)
