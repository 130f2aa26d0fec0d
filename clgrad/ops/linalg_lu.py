"""LU with partial pivoting and what is built on it, batched and on the device: ``linalg.lu_factor(_ex)``,
``linalg.lu``, ``lu_unpack``, ``linalg.lu_solve``, ``linalg.solve(_ex)``, ``linalg.inv(_ex)``, ``linalg.det``,
``linalg.slogdet`` and ``logdet`` (``linalg.matrix_power`` with a negative exponent inverts through ``inv``).

The factorization is LAPACK's blocked right-looking getrf: each 64-column panel is factored by the backend's
``getrf_panel`` primitive (one launch per panel, one work-group per matrix; float16 and bfloat16 go column by column
through ops instead: a batched argmax picks the pivot, a gather/scatter pair swaps whole rows), U12 is one unit
triangular solve and the trailing update is one matmul. The permutation rides along as an extra column of the
working matrix, so the row swaps carry it for free. Gradients are PyTorch's formulas as autograd Functions.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd import grad_mode
from ..autograd.function import Function
from ..tensor import Tensor
from .creation import arange, eye, tensor, zeros
from .gather import _along
from .indexing import _gather_raw
from .joins import cat
from .linalg_solve import (
    BLOCK,
    LinAlgError,
    batch_prefix,
    check_matrix,
    check_same,
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    first_failure,
    first_index,
    result_type,
    solve_triangular,
    triangular_solve,
    trsm,
)
from .views import broadcast_shapes

__all__ = ["det", "logdet", "slogdet", "inverse", "lu_unpack"]  # + legacy lu / lu_solve (see __init__)

LUFactor = result_type("linalg_lu_factor", "LU", "pivots")
LUFactorEx = result_type("linalg_lu_factor_ex", "LU", "pivots", "info")
LUResult = result_type("linalg_lu", "P", "L", "U")
LUUnpack = result_type("lu_unpack", "P", "L", "U")
SolveEx = result_type("linalg_solve_ex", "result", "info")
InvEx = result_type("linalg_inv_ex", "inverse", "info")
SlogDet = result_type("linalg_slogdet", "sign", "logabsdet")


# ---- the factorization ------------------------------------------------------------------------------------------
def _swap_rows(W: Tensor, r: Tensor) -> None:
    """Swap row 0 of W [b, m, c] (a view) with row r[i] of each batch element i, in place."""
    idx = r.reshape(-1, 1, 1).expand(W.shape[0], 1, W.shape[-1])
    mine = W[:, :1].clone()
    W[:, :1] = W.gather(1, idx)
    W.scatter_(1, idx, mine)


def _panel(W: Tensor, k: int, e: int, pivots: list) -> None:
    """Unblocked LU with partial pivoting of columns k..e-1 of W (rows k..m), swapping whole rows."""
    for j in range(k, e):
        r = W[:, j:, j].abs().argmax(-1)  # relative to row j
        pivots.append(r)
        _swap_rows(W[:, j:], r)
        pivot = W[:, j, j:j + 1]
        below = W[:, j + 1:, j]
        below.div_(pivot.where(pivot != 0, 1.0))  # a zero pivot has a zero column below it: LAPACK skips it
        if j + 1 < e:
            W[:, j + 1:, j + 1:e].sub_(below.unsqueeze(-1) * W[:, j, j + 1:e].unsqueeze(-2))


def _panels(W: Tensor, kmin: int):
    """The panel factorizations' pivots [b, kmin] (0-based rows); the blocked update between them."""
    fast = W.dtype in (D.float32, D.float64) and backends.get(W.device).panels_ok(W)
    if fast:
        be = backends.get(W.device)
        piv = zeros((W.shape[0], kmin), dtype=D.int32, device=W.device)
    n = W.shape[-1] - 1
    m, pivots = W.shape[-2], []
    for k in range(0, kmin, BLOCK):
        e = min(k + BLOCK, kmin)
        if fast:
            be.getrf_panel(W, piv, k, e)
        else:
            _panel(W, k, e, pivots)
        if e < n:
            U12 = trsm(W[:, k:e, k:e], W[:, k:e, e:n], upper=False, unitriangular=True)
            W[:, k:e, e:n] = U12
            if e < m:
                W[:, e:, e:n].sub_(W[:, e:, k:e] @ U12)
    if fast:
        return piv
    if not pivots:
        return zeros((W.shape[0], 0), dtype=D.int32, device=W.device)
    offsets = arange(1, kmin + 1, device=W.device)
    return (cat([p.unsqueeze(-1) for p in pivots], -1) + offsets).to(dtype=D.int32)


