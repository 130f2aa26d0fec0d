"""The small dense linear algebra MultivariateNormal needs, composed from clgrad ops: a Cholesky factorization and
triangular solves of batched small matrices.

Each is a loop over the n rows or columns (n steps of a few elementwise ops and reductions over the batch), so it
runs on any device, costs O(n) launches, and is differentiable (to any order) through the ops it is made of. It
suits the event sizes of a distribution (n up to a few dozen); it is not a general LAPACK replacement.
"""
from __future__ import annotations

from ..ops.creation import arange, eye
from ..ops.joins import stack
from ..tensor import Tensor


class LinAlgError(RuntimeError):
    """A factorization that failed (PyTorch's ``torch.linalg.LinAlgError``, also a RuntimeError)."""


def _check_square(a: Tensor, fn: str) -> None:
    if a.dim() < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{fn}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def _factor(a: Tensor):
    """(L, pivots): column j of L from A's column j minus the earlier columns' products; ``pivots`` [..., n] are
    the values whose square roots form the diagonal (not positive where A is not positive definite)."""
    n = a.shape[-1]
    rows = arange(n, device=a.device)
    cols, pivots = [], []
    for j in range(n):
        pivot, rest = a[..., j, j], a[..., :, j]
        if j:
            done = stack(cols, -1)  # [..., n, j]
            row = done[..., j, :]
            pivot = pivot - (row * row).sum(-1)
            rest = rest - (done * row.unsqueeze(-2)).sum(-1)
        d = pivot.sqrt()
        below = (rest / d.unsqueeze(-1)).where(rows > j, 0.0)
        cols.append(below + d.unsqueeze(-1) * (rows == j).to(dtype=a.dtype))
        pivots.append(pivot)
    return stack(cols, -1), stack(pivots, -1)


def _symmetric(A: Tensor) -> Tensor:
    """A's lower triangle mirrored (PyTorch reads only the lower triangle), with the symmetric gradient PyTorch's
    cholesky backward gives: the value comes from the lower triangle, the gradient from (A + A^T) / 2."""
    mirrored = A.tril() + A.tril(-1).mT
    average = (A + A.mT) * 0.5
    return average + (mirrored - average).detach()


def cholesky_ex(A: Tensor):
    """(L, info) as ``torch.linalg.cholesky_ex``: info [...] is 0, or the order of the first leading minor that is
    not positive definite (L is then not meaningful from that column on)."""
    _check_square(A, "cholesky_ex")
    L, pivots = _factor(_symmetric(A))
    bad = ~(pivots > 0)
    first = bad.to(dtype=pivots.dtype).argmax(-1) + 1
    return L, first.where(bad.any(-1), 0)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower Cholesky factor L of symmetric positive definite A (L @ L.mT == A); raises LinAlgError with
    PyTorch's message when A is not positive definite."""
    _check_square(A, "cholesky")
    L, info = cholesky_ex(A)
    bad = info.reshape(-1)
    if bad.any().item():
        k = int(bad.ne(0).to(dtype=bad.dtype).argmax().item())
        where = f"(Batch element {k}): " if A.dim() > 2 else ""
        raise LinAlgError(f"linalg.cholesky: {where}The factorization could not be completed because the input is "
                          f"not positive-definite (the leading minor of order {int(bad[k].item())} is not "
                          f"positive-definite).")
    return L.mT if upper else L


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True) -> Tensor:
    """X with A @ X = B for triangular A [..., n, n] and B [..., n, k] (batch dims broadcast), by substitution;
    ``left=False`` solves X @ A = B."""
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper).mT
    n = A.shape[-1]
    xs: list = []  # the solved rows, in matrix order
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        acc = B[..., i, :]
        if xs:
            coef = A[..., i, i + 1:] if upper else A[..., i, :i]
            acc = acc - (coef.unsqueeze(-1) * stack(xs, -2)).sum(-2)
        x = acc / A[..., i, i].unsqueeze(-1)
        xs = [x, *xs] if upper else [*xs, x]
    return stack(xs, -2)


def cholesky_inverse(L: Tensor) -> Tensor:
    """(L @ L.mT)^-1 from its lower Cholesky factor L."""
    n = L.shape[-1]
    inv = solve_triangular(L, eye(n, dtype=L.dtype, device=L.device).expand(L.shape), upper=False)
    return inv.mT @ inv
