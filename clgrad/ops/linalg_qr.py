"""Householder QR, batched and on the device: ``geqrf``, ``linalg.householder_product`` (``orgqr``), ``ormqr``,
``linalg.qr`` (modes reduced/complete/r) and the legacy ``qr(some=)``, all composed from ops.

``geqrf`` is LAPACK's blocked dgeqrf: 32-column panels factored column by column with dlarfg's conventions
(beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta, v = x / (alpha - beta) with v[0] = 1 implicit), so its
output matches LAPACK's (and PyTorch's) element for element up to rounding; each panel's reflectors are then folded
into the compact WY form I - V T V^T (dlarft) and the trailing columns updated with three matmuls.
``householder_product`` and ``ormqr`` apply the reflectors one at a time with differentiable ops, so their
gradients come from autograd; ``linalg.qr``'s backward is the classic formula (TensorFlow's QrGrad; the same
function PyTorch's linalg_qr_backward computes), wide matrices through their leading square block.
"""
from __future__ import annotations

import math

from ..autograd import grad_mode
from ..autograd.function import Function
from ..tensor import Tensor
from .creation import eye, zeros
from .joins import cat
from .linalg_solve import check_matrix, check_same, result_type, solve_triangular

__all__ = ["geqrf", "orgqr", "ormqr", "qr"]

PANEL = 32
QRResult = result_type("linalg_qr", "Q", "R")
GeqrfResult = result_type("geqrf", "a", "tau")


# ---- geqrf ------------------------------------------------------------------------------------------------------
def _reflect(W: Tensor, j: int, e: int) -> Tensor:
    """dlarfg on column j of W [b, m, n] (rows j..), in place, then H_j applied to columns j+1..e-1; the tau [b]."""
    x = W[:, j:, j]
    alpha = x[:, 0]
    xnorm = x[:, 1:].square().sum(-1).sqrt() if x.shape[-1] > 1 else alpha * 0
    beta = -alpha.hypot(xnorm).copysign(alpha.where(alpha != 0, 1.0))
    trivial = xnorm == 0
    tau = ((beta - alpha) / beta).where(~trivial, 0.0)
    W[:, j + 1:, j] = x[:, 1:] / (alpha - beta).where(~trivial, 1.0).unsqueeze(-1)
    W[:, j, j] = beta.where(~trivial, alpha)
    if j + 1 < e:
        v = cat([W[:, j:j + 1, j].new_ones((W.shape[0], 1)), W[:, j + 1:, j]], -1).unsqueeze(-1)
        C = W[:, j:, j + 1:e]
        C.sub_(tau.reshape(-1, 1, 1) * v * (v * C).sum(-2, keepdim=True))
    return tau


def unit_lower(W: Tensor) -> Tensor:
    """The reflectors stored below W's diagonal [..., m, k] as unit lower-trapezoidal columns."""
    m, k = W.shape[-2:]
    return W.tril(-1) + eye(m, k, dtype=W.dtype, device=W.device)


def larft(V: Tensor, tau: Tensor) -> Tensor:
    """T [b, k, k] upper triangular with H_1 ... H_k = I - V T V^T (dlarft, forward and columnwise)."""
    b, _, k = V.shape
    T = zeros((b, k, k), dtype=V.dtype, device=V.device)
    VtV = V.mT @ V
    for i in range(k):
        T[:, i, i] = tau[:, i]
        if i:
            col = (T[:, :i, :i] * VtV[:, :i, i].unsqueeze(-2)).sum(-1)
            T[:, :i, i] = -tau[:, i:i + 1] * col
    return T


def geqrf_raw(A: Tensor):
    """Untracked (QR [..., m, n], tau [..., min(m, n)]) of A, LAPACK's layout."""
    m, n = A.shape[-2:]
    batch, k = tuple(A.shape[:-2]), min(m, n)
    with grad_mode.no_grad():
        W = A.reshape(math.prod(batch), m, n).clone()
        taus = []
        for s in range(0, k, PANEL):
            e = min(s + PANEL, k)
            block = [_reflect(W, j, e) for j in range(s, e)]
            taus += block
            if e < n:
                V = unit_lower(W[:, s:, s:e])
                T = larft(V, cat([t.unsqueeze(-1) for t in block], -1))
                C = W[:, s:, e:]
                C.sub_(V @ (T.mT @ (V.mT @ C)))
        tau = cat([t.unsqueeze(-1) for t in taus], -1) if taus else W.new_zeros((W.shape[0], 0))
    return W.reshape(batch + (m, n)), tau.reshape(batch + (k,))


def geqrf(input, *, out=None):
    """``torch.geqrf``: (a, tau), LAPACK's compact QR of input [..., m, n]: R on and above the diagonal, the
    Householder vectors below it (v[0] = 1 implicit), tau [..., min(m, n)]. Not differentiable (as in PyTorch).

    >>> a, tau = clgrad.geqrf(clgrad.tensor([[3.0, 1.0], [4.0, 2.0]]))  # a[0, 0] == -5
    """
    check_matrix(input, "geqrf", "input", square=False)
    a, tau = geqrf_raw(input.detach())
    if out is not None:
        out[0].copy_(a), out[1].copy_(tau)
    return GeqrfResult(a, tau)


# ---- applying reflectors ----------------------------------------------------------------------------------------
def _apply(V: Tensor, tau: Tensor, C: Tensor, i: int, side_left: bool) -> Tensor:
    """H_i C (or C H_i) with H_i = I - tau_i v_i v_i^T, v_i column i of V [..., m, k]; differentiable."""
    v, t = V[..., :, i:i + 1], tau[..., i:i + 1].unsqueeze(-1)
    if side_left:
        return C - t * v * (v * C).sum(-2, keepdim=True)
    return C - (t * (C * v.mT).sum(-1, keepdim=True)) * v.mT