_ROWS: dict = {}  # (m, dtype, device) -> [1, m, 1] row numbers: arange writes from the host, which waits for the queue


def _row_numbers(m: int, dtype, device) -> Tensor:
    key = (m, dtype, device)
    rows = _ROWS.get(key)
    if rows is None:
        if len(_ROWS) > 64:
            _ROWS.clear()
        rows = _ROWS[key] = arange(m, dtype=dtype, device=device).reshape(1, m, 1)
    return rows


def getrf(A: Tensor):
    """Untracked (LU, pivots int32 1-based, perm int64, info int32) of A [..., m, n]; rows perm[i] of A form
    row i of P^T A = L U."""
    m, n = A.shape[-2:]
    batch = tuple(A.shape[:-2])
    rows = _row_numbers(m, A.dtype, A.device)
    flat = A.reshape(math.prod(batch), m, n)
    W = cat([flat, rows.expand(flat.shape[0], m, 1)], -1).contiguous()
    piv = _panels(W, min(m, n)).reshape(batch + (min(m, n),))
    LU = W[:, :, :n].reshape(batch + (m, n))
    perm = W[:, :, n].to(dtype=D.int64).reshape(batch + (m,))
    info = first_index(LU.diagonal(dim1=-2, dim2=-1) == 0)
    return LU, piv, perm, info


def perm_from_pivots(pivots: Tensor, m: int) -> Tensor:
    """int64 [..., m]: the row order LAPACK's 1-based swaps ``pivots`` [..., k] give (computed on the host: the
    swaps are sequential, and pivots are small integers)."""
    batch = tuple(pivots.shape[:-1])
    piv = np.asarray(pivots.cpu().numpy(), dtype=np.int64).reshape(math.prod(batch), pivots.shape[-1]) - 1
    perm = np.tile(np.arange(m), (piv.shape[0], 1))
    at = np.arange(piv.shape[0])
    for i in range(piv.shape[1]):
        mine = perm[:, i].copy()
        perm[:, i] = perm[at, piv[:, i]]
        perm[at, piv[:, i]] = mine
    return tensor(perm.reshape(batch + (m,)), device=pivots.device)


def _perm_matrix(perm: Tensor, dtype) -> Tensor:
    """P [..., m, m] with P[perm[i], i] = 1, so that A = P L U."""
    m = perm.shape[-1]
    return (perm.unsqueeze(-2) == arange(m, device=perm.device).unsqueeze(-1)).to(dtype=dtype)


def _permute_rows(B: Tensor, perm: Tensor) -> Tensor:
    """Rows perm[i] of B [..., m, k] (perm [..., m], batch dims broadcast). Untracked, the permutation (ours, in
    range) is not bounds-checked: the check reads a flag back, which would wait for the factorization."""
    batch = broadcast_shapes(B.shape[:-2], perm.shape[:-1])
    idx = perm.expand(tuple(batch) + (perm.shape[-1],)).unsqueeze(-1).expand(tuple(batch) + tuple(B.shape[-2:]))
    src = B.expand(tuple(batch) + tuple(B.shape[-2:]))
    if grad_mode.is_grad_enabled() and B.requires_grad:
        return src.gather(-2, idx)
    base, along, _ = _along(src, src.dim() - 2, idx)
    return _gather_raw(base, along, None, wrap=False, checked=False)


def _inverse_perm(perm: Tensor) -> Tensor:
    return perm.argsort(-1)


