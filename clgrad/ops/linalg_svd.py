"""The SVD and what is built on it, batched and on the device: ``linalg.svd``/``svdvals``, legacy ``svd``,
``linalg.pinv``/``pinverse``, ``linalg.matrix_rank``, ``linalg.cond``, ``linalg.lstsq``, ``svd_lowrank``,
``pca_lowrank``, and ``linalg.tensorinv``/``tensorsolve``.

The backend's ``svd_jacobi`` primitive (numpy's LAPACK on cpu, one-sided Jacobi on OpenCL) leaves A V with orthogonal
columns, their norms s and V; U is A V / s. Where U needs columns that no nonzero singular value defines (zero or
negligible singular values, or ``full_matrices`` with m > n), U is completed by a Householder QR of its defined
columns: Q's leading columns are those columns up to sign, and the rest span their orthogonal complement. Gradients
are PyTorch's svd_backward as an autograd Function; everything else is composed from differentiable ops.
"""
from __future__ import annotations

import math

from .. import backends
from .. import dtypes as D
from ..autograd import grad_mode
from ..autograd.function import Function
from ..random import randn
from ..tensor import Tensor
from .creation import empty, zeros
from .joins import cat
from .linalg_eig import EighFn, check_precision
from .linalg_lu import inv, solve
from .linalg_qr import linalg_qr, qr_raw
from .linalg_solve import check_matrix, check_same, result_type

__all__ = ["svd", "pinverse", "svd_lowrank", "pca_lowrank"]

SVDResult = result_type("linalg_svd", "U", "S", "Vh")
LegacySVD = result_type("svd", "U", "S", "V")
LstsqResult = result_type("linalg_lstsq", "solution", "residuals", "rank", "singular_values")


# ---- the factorization ------------------------------------------------------------------------------------------
def _complete(U: Tensor, good: Tensor, cols: int) -> Tensor:
    """[b, M, cols] orthonormal columns whose first ones are U's ``good`` columns (U [b, M, N], good ones first)."""
    U = U * good.unsqueeze(-2).to(dtype=U.dtype)
    if cols > U.shape[-1]:
        U = cat([U, zeros((U.shape[0], U.shape[1], cols - U.shape[-1]), dtype=U.dtype, device=U.device)], -1)
    Q, R = qr_raw(U, "reduced" if cols <= U.shape[-2] else "complete")
    sign = R.diagonal(dim1=-2, dim2=-1)[..., :cols]
    sign = (sign >= 0).to(dtype=U.dtype) * 2 - 1
    return Q[..., :cols] * sign.unsqueeze(-2)


def svd_raw(A: Tensor, full_matrices: bool = False, compute_uv: bool = True):
    """Untracked (U, S, Vh) of A [..., m, n] (S alone when not ``compute_uv``)."""
    m, n = A.shape[-2:]
    batch, k, wide = tuple(A.shape[:-2]), min(m, n), m < n
    with grad_mode.no_grad():
        X = A.mT if wide else A
        M, N = X.shape[-2:]
        work = X.reshape(math.prod(batch), M, N).contiguous().clone()
        s = empty(work.shape[0], N, dtype=A.dtype, device=A.device)
        v = empty(work.shape[0], N, N, dtype=A.dtype, device=A.device)
        if work.numel():
            backends.get(A.device).svd_jacobi(s, v, work)
        if not compute_uv:
            return s.reshape(batch + (k,))
        eps = 2.220446049250313e-16 if A.dtype is D.float64 else 1.1920929e-07
        good = s > (s[:, :1] * (M * eps)).clamp(min=1e-300 if A.dtype is D.float64 else 1e-37)
        U = work / s.where(good, 1.0).unsqueeze(-2)
        cols = M if full_matrices else N
        if cols > N or (work.numel() and not bool(good.all().item())):
            U = _complete(U, good, cols)
    U, V = U.reshape(batch + tuple(U.shape[-2:])), v.reshape(batch + (N, N))
    S = s.reshape(batch + (k,))
    return (V, S, U.mT) if wide else (U, S, V.mT)


