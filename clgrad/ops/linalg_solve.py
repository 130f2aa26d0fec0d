"""Triangular solves and the Cholesky factorization, batched and on the device, composed from clgrad ops:
``linalg.solve_triangular``, ``linalg.cholesky(_ex)``, ``cholesky_solve``, ``cholesky_inverse`` and the legacy
``cholesky`` / ``triangular_solve``.

The algorithms are blocked so that the launch count does not grow with n^2 or n^3 (issue 17):

- a triangular solve (float32/float64) is the backend's ``trsm`` primitive, reading A in place through its strides
  (upper or lower, unit diagonal or not): one launch for up to 8 right-hand sides or n <= 64, else 64-row blocks
  with a matmul updating the rows still to solve. Where the primitive may not run (float16/bfloat16, llvmpipe's
  loop limit) it inverts the 64x64 diagonal blocks all at once by recursive doubling (log2(64) = 6 levels of two
  batched matmuls: inv([[A, 0], [C, B]]) = [[A^-1, 0], [-B^-1 C A^-1, B^-1]]), then substitutes block by block
  (n/64 steps of two matmuls), as MAGMA's trsm does;
- Cholesky is right-looking: each 64-column diagonal block is factored by the backend's ``potrf_panel`` primitive
  (one launch, one work-group per matrix; float16/bfloat16 go column by column through ops, five small launches
  per column), its sub-diagonal block is one triangular solve, and the trailing update is one matmul.

The forward passes run untracked inside autograd Functions whose backward passes are PyTorch's formulas written in
ops (so double backward works), not autograd through the elimination loops.
"""
from __future__ import annotations

import math

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..tensor import Tensor, contiguous_format
from .creation import eye, zeros
from .joins import cat
from .views import broadcast_shapes

__all__ = ["cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve"]

BLOCK = 64  # panel width and diagonal-block size: a power of two
SUBSTITUTE_COLUMNS = 8  # up to this many right-hand sides a triangular solve is one substitution launch at any n


class LinAlgError(RuntimeError):
    """A factorization or solve that failed (PyTorch's ``torch.linalg.LinAlgError``, also a RuntimeError)."""


class _Result(tuple):
    """A tuple with named fields, as ``torch.return_types.<name>``."""

    _name = ""
    _fields: tuple = ()

    def __new__(cls, *values):
        return tuple.__new__(cls, values)

    def __getattr__(self, field):
        if field in type(self)._fields:
            return self[type(self)._fields.index(field)]
        raise AttributeError(field)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"clgrad.return_types.{self._name}(\n{body})"


def result_type(name: str, *fields: str) -> type:
    return type(name, (_Result,), {"_name": name, "_fields": fields, "__slots__": ()})


CholeskyEx = result_type("linalg_cholesky_ex", "L", "info")
TriangularSolve = result_type("triangular_solve", "solution", "cloned_coefficient")


# ---- checks -------------------------------------------------------------------------------------------------
def check_matrix(a, fn: str, name: str = "A", square: bool = True) -> None:
    """PyTorch's checks and messages: a floating tensor of (batches of) square matrices."""
    if not isinstance(a, Tensor):
        raise TypeError(f"linalg.{fn}(): argument '{name}' must be Tensor, not {type(a).__name__}")
    if a.dim() < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor {name} must have at least 2 dimensions.")
    if a.dtype.kind != "f":
        raise RuntimeError(f"linalg.{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{a.dtype.scalar_name}")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{fn}: {name} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def check_same(a: Tensor, b: Tensor, fn: str) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{a.dtype.scalar_name} and B of type {b.dtype.scalar_name} instead")
    if a.device != b.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found {a.device} and {b.device}")


def first_failure(info: Tensor):
    """(batch index, info value) of the first nonzero entry of ``info``, or None (one host sync)."""
    flat = info.reshape(-1)
    if flat.numel() == 0 or not flat.ne(0).any().item():
        return None
    k = int(flat.ne(0).to(dtype=flat.dtype).argmax().item())
    return k, int(flat[k].item())