def lu_solve_core(LU: Tensor, perm: Tensor, B: Tensor, adjoint: bool = False) -> Tensor:
    """X with A X = B (``adjoint``: A^H X = B) for A = P L U given as (LU, perm); differentiable in LU and B."""
    if not adjoint:
        Y = solve_triangular(LU, _permute_rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular(LU, Y, upper=True)
    Y = solve_triangular(LU.mT, B, upper=False)
    Y = solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    return _permute_rows(Y, _inverse_perm(perm))


class LUFactorFn(Function):
    """(LU, pivots, info); backward as PyTorch's lu_factor_ex_backward for square A:
    gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H."""

    node_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, A):
        LU, piv, perm, info = getrf(A)
        ctx.save_for_backward(LU, perm)
        ctx.mark_non_differentiable(piv, info)
        return LU, piv, info

    @staticmethod
    def backward(ctx, gLU, _gp=None, _gi=None):
        LU, perm = ctx.saved_tensors
        m, n = LU.shape[-2:]
        k = min(m, n)
        L = LU[..., :, :k].tril(-1) + eye(m, k, dtype=LU.dtype, device=LU.device)
        U = LU[..., :k, :].triu()
        gL, gU = gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu()
        if m == n:
            phi = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
            X = solve_triangular(L.mT, phi, upper=True, unitriangular=True)  # L^-H phi
            X = solve_triangular(U.mT, X, upper=False, left=False)  # ... U^-H
        elif m < n:
            X = _lu_backward_wide(gL, gU, L, U, k)
        else:
            X = _lu_backward_tall(gL, gU, L, U, k)
        return _permute_rows(X, _inverse_perm(perm))


def _lu_backward_wide(gL, gU, L, U, k):
    """PyTorch's linalg_lu_backward for m < n: A1 = L^-H [gU1 + (L^H gL o 1_L - gU U^H o 1_U) U1^-H],
    A2 = L^-H gU2 (before the row permutation)."""
    X = solve_triangular(U[..., :k].mT, (L.mT @ gL - gU @ U.mT).tril(-1), upper=False, left=False)
    X = cat([X + gU[..., :k].triu(), gU[..., k:]], -1)
    return solve_triangular(L.mT, X, upper=True, unitriangular=True)