class SVDFn(Function):
    """(U, S, Vh) = svd(A, full_matrices=False); backward: PyTorch's svd_backward (real case)."""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A, full_matrices):
        U, S, Vh = svd_raw(A, full_matrices)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        U, Vh, gU, gVh = U[..., :k], Vh[..., :k, :], gU[..., :k], gVh[..., :k, :]
        m, n = U.shape[-2], Vh.shape[-1]
        UhgU = U.mT @ gU
        VhgV = Vh @ gVh.mT
        UhgU, VhgV = UhgU - UhgU.mT, VhgV - VhgV.mT
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + S2.new_ones(k).diag_embed()
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E + gS.diag_embed()
        if m > n:
            gUSinv = gU / S.unsqueeze(-2)
            gA = (U @ gA + gUSinv - U @ (U.mT @ gUSinv)) @ Vh
        elif m < n:
            SinvgVh = gVh / S.unsqueeze(-1)
            gA = U @ (gA @ Vh + SinvgVh - (SinvgVh @ Vh.mT) @ Vh)
        else:
            gA = U @ gA @ Vh
        return gA, None


class SvdValsFn(Function):
    """The singular values of A; gA = U diag(gS) V^T."""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A):
        U, S, Vh = svd_raw(A)
        ctx.save_for_backward(U, Vh)
        return S

    @staticmethod
    def backward(ctx, gS):
        U, Vh = ctx.saved_tensors
        return (U * gS.unsqueeze(-2)) @ Vh


def _check(A, fn: str = "svd") -> None:
    check_matrix(A, fn, square=False)
    check_precision(A, "linalg_svd_cpu")


def linalg_svd(A, full_matrices: bool = True, *, driver=None, out=None):
    """``linalg.svd``: (U, S, Vh) with A = U diag(S) Vh, S descending; ``full_matrices`` gives U [m, m] and
    Vh [n, n], else [m, k] and [k, n]. Singular vectors are unique only up to sign (they may differ from PyTorch's).

    >>> U, S, Vh = clgrad.linalg.svd(clgrad.tensor([[3.0, 0.0], [0.0, -4.0]]))  # S: tensor([4., 3.])
    """
    _check(A)
    U, S, Vh = SVDFn.apply(A, full_matrices)
    if out is not None:
        for o, t in zip(out, (U, S, Vh)):
            o.copy_(t)
    return SVDResult(U, S, Vh)


def svdvals(A, *, driver=None, out=None) -> Tensor:
    """``linalg.svdvals``: the singular values of A [..., m, n], descending, on the device; differentiable.

    >>> clgrad.linalg.svdvals(clgrad.tensor([[3.0, 0.0], [0.0, -4.0]]))  # tensor([4., 3.])
    """
    _check(A)
    S = SvdValsFn.apply(A)
    return S if out is None else out.copy_(S)


def svd(input, some: bool = True, compute_uv: bool = True, *, out=None):
    """Legacy ``torch.svd``: (U, S, V) (V, not V^H); ``compute_uv=False`` gives zero U [m, m] and V [n, n]."""
    _check(input)
    if compute_uv:
        U, S, Vh = SVDFn.apply(input, not some)
        return LegacySVD(U, S, Vh.mT)
    m, n = input.shape[-2:]
    batch = tuple(input.shape[:-2])
    z = lambda r: zeros(batch + (r, r), dtype=input.dtype, device=input.device)  # noqa: E731
    return LegacySVD(z(m), svdvals(input), z(n))


# ---- pinv, rank, cond -----------------------------------------------------------------------------------------
def _tolerance(S_max: Tensor, A: Tensor, atol, rtol) -> Tensor:
    """max(atol, rtol * S_max) with PyTorch's defaults (rtol = eps * max(m, n) unless atol > 0 alone is given)."""
    if rtol is None:
        given = atol is not None and (not isinstance(atol, (int, float)) or atol > 0)
        rtol = 0.0 if given else (2.220446049250313e-16 if A.dtype is D.float64 else 1.1920929e-07) * max(A.shape[-2:])
    tol = S_max * rtol
    if atol is not None:
        tol = tol.maximum(atol if isinstance(atol, Tensor) else tol.new_full((), float(atol)))
    return tol


