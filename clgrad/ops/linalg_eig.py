"""Eigen-decompositions, batched and on the device: ``linalg.eigh``/``eigvalsh`` (the backend's ``eigh`` primitive:
numpy's LAPACK on cpu, a parallel-order Jacobi kernel on OpenCL), ``linalg.eig``/``eigvals`` (general matrices, on
the host) and ``linalg.matrix_exp`` (Pade 13 with scaling and squaring, composed from matmul and solve).

Gradients are PyTorch's formulas (FunctionsManual.cpp's linalg_eig_backward, the hermitian case, and
matrix_exp's block-matrix rule) as autograd Functions written in ops, so double backward works.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd import grad_mode
from ..autograd.function import Function
from ..tensor import Tensor
from .creation import empty, eye, tensor, zeros
from .joins import cat
from .linalg_lu import solve
from .linalg_solve import check_matrix, result_type

__all__ = ["matrix_exp"]

EighResult = result_type("linalg_eigh", "eigenvalues", "eigenvectors")
EigResult = result_type("linalg_eig", "eigenvalues", "eigenvectors")


def check_precision(A: Tensor, fn: str) -> None:
    """The decompositions run in float32/float64 (PyTorch's message for half and bfloat16)."""
    if A.dtype not in (D.float32, D.float64):
        name = {"float16": "Half", "bfloat16": "BFloat16"}.get(A.dtype.name, A.dtype.scalar_name)
        raise NotImplementedError(f'"{fn}" not implemented for \'{name}\'')


def symmetric(A: Tensor, upper: bool) -> Tensor:
    """The symmetric matrix A's lower (``upper``: upper) triangle stands for."""
    return A.triu() + A.triu(1).mT if upper else A.tril() + A.tril(-1).mT


def eigh_raw(A: Tensor, upper: bool = False):
    """Untracked (eigenvalues ascending [..., n], eigenvectors [..., n, n]) of the symmetric matrix ``A`` stands
    for, through the backend's ``eigh`` primitive."""
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    with grad_mode.no_grad():
        work = symmetric(A, upper).reshape(math.prod(batch), n, n).contiguous().clone()
        w = empty(work.shape[0], n, dtype=A.dtype, device=A.device)
        v = empty(work.shape[0], n, n, dtype=A.dtype, device=A.device)
        backends.get(A.device).eigh(w, v, work, upper)
    return w.reshape(batch + (n,)), v.reshape(batch + (n, n))


def _skew_over_gaps(X: Tensor, L: Tensor) -> Tensor:
    """(X - X^T) / 2 divided by E_ij = L_j - L_i off the diagonal, with a zero diagonal."""
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    n = L.shape[-1]
    E = E + eye(n, dtype=L.dtype, device=L.device)
    return ((X - X.mT) * 0.5) / E


class EighFn(Function):
    """(L, V) with A = V diag(L) V^T; gA = V (skew(V^T gV) / E + diag(gL)) V^T, E_ij = L_j - L_i."""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, upper):
        L, V = eigh_raw(A, upper)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        inner = _skew_over_gaps(V.mT @ gV, L) + gL.diag_embed()
        return V @ inner @ V.mT, None


class EigvalshFn(Function):
    """The eigenvalues L of a symmetric A; gA = V diag(gL) V^T."""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, upper):
        L, V = eigh_raw(A, upper)
        ctx.save_for_backward(V)
        return L

    @staticmethod
    def backward(ctx, gL):
        (V,) = ctx.saved_tensors
        return (V * gL.unsqueeze(-2)) @ V.mT, None


def _check_uplo(UPLO, fn: str) -> bool:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"{fn}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO in ("U", "u")


def eigh(A, UPLO: str = "L", *, out=None):
    """``linalg.eigh``: (eigenvalues ascending, eigenvectors as columns) of the symmetric A [..., n, n], read from
    its lower (``UPLO="U"``: upper) triangle. Eigenvector signs are not unique (they may differ from PyTorch's).

    >>> L, V = clgrad.linalg.eigh(clgrad.tensor([[2.0, 1.0], [1.0, 2.0]]))  # L: tensor([1., 3.])
    """
    check_matrix(A, "eigh")
    check_precision(A, "linalg_eigh_cpu")
    L, V = EighFn.apply(A, _check_uplo(UPLO, "linalg.eigh"))
    if out is not None:
        out[0].copy_(L), out[1].copy_(V)
    return EighResult(L, V)