def batch_prefix(a: Tensor, k: int) -> str:
    return f"(Batch element {k}): " if a.dim() > 2 else ""


def first_index(bad: Tensor) -> Tensor:
    """int32 [...]: 1 + the first index along the last dim where ``bad`` [..., n] holds, or 0 where it never does."""
    if bad.shape[-1] == 0:
        return zeros(bad.shape[:-1], dtype=D.int32, device=bad.device)
    first = bad.to(dtype=D.int32).argmax(-1) + 1
    return first.where(bad.any(-1), 0).to(dtype=D.int32)


def batched(a: Tensor, batch: tuple) -> Tensor:
    """``a`` broadcast to ``batch`` + its matrix shape, as a contiguous [prod(batch), m, n] tensor."""
    flat = (math.prod(batch), a.shape[-2], a.shape[-1])
    return a.expand(tuple(batch) + tuple(a.shape[-2:])).reshape(flat).contiguous()


# ---- triangular solves ----------------------------------------------------------------------------------------
def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b; as a broadcast multiply and a sum where the inner or the last dim is tiny (<= 4), because the
    matmul kernel's tiles cost milliseconds on thousands of 1x1 or matrix-vector products (measured on PoCL)."""
    if a.shape[-1] <= 4 or b.shape[-1] <= 4:
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)
    return a @ b


def _diagonal_block_inverses(L: Tensor, nb: int) -> Tensor:
    """[B, N/nb, nb, nb]: the inverses of the nb x nb diagonal blocks of lower triangular L [B, N, N] (contiguous;
    N a multiple of nb, nb a power of two), by recursive doubling: log2(nb) levels of two batched matmuls."""
    b, n = L.shape[0], L.shape[-1]
    inv = (1.0 / L.diagonal(dim1=-2, dim2=-1)).reshape(b, n, 1, 1)
    s = 1
    while s < nb:
        nblk = n // (2 * s)
        blocks = L.reshape(b, nblk, 2 * s, nblk, 2 * s).diagonal(dim1=1, dim2=3).permute(0, 3, 1, 2)
        upper, lower = inv[:, 0::2], inv[:, 1::2]
        corner = -_mm(lower, _mm(blocks[..., s:, :s], upper))
        inv = cat([cat([upper, zeros(upper.shape, dtype=L.dtype, device=L.device)], -1),
                   cat([corner, lower], -1)], -2)
        s *= 2
    return inv