def _pinv_raw(A: Tensor, atol, rtol, hermitian: bool) -> Tensor:
    """The pseudo-inverse of A, untracked: V diag(1/s) U^T over the kept singular values (or eigenvalues)."""
    with grad_mode.no_grad():
        if hermitian:
            L, V = EighFn.apply(A, False)
            keep = L.abs() > _tolerance(L.abs().amax(-1, keepdim=True), A, atol, rtol) if L.shape[-1] else L > 0
            inv_l = (1 / L.where(keep, 1.0)).where(keep, 0.0)
            return (V * inv_l.unsqueeze(-2)) @ V.mT
        U, S, Vh = svd_raw(A)
        keep = S > _tolerance(S[..., :1], A, atol, rtol) if S.shape[-1] else S > 0
        inv_s = (1 / S.where(keep, 1.0)).where(keep, 0.0)
        return Vh.mT @ (inv_s.unsqueeze(-1) * U.mT)


class PinvFn(Function):
    """A^+; backward: PyTorch's pinv_backward (valid for rank-deficient A of constant rank)."""

    node_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        P = _pinv_raw(A, atol, rtol, hermitian)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        Ph, gh = P.mT, g.mT
        if A.shape[-2] <= A.shape[-1]:
            K = gh @ P
            KPh = K @ Ph
            return -(P @ K).mT + KPh - (A @ P) @ KPh + (Ph @ P) @ (gh - K @ A), None, None, None
        K = P @ gh
        PhK = Ph @ K
        return -(K @ P).mT + (gh - A @ K) @ P @ Ph + PhK - PhK @ P @ A, None, None, None


def pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """``linalg.pinv``: the pseudo-inverse of A [..., m, n] through its SVD (``hermitian``: its eigh), singular
    values at most max(atol, rtol * largest) treated as zero; ``rcond`` is the legacy name of rtol.

    >>> clgrad.linalg.pinv(clgrad.tensor([[2.0, 0.0], [0.0, 0.0]]))  # tensor([[0.5, 0.], [0., 0.]])
    """
    _check(A, "pinv")
    rtol = rcond if rtol is None else rtol
    if hermitian:
        check_matrix(A, "pinv")
    P = PinvFn.apply(A, atol, rtol, hermitian)
    return P if out is None else out.copy_(P)


def pinverse(input, rcond: float = 1e-15) -> Tensor:
    """Legacy ``torch.pinverse``: ``linalg.pinv(input, rtol=rcond)``."""
    return pinv(input, rtol=rcond)