def eigvalsh(A, UPLO: str = "L", *, out=None) -> Tensor:
    """``linalg.eigvalsh``: the eigenvalues of the symmetric A [..., n, n], ascending; differentiable.

    >>> clgrad.linalg.eigvalsh(clgrad.tensor([[2.0, 1.0], [1.0, 2.0]]))  # tensor([1., 3.])
    """
    check_matrix(A, "eigvalsh")
    check_precision(A, "linalg_eigh_cpu")
    L = EigvalshFn.apply(A, _check_uplo(UPLO, "linalg.eigvalsh"))
    return L if out is None else out.copy_(L)


# ---- general eigenproblem (host) ------------------------------------------------------------------------------
def _complex(pairs: np.ndarray, like: Tensor) -> Tensor:
    """A complex tensor from real (re, im) pairs [..., 2] through ``clgrad.view_as_complex``."""
    import clgrad  # the package's public namespace: complex support belongs to another module

    to_complex = getattr(clgrad, "view_as_complex", None)
    if to_complex is None or not hasattr(clgrad, "complex64"):
        raise NotImplementedError("linalg.eig: clgrad has no complex dtype yet, so it cannot return complex "
                                  "eigenvalues and eigenvectors (linalg.eigh handles symmetric matrices)")
    return to_complex(tensor(pairs, dtype=like.dtype, device=like.device))


def _host_eig(A: Tensor, vectors: bool):
    check_matrix(A, "eig")
    check_precision(A, "linalg_eig")
    a = np.asarray(A.detach()._host(), dtype=np.float64)
    if not np.isfinite(a).all():
        raise RuntimeError("linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = np.linalg.eig(a) if vectors else (np.linalg.eigvals(a), None)
    pairs = lambda x: np.stack([x.real, x.imag], -1)  # noqa: E731
    return _complex(pairs(w), A), (None if v is None else _complex(pairs(v), A))


def eig(A, *, out=None):
    """``linalg.eig``: complex (eigenvalues, eigenvectors) of a general square A [..., n, n]. Computed on the HOST
    by numpy's LAPACK geev (a device Hessenberg-QR is future work), and not differentiable in clgrad."""
    w, v = _host_eig(A, True)
    return EigResult(w, v)


def eigvals(A, *, out=None) -> Tensor:
    """``linalg.eigvals``: the complex eigenvalues of a general square A, on the HOST (see ``eig``)."""
    return _host_eig(A, False)[0]


# ---- matrix exponential -----------------------------------------------------------------------------------------
# Pade 13 coefficients and the 1-norm bound (Higham 2005, "The scaling and squaring method revisited")
_B13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
        10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm_raw(A: Tensor) -> Tensor:
    """exp(A) by Pade 13 and scaling and squaring, with one host read of the largest 1-norm for the scaling."""
    n = A.shape[-1]
    norm = float(A.abs().sum(-2).amax().item()) if A.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    A = A / (2.0 ** s) if s else A
    b = _B13
    I = eye(n, dtype=A.dtype, device=A.device)  # noqa: E741
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * I)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * I
    X = solve(V - U, V + U)
    for _ in range(s):
        X = X @ X
    return X


class MatrixExp(Function):
    """exp(A); gA = the top-right block of exp([[A^T, g], [0, A^T]]) (PyTorch's differential_analytic_matrix_function)."""

    node_name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        with grad_mode.no_grad():
            return _expm_raw(A)

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        top = cat([A.mT, g], -1)
        bottom = cat([zeros(A.shape, dtype=A.dtype, device=A.device), A.mT], -1)
        big = cat([top, bottom], -2)
        return matrix_exp(big)[..., :n, n:]


def matrix_exp(A) -> Tensor:
    """``torch.linalg.matrix_exp`` / ``torch.matrix_exp``: e^A of square A [..., n, n], differentiable.

    >>> clgrad.linalg.matrix_exp(clgrad.zeros(2, 2))  # tensor([[1., 0.], [0., 1.]])
    """
    check_matrix(A, "matrix_exp")
    if A.shape[-1] == 0:
        return A.clone()
    if A.shape[-1] == 1:
        return A.exp()
    return MatrixExp.apply(A)