def _trsm_lower(L: Tensor, B: Tensor) -> Tensor:
    """X with L @ X = B for lower triangular L [b, n, n] (its upper triangle already zero) and B [b, n, k], composed
    from matmuls (where the backend's substitution kernel may not run)."""
    b, n, k = B.shape
    if n == 0 or k == 0:
        return zeros(B.shape, dtype=B.dtype, device=B.device)
    nb = min(BLOCK, _pow2(n))
    size = -(-n // nb) * nb
    if size != n:  # pad with an identity block: the padded rows solve to zero
        pad = zeros((b, size, size), dtype=L.dtype, device=L.device)
        pad[:, :n, :n] = L
        pad[:, n:, n:] = eye(size - n, dtype=L.dtype, device=L.device)
        padb = zeros((b, size, k), dtype=B.dtype, device=B.device)
        padb[:, :n] = B
        L, B = pad, padb
    L = L.contiguous()
    inv = _diagonal_block_inverses(L, nb)
    if size == nb:
        return _mm(inv[:, 0], B)[:, :n]
    X = zeros((b, size, k), dtype=B.dtype, device=B.device)
    for i in range(size // nb):
        r = slice(i * nb, (i + 1) * nb)
        rhs = B[:, r] - _mm(L[:, r, : i * nb], X[:, : i * nb]) if i else B[:, r]
        X[:, r] = _mm(inv[:, i], rhs)
    return X[:, :n]


def _batch_view(A: Tensor, batch: tuple) -> Tensor:
    """A [..., n, n] broadcast to ``batch`` as a [prod(batch), n, n] tensor: a view (no copy) when the batch dims
    collapse to one stride (contiguous, broadcast or a single matrix), else a contiguous copy."""
    A = A.expand(tuple(batch) + tuple(A.shape[-2:]))
    dims = [(d, st) for d, st in zip(A.shape[:-2], A.stride()[:-2]) if d != 1]
    if all(dims[i][1] == dims[i + 1][1] * dims[i + 1][0] for i in range(len(dims) - 1)):
        stride = dims[-1][1] if dims else 0
        return A.as_strided((math.prod(batch),) + tuple(A.shape[-2:]), (stride,) + tuple(A.stride()[-2:]),
                            A.storage_offset())
    return batched(A, batch)


def _substitute(A: Tensor, X: Tensor, upper: bool, unit: bool) -> None:
    """X [b, n, k] (its own storage, dense at offset 0) <- A^-1 X for the triangle of A [b, n, n] (read in place),
    by the backend's ``trsm`` (substitution, one launch): at once for a few right-hand sides, else by blocks of 64
    rows with a matmul updating the rows still to solve."""
    be, n = backends.get(X.device), X.shape[1]
    if n <= BLOCK or X.shape[2] <= SUBSTITUTE_COLUMNS:
        be.trsm(A, X, upper, unit)
        return
    starts = range(0, n, BLOCK)
    for i in (reversed(starts) if upper else starts):
        r = slice(i, min(i + BLOCK, n))
        if upper:
            below = slice(r.stop, n)
            rhs = (X[:, r] - A[:, r, below] @ X[:, below] if r.stop < n
                   else X[:, r].clone(memory_format=contiguous_format))
        else:
            rhs = X[:, r] - A[:, r, :i] @ X[:, :i] if i else X[:, r].clone(memory_format=contiguous_format)
        be.trsm(A[:, r, r], rhs, upper, unit)
        X[:, r] = rhs


def triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of A a triangular solve reads (unit diagonal for ``unitriangular``)."""
    if not unitriangular:
        return A.triu() if upper else A.tril()
    n = A.shape[-1]
    strict = A.triu(1) if upper else A.tril(-1)
    return strict + eye(n, dtype=A.dtype, device=A.device)


def trsm(A: Tensor, B: Tensor, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """Untracked triangular solve of A [..., n, n] and B [..., n, k] (right: [..., k, n]), batches broadcast."""
    if not left:
        return trsm(A.mT, B.mT, not upper, True, unitriangular).mT
    batch = tuple(broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    out_shape = batch + tuple(B.shape[-2:])
    if B.dtype in (D.float32, D.float64) and backends.get(B.device).panels_ok(B):
        X = B.expand(out_shape).clone(memory_format=contiguous_format)
        if X.numel():
            _substitute(_batch_view(A, batch), X.reshape((math.prod(batch),) + tuple(B.shape[-2:])), upper,
                        unitriangular)
        return X
    T = batched(triangle(A, upper, unitriangular), batch)
    Bb = batched(B, batch)
    if upper:  # J A J is lower triangular for the exchange matrix J
        X = _trsm_lower(T.flip(-2, -1), Bb.flip(-2)).flip(-2)
    else:
        X = _trsm_lower(T, Bb)
    return X.reshape(out_shape)


class SolveTriangular(Function):
    """X = A^-1 B (left) or B A^-1 (right) for triangular A; backward as PyTorch's linalg_solve_triangular."""

    node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, A, B, upper, left, unitriangular):
        X = trsm(A, B, upper, left, unitriangular)
        ctx.save_for_backward(A, X)
        ctx.flags = (upper, left, unitriangular)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.flags
        gB = solve_triangular(A.mT, g, upper=not upper, left=left, unitriangular=unit)
        gA = -(gB @ X.mT) if left else -(X.mT @ gB)
        gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
        return gA, gB, None, None, None


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None) -> Tensor:
    """``linalg.solve_triangular``: X with A @ X = B (``left=False``: X @ A = B) for triangular A [..., n, n];
    only A's ``upper`` or lower triangle is read (and not its diagonal when ``unitriangular``).

    >>> clgrad.linalg.solve_triangular(clgrad.tensor([[2.0, 0.0], [1.0, 1.0]]), clgrad.ones(2, 1), upper=False)
    """
    check_matrix(A, "solve_triangular")
    check_matrix(B, "solve_triangular", "B", square=False)
    check_same(A, B, "solve_triangular")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        shape = "x".join(map(str, B.shape[-2:]))
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape})")
    X = SolveTriangular.apply(A, B, upper, left, unitriangular)
    return X if out is None else out.copy_(X)