def _check_reflectors(A: Tensor, tau: Tensor, fn: str) -> None:
    check_matrix(A, fn, "input", square=False)
    check_same(A, tau, fn)
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"torch.{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.shape[-1] > A.shape[-1]:
        raise RuntimeError(f"torch.{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dim() != A.dim() - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"torch.{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but "
                           f"got {tuple(tau.shape[:-1])}")


def householder_product(A, tau, *, out=None) -> Tensor:
    """``linalg.householder_product`` / ``orgqr``: the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T
    with v_i column i of A [..., m, n] below the diagonal (1 on it); differentiable in A and tau.

    >>> Q = clgrad.linalg.householder_product(*clgrad.geqrf(clgrad.randn(4, 3)))  # Q^T Q = I
    """
    _check_reflectors(A, tau, "linalg.householder_product")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    V = unit_lower(A[..., :, :k])
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, n))
    for i in reversed(range(k)):
        Q = _apply(V, tau, Q, i, True)
    return Q if out is None else out.copy_(Q)


def orgqr(input, tau, *, out=None) -> Tensor:
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau, out=out)


def ormqr(input, tau, other, left: bool = True, transpose: bool = False, *, out=None) -> Tensor:
    """``torch.ormqr``: Q @ other (``left=False``: other @ Q; ``transpose``: Q^T) for Q = H_1 ... H_k given as
    ``geqrf``'s (input, tau), without forming Q; differentiable in all three.

    >>> a, tau = clgrad.geqrf(A); clgrad.ormqr(a, tau, B, transpose=True)  # Q^T B
    """
    check_matrix(input, "ormqr", "input", square=False)
    check_same(input, other, "ormqr")
    check_same(input, tau, "ormqr")
    need = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != need:
        raise RuntimeError(f"torch.ormqr: input.shape[-2] must be equal to other.shape[{-2 if left else -1}]")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError("torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]")
    k = tau.shape[-1]
    V = unit_lower(input[..., :, :k])
    order = range(k) if left == transpose else reversed(range(k))
    C = other
    for i in order:
        C = _apply(V, tau, C, i, left)
    return C if out is None else out.copy_(C)


# ---- qr ---------------------------------------------------------------------------------------------------------
def _parse_mode(mode: str):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           f"'complete'")
    return mode != "r", mode == "reduced"


def qr_raw(A: Tensor, mode: str):
    """Untracked (Q, R) of A in ``mode`` (Q empty for mode 'r')."""
    m, n = A.shape[-2:]
    k = min(m, n)
    QR, tau = geqrf_raw(A)
    compute_q, reduced = _parse_mode(mode)
    rows = k if reduced or mode == "r" else m
    R = QR[..., :rows, :].triu()
    if not compute_q:
        return A.new_zeros((0,)), R
    cols = k if reduced else m
    with grad_mode.no_grad():
        basis = QR[..., :, :k]
        if cols > k:
            basis = cat([basis, zeros(tuple(A.shape[:-2]) + (m, cols - k), dtype=A.dtype, device=A.device)], -1)
        Q = householder_product(basis, tau)
    return Q, R


def _qr_grad_tall(Q: Tensor, R: Tensor, gQ: Tensor, gR: Tensor) -> Tensor:
    """gA for A = Q R with m >= n, Q [m, n], R [n, n] square (TensorFlow's QrGrad)."""
    qdq = Q.mT @ gQ
    rdr = R @ gR.mT
    M = (qdq - qdq.mT + rdr - rdr.mT).tril()
    # X R^-T for X: solve X' R^T = X (R^T lower)
    left = Q @ (gR + solve_triangular(R.mT, M, upper=False, left=False))
    right = solve_triangular(R.mT, gQ - Q @ qdq, upper=False, left=False)
    return left + right


class QRFn(Function):
    """(Q, R) = qr(A); backward for mode 'reduced' (any shape) and 'complete' with m <= n, as PyTorch's."""

    node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        Q, R = qr_raw(A, mode)
        ctx.mode = mode
        ctx.save_for_backward(A, Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        A, Q, R = ctx.saved_tensors
        m, n = A.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_grad_tall(Q, R, gQ, gR), None
        Y, gX_R, gY = A[..., :, m:], gR[..., :, :m], gR[..., :, m:]
        gX = _qr_grad_tall(Q, R[..., :, :m], gQ + Y @ gY.mT, gX_R)
        return cat([gX, Q @ gY], -1), None


def linalg_qr(A, mode: str = "reduced", *, out=None):
    """``linalg.qr``: (Q, R) with A = Q R, Q orthonormal columns, R upper triangular with LAPACK's signs;
    ``mode`` 'reduced' (Q [m, k], R [k, n]), 'complete' (Q [m, m], R [m, n]) or 'r' (Q empty).

    >>> Q, R = clgrad.linalg.qr(clgrad.tensor([[3.0, 1.0], [4.0, 2.0]]))  # R[0, 0] == -5
    """
    check_matrix(A, "qr", square=False)
    _parse_mode(mode)
    Q, R = QRFn.apply(A, mode)
    if out is not None:
        out[0].copy_(Q), out[1].copy_(R)
    return QRResult(Q, R)


def qr(input, some: bool = True, *, out=None):
    """Legacy ``torch.qr``: ``linalg.qr`` with mode 'reduced' (``some``) or 'complete'."""
    return linalg_qr(input, "reduced" if some else "complete", out=out)


def install(T) -> None:
    """Tensor methods: ``qr``, ``geqrf``, ``orgqr``, ``ormqr``."""
    T.qr, T.geqrf, T.orgqr, T.ormqr = qr, geqrf, orgqr, ormqr
