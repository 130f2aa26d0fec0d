"""``clgrad.sparse`` (``torch.sparse``): products and sums of sparse COO tensors.

>>> adj = clgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 1.0], (2, 2))
>>> clgrad.sparse.mm(adj, clgrad.eye(2)).tolist()
[[0.0, 1.0], [1.0, 0.0]]
"""
from __future__ import annotations

from .. import dtypes as D
from ..ops import sparse as _S
from ..ops import sparse_mm as _M

__all__ = ["mm", "addmm", "sum", "FloatTensor", "DoubleTensor", "LongTensor"]


def mm(mat1, mat2):
    """The product of a 2-D sparse COO matrix and a dense matrix (either order), as a dense tensor. Gradients flow
    to the dense operand and to the sparse operand's values."""
    return _M.mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` and dense ``mat`` and ``mat2``."""
    return _M.addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):  # noqa: A001 - torch's name
    """The sum of a sparse tensor's entries over ``dim`` (all when None): a dense tensor when every sparse dim is
    summed, else a coalesced sparse one. ``clgrad.sparse.sum(adj, dim=1)`` is each row's sum (sparse)."""
    if not getattr(input, "is_sparse", False):
        raise RuntimeError("sparse.sum: expected a sparse COO tensor; use clgrad.sum for dense tensors")
    return _S.sparse_sum(input, dim, dtype)


def _legacy(dt: D.dtype):
    def constructor(indices, values, size=None):
        return _S.sparse_coo_tensor(indices, values, size, dtype=dt)

    constructor.__doc__ = f"The legacy ``torch.sparse.{dt.tensor_type_name}(indices, values, size)`` constructor."
    return constructor


FloatTensor, DoubleTensor, LongTensor = _legacy(D.float32), _legacy(D.float64), _legacy(D.int64)