def triangular_solve(b, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
    """Legacy ``torch.triangular_solve``: (X, A.clone()) with op(A) X = b, op(A) = A^T when ``transpose``."""
    coef = A.mT if transpose else A
    X = solve_triangular(coef, b, upper=upper != transpose, unitriangular=unitriangular)
    batch = tuple(broadcast_shapes(A.shape[:-2], b.shape[:-2]))
    return TriangularSolve(X, A.expand(batch + tuple(A.shape[-2:])).clone())


# ---- Cholesky -------------------------------------------------------------------------------------------------
def _panel(W: Tensor, k: int, e: int) -> None:
    """Unblocked right-looking Cholesky of the diagonal block W[:, k:e, k:e], in place, lower triangle."""
    for j in range(k, e):
        col = W[:, j:e, j]
        col.div_(col[:, :1].sqrt())
        if j + 1 < e:
            t = col[:, 1:]
            W[:, j + 1:e, j + 1:e].sub_(t.unsqueeze(-1) * t.unsqueeze(-2))


def potrf(A: Tensor) -> Tensor:
    """Untracked lower Cholesky factor of [..., n, n] A (lower triangle read); NaN from a failed column on."""
    n = A.shape[-1]
    W = A.reshape(math.prod(A.shape[:-2]), n, n).tril().contiguous()
    for k in range(0, n, BLOCK):
        e = min(k + BLOCK, n)
        if W.dtype in (D.float32, D.float64) and backends.get(W.device).panels_ok(W):
            backends.get(W.device).potrf_panel(W, k, e)
        else:
            _panel(W, k, e)
        if e < n:
            # L21 @ L11^T = A21, so L21^T = L11^-1 A21^T
            L21 = trsm(W[:, k:e, k:e], W[:, e:, k:e].mT, upper=False).mT
            W[:, e:, k:e] = L21
            W[:, e:, e:].sub_(L21 @ L21.mT)
    return W.tril().reshape(A.shape)


def _phi(X: Tensor) -> Tensor:
    """The lower triangle of X with its diagonal halved."""
    return X.tril() - 0.5 * X.diagonal(dim1=-2, dim2=-1).diag_embed()


class Cholesky(Function):
    """(L, info) of ``linalg.cholesky_ex``; backward as PyTorch's: gA = L^-H phi(L^H gL) L^-1, symmetrised."""

    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A, upper):
        L = potrf(A)
        info = first_index(~(L.diagonal(dim1=-2, dim2=-1) > 0))
        ctx.save_for_backward(L)
        ctx.upper = upper
        ctx.mark_non_differentiable(info)
        return (L.mT.contiguous() if upper else L), info

    @staticmethod
    def backward(ctx, gL, _ginfo=None):
        (L,) = ctx.saved_tensors
        if ctx.upper:
            gL = gL.mT
        gA = solve_triangular(L.mT, _phi(L.mT @ gL.tril()), upper=True)
        gA = solve_triangular(L, gA, upper=False, left=False)
        return 0.5 * (gA + gA.mT), None


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """``linalg.cholesky_ex``: (L, info), info [...] int32 is 0 or the order of the first leading minor that is
    not positive-definite (L is then not meaningful); raises only when ``check_errors``."""
    check_matrix(A, "cholesky")
    L, info = Cholesky.apply(A, upper)
    if check_errors:
        _raise_not_pd(A, info, "linalg.cholesky_ex")
    return CholeskyEx(L, info)