def matrix_rank(A, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """``linalg.matrix_rank``: the number of singular values (``hermitian``: |eigenvalues|) above
    max(atol, rtol * largest), int64 [...]; ``tol`` is the legacy name of atol.

    >>> clgrad.linalg.matrix_rank(clgrad.ones(3, 3))  # tensor(1)
    """
    _check(A, "matrix_rank")
    atol = tol if atol is None else atol
    with grad_mode.no_grad():
        if hermitian:
            S = eigh_abs = EighFn.apply(A, False)[0].abs()
            S = eigh_abs.sort(-1, descending=True)[0]
        else:
            S = svd_raw(A, compute_uv=False)
        if S.shape[-1] == 0:
            r = zeros(S.shape[:-1], dtype=D.int64, device=A.device)
        else:
            r = (S > _tolerance(S[..., :1], A, atol, rtol)).to(dtype=D.int64).sum(-1)
    return r if out is None else out.copy_(r)


def _matrix_norm(A: Tensor, p) -> Tensor:
    """matrix_norm(A, p) for p in 'fro', 'nuc', +-inf, +-1 (stats.matrix_norm imports this module)."""
    if p == "fro":
        return A.square().sum((-2, -1)).sqrt()
    if p == "nuc":
        return svdvals(A).sum(-1)
    sums = A.abs().sum(-1 if p in (math.inf, -math.inf) else -2)
    return sums.amax(-1) if p in (math.inf, 1) else sums.amin(-1)


def cond(A, p=None, *, out=None) -> Tensor:
    """``linalg.cond``: the condition number of A in norm ``p``: None/2/-2 from the singular values (any shape),
    'fro', 'nuc', inf, -inf, 1, -1 as norm(A, p) * norm(inv(A), p) (square A).

    >>> clgrad.linalg.cond(clgrad.tensor([[1.0, 0.0], [0.0, 4.0]]))  # tensor(4.)
    """
    _check(A, "cond")
    if p in (None, 2, -2):
        S = svdvals(A)
        c = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
    elif p in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        check_matrix(A, "cond")
        c = _matrix_norm(A, p) * _matrix_norm(inv(A), p)
    else:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    return c if out is None else out.copy_(c)


# ---- least squares ----------------------------------------------------------------------------------------------
def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """``linalg.lstsq``: (solution, residuals, rank, singular_values) of min ||A X - B|| for A [..., m, n],
    B [..., m, k] (or [..., m]). The solution is pinv(A) B (the minimum-norm one, as 'gelsd'); rank and
    singular_values are filled per ``driver`` as PyTorch's CPU drivers do ('gelsy' default: rank only; 'gelsd'/
    'gelss': both; 'gels': neither), residuals when m > n and A has full rank (not for 'gelsy')."""
    check_matrix(A, "lstsq", square=False)
    check_same(A, B, "lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if Bm.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if rcond is None:
        rcond = (2.220446049250313e-16 if A.dtype is D.float64 else 1.1920929e-07) * max(m, n)
    X = pinv(A, rtol=rcond) @ Bm
    empty_f = A.new_zeros((0,))
    S = svd_raw(A.detach(), compute_uv=False) if driver in ("gelsd", "gelss", "gelsy") else None
    rank = empty_f.to(dtype=D.int64)
    if S is not None:
        rank = (S > S[..., :1] * rcond).to(dtype=D.int64).sum(-1) if S.shape[-1] else S.sum(-1).to(dtype=D.int64)
    full = m > n and driver != "gelsy" and (rank.numel() == 0 or bool((rank == n).all().item()))
    residuals = (A @ X - Bm).square().sum(-2) if full else empty_f
    if vector:
        X = X.squeeze(-1)  # the residuals keep their k = 1 column, as PyTorch's
    sv = S if driver in ("gelsd", "gelss") else empty_f
    return LstsqResult(X, residuals, rank, sv)


# ---- randomized low rank ----------------------------------------------------------------------------------------
def _approximate_basis(A: Tensor, q: int, niter: int, M=None) -> Tensor:
    """Q [..., m, q] with orthonormal columns whose range approximates A's (Halko et al., algorithm 4.4)."""
    R = randn(tuple(A.shape[:-2]) + (A.shape[-1], q), dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = linalg_qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q if M is None else A.mT @ Q - M.mT @ Q
        Q = linalg_qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = linalg_qr(X).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int = 2, M=None):
    """``torch.svd_lowrank``: (U, S, V) of a randomized rank-``q`` SVD of A (minus ``M``), differentiable.

    >>> U, S, V = clgrad.svd_lowrank(clgrad.randn(50, 40), q=5)
    """
    m, n = A.shape[-2:]
    q = 6 if q is None else q
    if m < n:
        U, S, V = svd_lowrank(A.mT, q, niter, None if M is None else M.mT)
        return V, S, U
    Q = _approximate_basis(A, q, niter, M)
    Bm = Q.mT @ A if M is None else Q.mT @ (A - M)
    U, S, Vh = SVDFn.apply(Bm, False)
    return Q @ U, S, Vh.mT


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """``torch.pca_lowrank``: (U, S, V) of the randomized SVD of A with its column means removed (``center``)."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    return svd_lowrank(A - A.mean(-2, keepdim=True) if center else A, q, niter)


# ---- tensor inverse and solve -----------------------------------------------------------------------------------
def tensorinv(A, ind: int = 2, *, out=None) -> Tensor:
    """``linalg.tensorinv``: the tensor X with tensordot(X, A, ind) = I, for prod(A.shape[:ind]) ==
    prod(A.shape[ind:])."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    X = inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))
    return X if out is None else out.copy_(X)


def tensorsolve(A, B, dims=None, *, out=None) -> Tensor:
    """``linalg.tensorsolve``: X with tensordot(A, X, X.ndim) = B; ``dims``: A's dims moved to the end first."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.permute(*[d for d in range(A.dim()) if d not in dims], *dims)
    rest = tuple(A.shape[B.dim():])
    rows = B.numel()
    if math.prod(rest) != rows:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {math.prod(rest)} != {rows}")
    X = solve(A.reshape(rows, rows), B.reshape(rows)).reshape(rest)
    return X if out is None else out.copy_(X)


def install(T) -> None:
    """Tensor methods: ``svd``, ``pinverse``."""
    T.svd, T.pinverse = svd, pinverse