def _lu_backward_tall(gL, gU, L, U, k):
    """PyTorch's linalg_lu_backward for m > n: A1 = [gL1 + L1^-H (gU U^H o 1_U - L^H gL o 1_L)] U^-H,
    A2 = gL2 U^-H (before the row permutation)."""
    X = solve_triangular(L[..., :k, :].mT, (gU @ U.mT - L.mT @ gL).triu(), upper=True, unitriangular=True)
    X = cat([X + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
    return solve_triangular(U.mT, X, upper=False, left=False)


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):
    """``linalg.lu_factor_ex``: (LU, pivots, info) of A [..., m, n] with partial pivoting; info [...] int32 is 0
    or the 1-based index of the first zero on U's diagonal."""
    check_matrix(A, "lu_factor_ex", square=False)
    if not pivot:
        raise NotImplementedError("linalg.lu_factor_ex: clgrad factors with partial pivoting only (pivot=True)")
    LU, piv, info = LUFactorFn.apply(A)
    if check_errors:
        _raise_singular_lu(A, info, "linalg.lu_factor_ex")
    return LUFactorEx(LU, piv, info)


def _raise_singular_lu(A, info, fn: str) -> None:
    bad = first_failure(info)
    if bad is not None:
        k, i = bad
        raise RuntimeError(f"torch.{fn}: {batch_prefix(A, k)}U[{i},{i}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot: bool = True, out=None):
    """``linalg.lu_factor``: (LU, pivots) of A [..., m, n]; raises when U has a zero on its diagonal.

    >>> LU, pivots = clgrad.linalg.lu_factor(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    """
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    _raise_singular_lu(A, info, "linalg.lu_factor")
    return LUFactor(LU, piv)


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    """``torch.lu_unpack``: (P, L, U) with A = P L U from ``lu_factor``'s (LU, pivots); differentiable in LU."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    L = U = P = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        P = _perm_matrix(perm_from_pivots(LU_pivots, m), LU_data.dtype)
    return LUUnpack(P, L, U)


def lu(A, *, pivot: bool = True, out=None):
    """``linalg.lu``: (P, L, U) with A = P L U, L unit lower [..., m, k], U upper [..., k, n], k = min(m, n)."""
    check_matrix(A, "lu", square=False)
    LU, piv, _ = lu_factor_ex(A, pivot=pivot)
    m, n = A.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + eye(m, k, dtype=A.dtype, device=A.device)
    P = _perm_matrix(perm_from_pivots(piv, m), A.dtype)
    return LUResult(P, L, LU[..., :k, :].triu())


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None) -> Tensor:
    """``linalg.lu_solve``: X with A X = B (``adjoint``: A^H X = B; ``left=False``: X A = B) from A's
    ``lu_factor``; differentiable in LU and B."""
    check_matrix(LU, "lu_solve", "LU")
    check_matrix(B, "lu_solve", "B", square=False)
    check_same(LU, B, "lu_solve")
    perm = perm_from_pivots(pivots, LU.shape[-1])
    X = lu_solve_core(LU, perm, B, adjoint) if left else lu_solve_core(LU, perm, B.mT, not adjoint).mT
    return X if out is None else out.copy_(X)


def legacy_lu_solve(b, LU_data, LU_pivots, *, out=None) -> Tensor:
    """Legacy ``torch.lu_solve(b, LU_data, LU_pivots)``."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


def legacy_lu(A, pivot: bool = True, get_infos: bool = False, out=None):
    """Legacy ``torch.lu(A)``: (LU, pivots), plus info when ``get_infos``."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    return (LU, piv, info) if get_infos else (LU, piv)


# ---- solve, inv -----------------------------------------------------------------------------------------------
class Solve(Function):
    """(X, info) with A X = B; backward as PyTorch's: gB = A^-H g (from the saved LU), gA = -gB X^H."""

    node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        LU, _, perm, info = getrf(A)
        X = lu_solve_core(LU, perm, B)
        ctx.save_for_backward(A, LU, perm, X)
        ctx.mark_non_differentiable(info)
        return X, info

    @staticmethod
    def backward(ctx, g, _gi=None):
        A, LU, perm, X = ctx.saved_tensors
        # under create_graph the gradient must itself be differentiable in A: solve again through Solve
        gB = Solve.apply(A.mT, g)[0] if grad_mode.is_grad_enabled() else lu_solve_core(LU, perm, g, adjoint=True)
        return -(gB @ X.mT), gB


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False, out=None):
    """``linalg.solve_ex``: (X, info) with A X = B (``left=False``: X A = B); info [...] int32 is 0 or the
    1-based index of the first zero pivot of A's LU (A singular), where X is then not meaningful."""
    check_matrix(A, "solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    check_same(A, B, "solve")
    vector = _is_vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vector else (B if left else B.mT)
    n = A.shape[-1]
    if Bm.shape[-2] != n:
        shape = f"{B.shape[-1]}x1" if vector else "x".join(map(str, B.shape[-2:]))
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape})")
    X, info = Solve.apply(A if left else A.mT, Bm)
    X = X.squeeze(-1) if vector else (X if left else X.mT)
    if check_errors:
        _raise_singular_solve(A, info)
    return SolveEx(X if out is None else out.copy_(X), info)


def _raise_singular_solve(A, info) -> None:
    bad = first_failure(info)
    if bad is not None:
        raise LinAlgError(f"torch.linalg.solve: {batch_prefix(A, bad[0])}The solver failed because the input "
                          f"matrix is singular.")


def solve(A, B, *, left: bool = True, out=None) -> Tensor:
    """``linalg.solve``: X with A X = B (``left=False``: X A = B) by LU with partial pivoting; B [..., n, k] or a
    vector [..., n]; batch dims broadcast. Raises LinAlgError when A is singular.

    >>> clgrad.linalg.solve(clgrad.tensor([[3.0, 1.0], [1.0, 2.0]]), clgrad.tensor([9.0, 8.0]))  # tensor([2., 3.])
    """
    X, info = solve_ex(A, B, left=left, out=out)
    _raise_singular_solve(A, info)
    return X