def _raise_not_pd(A: Tensor, info: Tensor, fn: str = "linalg.cholesky") -> None:
    bad = first_failure(info)
    if bad is not None:
        k, order = bad
        raise LinAlgError(f"{fn}: {batch_prefix(A, k)}The factorization could not be completed because "
                          f"the input is not positive-definite (the leading minor of order {order} is not "
                          f"positive-definite).")


def linalg_cholesky(A, *, upper: bool = False, out=None) -> Tensor:
    """``linalg.cholesky``: the lower (``upper=True``: upper) Cholesky factor of symmetric positive-definite A
    (only its lower triangle is read); raises LinAlgError with PyTorch's message otherwise.

    >>> clgrad.linalg.cholesky(clgrad.tensor([[4.0, 2.0], [2.0, 5.0]]))  # tensor([[2., 0.], [1., 2.]])
    """
    check_matrix(A, "cholesky")
    L, info = Cholesky.apply(A, upper)
    _raise_not_pd(A, info)
    return L if out is None else out.copy_(L)


def _cho_solve(B, L, upper: bool):
    """Untracked X = (L L^T)^-1 B (``upper``: (L^T L)^-1 B), reading only L's triangle."""
    if upper:
        return trsm(L, trsm(L.mT, B, upper=False), upper=True)
    return trsm(L.mT, trsm(L, B, upper=False), upper=True)


def _factor_grad(L, common, upper: bool):
    """PyTorch's gradient w.r.t. a Cholesky factor from the symmetric term ``common`` (not projected on the
    triangle: PyTorch returns the full matrix, and so does clgrad)."""
    return -(L @ common) if upper else -(common @ L)


class CholeskySolve(Function):
    """X = A^-1 B given A's Cholesky factor; backward as PyTorch's cholesky_solve_backward."""

    node_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, B, L, upper):
        X = _cho_solve(B, L, upper)
        ctx.save_for_backward(L, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx, g):
        L, X = ctx.saved_tensors
        gB = cholesky_solve(g, L, ctx.upper)
        common = gB @ X.mT
        return gB, _factor_grad(L, common + common.mT, ctx.upper), None


class CholeskyInverse(Function):
    """(L L^T)^-1 (``upper``: (L^T L)^-1); backward as PyTorch's cholesky_inverse_backward."""

    node_name = "CholeskyInverseBackward0"

    @staticmethod
    def forward(ctx, L, upper):
        n = L.shape[-1]
        X = _cho_solve(eye(n, dtype=L.dtype, device=L.device).expand(L.shape), L, upper)
        ctx.save_for_backward(L, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx, g):
        L, X = ctx.saved_tensors
        return _factor_grad(L, X @ (g + g.mT) @ X, ctx.upper), None


def cholesky(input, upper: bool = False, *, out=None) -> Tensor:
    """Legacy ``torch.cholesky(A, upper=False)``: ``linalg.cholesky``'s factor."""
    return linalg_cholesky(input, upper=upper, out=out)


def cholesky_solve(B, L, upper: bool = False, *, out=None) -> Tensor:
    """``torch.cholesky_solve(B, L)``: X with A X = B for A = L L^T (``upper``: L^T L), given its factor L."""
    check_matrix(B, "cholesky_solve", "B", square=False)
    check_matrix(L, "cholesky_solve")
    check_same(L, B, "cholesky_solve")
    X = CholeskySolve.apply(B, L, upper)
    return X if out is None else out.copy_(X)


def cholesky_inverse(L, upper: bool = False, *, out=None) -> Tensor:
    """``torch.cholesky_inverse(L)``: (L L^T)^-1 (``upper``: (L^T L)^-1) from a Cholesky factor L [..., n, n]."""
    check_matrix(L, "cholesky_inverse")
    X = CholeskyInverse.apply(L, upper)
    return X if out is None else out.copy_(X)
