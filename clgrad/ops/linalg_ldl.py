"""``linalg.ldl_factor(_ex)`` and ``linalg.ldl_solve``: the Bunch-Kaufman LDL^T factorization of symmetric matrices in
LAPACK's format (dsytf2 with UPLO='L': LD holds L below the diagonal and the 1x1/2x2 blocks of D on and below it,
pivots are 1-based, negative pairs mark a 2x2 block), so both match PyTorch's (LAPACK's sytrf/sytrs) outputs.

Computed on the HOST in numpy, one matrix at a time: every column's pivot choice (1x1 or 2x2 block, which row) is a
data-dependent branch, which a composed device version would have to read back per column anyway. Not
differentiable, as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from .creation import tensor
from .linalg_eig import check_precision
from .linalg_solve import LinAlgError, check_matrix, check_same, first_failure, result_type

LDLFactorEx = result_type("linalg_ldl_factor_ex", "LD", "pivots", "info")
LDLFactor = result_type("linalg_ldl_factor", "LD", "pivots")
ALPHA = (1 + math.sqrt(17)) / 8  # Bunch-Kaufman's threshold: bounds the growth of L's entries


def _choose_pivot(A: np.ndarray, k: int):
    """(kp, kstep) of dsytf2's pivot search at column k, or (None, 1) for a zero column."""
    n = A.shape[0]
    absakk = abs(A[k, k])
    imax = k + 1 + int(np.argmax(np.abs(A[k + 1:, k]))) if k < n - 1 else k
    colmax = abs(A[imax, k]) if k < n - 1 else 0.0
    if max(absakk, colmax) == 0:
        return None, 1
    if absakk >= ALPHA * colmax:
        return k, 1
    rowmax = np.abs(A[imax, k:imax]).max()
    if imax < n - 1:
        rowmax = max(rowmax, np.abs(A[imax + 1:, imax]).max())
    if absakk >= ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(A[imax, imax]) >= ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _interchange(A: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Swap rows and columns kk and kp of the trailing lower triangle A[k:, k:]."""
    A[kp + 1:, [kk, kp]] = A[kp + 1:, [kp, kk]]
    col, row = A[kk + 1:kp, kk].copy(), A[kp, kk + 1:kp].copy()
    A[kk + 1:kp, kk], A[kp, kk + 1:kp] = row, col
    A[kk, kk], A[kp, kp] = A[kp, kp], A[kk, kk]
    if kstep == 2:
        A[k + 1, k], A[kp, k] = A[kp, k], A[k + 1, k]


def _update(A: np.ndarray, k: int, kstep: int) -> None:
    """The rank-1 or rank-2 update of the trailing matrix and the scaled columns of L."""
    if kstep == 1:
        x = A[k + 1:, k].copy()
        d11 = 1 / A[k, k]
        A[k + 1:, k + 1:] -= d11 * np.outer(x, x)
        A[k + 1:, k] = d11 * x
        return
    d21 = A[k + 1, k]
    d11, d22 = A[k + 1, k + 1] / d21, A[k, k] / d21
    d21 = 1 / (d11 * d22 - 1) / d21
    ak, ak1 = A[k + 2:, k].copy(), A[k + 2:, k + 1].copy()
    wk, wk1 = d21 * (d11 * ak - ak1), d21 * (d22 * ak1 - ak)
    A[k + 2:, k + 2:] -= np.outer(ak, wk) + np.outer(ak1, wk1)
    A[k + 2:, k], A[k + 2:, k + 1] = wk, wk1


def sytf2(A: np.ndarray):
    """(LD, ipiv, info) of LAPACK's dsytf2 (UPLO='L') on one symmetric matrix (its lower triangle is read)."""
    A = np.tril(A).astype(np.float64)
    n = A.shape[0]
    ipiv, info, k = np.zeros(n, np.int32), 0, 0
    while k < n:
        kp, kstep = _choose_pivot(A, k)
        if kp is None:
            info = info or k + 1
            ipiv[k] = k + 1
            k += 1
            continue
        kk = k + kstep - 1
        if kp != kk:
            _interchange(A, k, kk, kp, kstep)
        if k + kstep < n:
            _update(A, k, kstep)
        ipiv[k:k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
        k += kstep
    return np.tril(A), ipiv, info


def sytrs(LD: np.ndarray, ipiv: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with A X = B from ``sytf2``'s (LD, ipiv) (LAPACK's dsytrs, UPLO='L')."""
    B, n, k = B.astype(np.float64).copy(), LD.shape[0], 0
    while k < n:  # solve L D Y = B
        kp = abs(int(ipiv[k])) - 1
        if ipiv[k] > 0:
            B[[k, kp]] = B[[kp, k]]
            B[k + 1:] -= np.outer(LD[k + 1:, k], B[k])
            B[k] /= LD[k, k]
            k += 1
            continue
        B[[k + 1, kp]] = B[[kp, k + 1]]
        B[k + 2:] -= np.outer(LD[k + 2:, k], B[k]) + np.outer(LD[k + 2:, k + 1], B[k + 1])
        akm1k = LD[k + 1, k]
        akm1, ak = LD[k, k] / akm1k, LD[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = B[k] / akm1k, B[k + 1] / akm1k
        B[k], B[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:  # solve L^T X = Y
        kp = abs(int(ipiv[k])) - 1
        B[k] -= LD[k + 1:, k] @ B[k + 1:]
        if ipiv[k] > 0:
            B[[k, kp]] = B[[kp, k]]
            k -= 1
            continue
        B[k - 1] -= LD[k + 1:, k - 1] @ B[k + 1:]
        B[[k, kp]] = B[[kp, k]]
        k -= 2
    return B


def _check_hermitian(hermitian: bool, fn: str) -> None:
    if hermitian:
        raise NotImplementedError(f"torch.linalg.{fn}: hermitian=True is for complex matrices, which clgrad's "
                                  f"host LDL does not take (a real symmetric matrix is the same with hermitian=False)")


def ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """``linalg.ldl_factor_ex``: (LD, pivots, info) of symmetric A [..., n, n] (lower triangle read), LAPACK's
    Bunch-Kaufman format; info [...] is 0 or the 1-based index of D's first zero block. On the host (see module)."""
    check_matrix(A, "ldl_factor_ex")
    check_precision(A, "linalg_ldl_factor_ex_cpu")
    _check_hermitian(hermitian, "ldl_factor_ex")
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    host = np.asarray(A.detach()._host(), dtype=np.float64).reshape(math.prod(batch), n, n)
    parts = [sytf2(a) for a in host]
    LD = np.stack([p[0] for p in parts]) if parts else np.zeros(host.shape)
    piv = np.stack([p[1] for p in parts]) if parts else np.zeros(host.shape[:-1], np.int32)
    info = np.array([p[2] for p in parts], np.int32)
    res = LDLFactorEx(tensor(LD.reshape(batch + (n, n)), dtype=A.dtype, device=A.device),
                      tensor(piv.reshape(batch + (n,)), dtype=D.int32, device=A.device),
                      tensor(info.reshape(batch), dtype=D.int32, device=A.device))
    if check_errors:
        _raise_singular(res.info)
    return res


def _raise_singular(info) -> None:
    bad = first_failure(info)
    if bad is not None:
        raise LinAlgError(f"torch.linalg.ldl_factor: The factorization could not be completed because the input is "
                          f"singular (D[{bad[1] - 1}, {bad[1] - 1}] is zero).")


def ldl_factor(A, *, hermitian: bool = False, out=None):
    """``linalg.ldl_factor``: (LD, pivots) of symmetric A; raises LinAlgError when D has a zero block.

    >>> LD, pivots = clgrad.linalg.ldl_factor(clgrad.tensor([[4.0, 2.0], [2.0, 3.0]]))
    """
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular(info)
    return LDLFactor(LD, piv)


def ldl_solve(LD, pivots, B, *, hermitian: bool = False, out=None):
    """``linalg.ldl_solve``: X with A X = B from A's ``ldl_factor`` (LD, pivots); B [..., n, k], batch dims
    broadcast. On the host (see module)."""
    check_matrix(LD, "ldl_solve", "LD")
    check_matrix(B, "ldl_solve", "B", square=False)
    check_same(LD, B, "ldl_solve")
    _check_hermitian(hermitian, "ldl_solve")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    batch = np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
    count = math.prod(batch)
    ld = np.broadcast_to(np.asarray(LD.detach()._host(), np.float64), batch + (n, n)).reshape(count, n, n)
    piv = np.broadcast_to(np.asarray(pivots.cpu().numpy()), batch + (n,)).reshape(count, n)
    b = np.broadcast_to(np.asarray(B.detach()._host(), np.float64), batch + tuple(B.shape[-2:]))
    b = b.reshape((count,) + tuple(B.shape[-2:]))
    X = np.stack([sytrs(*args) for args in zip(ld, piv, b)]) if len(b) else np.zeros(b.shape)
    X = tensor(X.reshape(batch + tuple(B.shape[-2:])), dtype=B.dtype, device=B.device)
    return X if out is None else out.copy_(X)