def inv_ex(A, *, check_errors: bool = False, out=None):
    """``linalg.inv_ex``: (A^-1, info), info as ``solve_ex``'s."""
    check_matrix(A, "inv")
    X, info = Solve.apply(A, eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape))
    if check_errors:
        _raise_singular_inv(A, info)
    return InvEx(X if out is None else out.copy_(X), info)


def _raise_singular_inv(A, info) -> None:
    bad = first_failure(info)
    if bad is not None:
        k, i = bad
        raise LinAlgError(f"linalg.inv: {batch_prefix(A, k)}The diagonal element {i} is zero, the inversion could "
                          f"not be completed because the input matrix is singular.")


def inv(A, *, out=None) -> Tensor:
    """``linalg.inv``: A^-1 of square A [..., n, n]; raises LinAlgError when A is singular.

    >>> clgrad.linalg.inv(clgrad.tensor([[2.0, 0.0], [0.0, 4.0]]))  # tensor([[0.5, 0.], [0., 0.25]])
    """
    X, info = inv_ex(A, out=out)
    _raise_singular_inv(A, info)
    return X


def inverse(input, *, out=None) -> Tensor:
    """``torch.inverse``: ``linalg.inv``."""
    return inv(input, out=out)


# ---- determinants -----------------------------------------------------------------------------------------------
def _det_parts(A: Tensor):
    """(U's diagonal [..., n], the permutation's sign [...]) of A's LU, untracked."""
    LU, piv, _, _ = getrf(A)
    swaps = (piv != arange(1, piv.shape[-1] + 1, device=A.device, dtype=D.int32)).to(dtype=D.int64).sum(-1)
    return LU.diagonal(dim1=-2, dim2=-1), (1 - 2 * (swaps % 2)).to(dtype=A.dtype)


def _inv_adjoint(A: Tensor) -> Tensor:
    """A^-H, differentiable (no error on a singular A: its entries are then inf or nan)."""
    return Solve.apply(A, eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape))[0].mT


class Det(Function):
    """det A = sign(P) prod(diag U); gA = g det A^-H (PyTorch's formula for invertible A)."""

    node_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, A):
        diag, sign = _det_parts(A)
        d = diag.prod(-1) * sign
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        return (g * d).unsqueeze(-1).unsqueeze(-1) * _inv_adjoint(A)


class SlogDetFn(Function):
    """(sign, log|det A|); g_logabsdet A^-H (the sign of a real matrix is not differentiable)."""

    node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, A):
        diag, sign = _det_parts(A)
        s = sign * diag.sign().prod(-1)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(s)
        return s, diag.abs().log().sum(-1)

    @staticmethod
    def backward(ctx, _gs, g):
        (A,) = ctx.saved_tensors
        return g.unsqueeze(-1).unsqueeze(-1) * _inv_adjoint(A)


def det(A, *, out=None) -> Tensor:
    """``linalg.det`` / ``torch.det``: the determinant of square A [..., n, n], through its LU.

    >>> clgrad.linalg.det(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))  # tensor(-2.)
    """
    check_matrix(A, "det")
    d = Det.apply(A)
    return d if out is None else out.copy_(d)


def slogdet(A, *, out=None):
    """``linalg.slogdet`` / ``torch.slogdet``: (sign, logabsdet) with det A = sign * exp(logabsdet)."""
    check_matrix(A, "slogdet")
    return SlogDet(*SlogDetFn.apply(A))


def logdet(input) -> Tensor:
    """``torch.logdet``: log det A; nan where det A < 0 and -inf where it is 0."""
    check_matrix(input, "logdet")
    sign, logabs = SlogDetFn.apply(input)
    return logabs.where(sign >= 0, float("nan"))


def install(T) -> None:
    """Tensor methods: ``det``, ``logdet``, ``slogdet``, ``inverse``, ``lu_solve`` and the Cholesky family."""
    T.det, T.logdet, T.slogdet, T.inverse = det, logdet, slogdet, inverse
    T.lu_solve, T.lu = legacy_lu_solve, legacy_lu
    T.cholesky, T.cholesky_solve, T.cholesky_inverse = cholesky, cholesky_solve, cholesky_inverse
    T.triangular_solve = triangular_solve
