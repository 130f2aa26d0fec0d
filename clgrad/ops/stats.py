"""Statistics over dims: ``var``/``std`` (and ``var_mean``/``std_mean``), ``logsumexp``, ``norm``,
``count_nonzero``, ``aminmax``, with PyTorch's signatures, dtypes and errors.

They are compositions of the reductions (two-pass variance: the mean, then the sum of squared deviations,
float16 computing in float32). Each differentiable op is a ``Function`` named as PyTorch names its node; its
backward is written in clgrad ops.
"""
from __future__ import annotations

import builtins
import math
import warnings

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor
from . import reduction as R
from .creation import full
from .guard import tensor_first, user_stacklevel
from .linalg_svd import svdvals
from .reduction import _unreduce
from .views import wrap_dim

__all__ = ['var', 'std', 'var_mean', 'std_mean', 'logsumexp', 'norm', 'count_nonzero', 'aminmax']


def _new(shape, dt, device):
    return Tensor._empty(tuple(shape), dt, device)


class _MinMax(tuple):
    """``(min, max)`` as ``torch.return_types.aminmax``."""

    def __new__(cls, mn, mx):
        return tuple.__new__(cls, (mn, mx))

    min = property(lambda self: self[0])  # noqa: A003 - torch's field names
    max = property(lambda self: self[1])  # noqa: A003

    def __repr__(self) -> str:
        return f"clgrad.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"




def _squeeze_dims(t, dims, keepdim: bool):
    """Drop the (size-1) reduced ``dims`` of a keepdim result unless ``keepdim``."""
    if keepdim:
        return t
    return t.reshape(tuple(n for d, n in enumerate(t.shape) if d not in dims))


def _count(x, dims) -> int:
    return math.prod(x.shape[d] for d in dims)


def _float_in(x):
    """float16 computes in float32 (sums of squares overflow half quickly); other dtypes as they are."""
    return x.float() if x.dtype in D.HALF_FLOATS else x


# ---- var / std ----------------------------------------------------------------------------------
def _correction(name: str, dim, unbiased, correction):
    if isinstance(dim, bool):  # var(x, True): the legacy unbiased flag in dim's place
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both 'unbiased' and 'correction'")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    return dim, correction


def _moments(x, dims: tuple, correction, keepdim: bool):
    """(variance, mean) in x's dtype: the mean first, then the sum of squared deviations from it."""
    xf = _float_in(x)
    mu = R.mean(xf, dims, keepdim=True)
    dev = xf - mu
    n = _count(x, dims)
    dof = builtins.max(0, n - correction)
    if dof <= 0:
        warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=user_stacklevel())
    v = R.sum(dev * dev, dims, keepdim=keepdim) / dof
    return v.to(x.dtype), _squeeze_dims(mu, dims, keepdim).to(x.dtype)


def _check_float(name: str, x) -> None:
    if x.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")


class _Moments(Function):
    """var / std (and with the mean): ``d var / dx = 2 (x - mean) / (N - correction)``."""

    sqrt, with_mean = False, False

    @classmethod
    def forward(cls, ctx, x, dims, correction, keepdim):
        v, mu = _moments(x, dims, correction, keepdim)
        out = v.sqrt() if cls.sqrt else v
        ctx.meta = (dims, correction, keepdim)
        ctx.save_for_backward(x, out)
        ctx.set_materialize_grads(False)  # an unused output adds nothing (not 0 * inf when dof is 0)
        return (out, mu) if cls.with_mean else out

    @classmethod
    def backward(cls, ctx, grad, grad_mean=None):
        x, out = ctx.saved_tensors
        dims, correction, keepdim = ctx.meta
        n = _count(x, dims)
        g = None
        if grad is not None:
            if cls.sqrt:  # d std = d var / (2 std); torch gives 0 where std is 0
                grad = (grad / (2 * out)).where(out != 0, 0.0)
            dof = n - correction
            scale = 2 / dof if dof > 0 else math.inf  # as torch: no degrees of freedom give inf / nan gradients
            g = _unreduce(grad, x.shape, dims, keepdim) * (x - R.mean(x, dims, keepdim=True)) * scale
        if grad_mean is not None:
            gm = _unreduce(grad_mean, x.shape, dims, keepdim) / n
            g = gm if g is None else g + gm
        return g, None, None, None


class _Var(_Moments):
    node_name = "VarBackward0"


class _Std(_Moments):
    node_name, sqrt = "StdBackward0", True


class _VarMean(_Moments):
    node_name, with_mean = "VarMeanBackward0", True


class _StdMean(_Moments):
    node_name, sqrt, with_mean = "StdMeanBackward0", True, True


def _stat(fn, name, input, dim, unbiased, keepdim, correction):
    dim, correction = _correction(name, dim, unbiased, correction)
    _check_float(name, input)
    dims = R._dims(name, input, dim)
    if needs_graph(input):
        return fn.apply(input, dims, correction, keepdim)
    v, mu = _moments(input, dims, correction, keepdim)
    out = v.sqrt() if fn.sqrt else v
    return (out, mu) if fn.with_mean else out


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` (int, tuple or None) with ``correction`` (default 1, Bessel's) or ``unbiased``.

    >>> clgrad.var(clgrad.tensor([1.0, 2.0, 4.0]))  # tensor(2.3333)
    """
    return _stat(_Var, "var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of ``var`` with the same arguments."""
    return _stat(_Std, "std", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` in one call."""
    return _stat(_VarMean, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` in one call."""
    return _stat(_StdMean, "std_mean", input, dim, unbiased, keepdim, correction)


# ---- logsumexp ----------------------------------------------------------------------------------
def _logsumexp(x, dims: tuple, keepdim: bool):
    xf = _float_in(x)
    kept = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    if _count(x, dims) == 0:  # an empty sum of exponentials is 0
        return _squeeze_dims(full(kept, -math.inf, dtype=x.dtype, device=x.device), dims, keepdim)
    m = R.amax(xf, dims, keepdim=True)
    m = m.where(~m.isinf(), 0.0)  # rows of -inf (or with +inf) must not shift by an infinity: inf - inf is nan
    out = R.sum((xf - m).exp(), dims, keepdim=True).log() + m
    return _squeeze_dims(out, dims, keepdim).to(x.dtype)


class _Logsumexp(Function):
    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = _logsumexp(x, dims, keepdim)
        ctx.meta = (dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        return _unreduce(grad, x.shape, dims, keepdim) * (x - _unreduce(out, x.shape, dims, keepdim)).exp(), None, None


def logsumexp(input, dim=(), keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, shifted by the row maximum so large values don't overflow.

    >>> clgrad.logsumexp(clgrad.tensor([1000.0, 1000.0]), 0)  # tensor(1000.6931)
    """
    if input.dtype.kind != "f":
        input = input.to(D.get_default_dtype())
    dims = R._dims("logsumexp", input, dim)
    if needs_graph(input):
        return _Logsumexp.apply(input, dims, keepdim)
    return _logsumexp(input, dims, keepdim)


# ---- norm ---------------------------------------------------------------------------------------
def _vector_norm(x, p, dims: tuple, keepdim: bool):
    xf = _float_in(x)
    if p == 0:
        out = R.sum(xf != 0, dims, keepdim=keepdim).to(xf.dtype)
    elif math.isinf(p):
        if x.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor because the "
                               "operation does not have an identity")
        out = (R.amax if p > 0 else R.amin)(xf.abs(), dims, keepdim=keepdim)
    elif p == 1:
        out = R.sum(xf.abs(), dims, keepdim=keepdim)
    elif p == 2:
        out = R.sum(xf * xf, dims, keepdim=keepdim).sqrt()
    else:
        out = R.sum(xf.abs() ** p, dims, keepdim=keepdim) ** (1.0 / p)
    return out.to(x.dtype)


class _Norm(Function):
    """PyTorch's linalg_vector_norm_backward: subgradient 0 where the norm is 0, ties of the inf-norm share."""

    node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        out = _vector_norm(x, p, dims, keepdim)
        ctx.meta = (p, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        p, dims, keepdim = ctx.meta
        g, norm = _unreduce(grad, x.shape, dims, keepdim), _unreduce(out, x.shape, dims, keepdim)
        if p == 0:  # torch leaves the gradient undefined (x.grad stays None)
            return None, None, None, None
        if p == 1:
            return g * x.sign(), None, None, None
        if math.isinf(p):
            hit = x.abs() == norm
            return x.sign() * g * hit / R.sum(hit, dims, keepdim=True), None, None, None
        if p < 1:
            scaled = x.sign() * (x.abs() ** (p - 1)).where(x != 0, 0.0)
            return scaled * g * norm ** (1 - p), None, None, None
        scaled = x * x.abs() ** (p - 2) if p >= 2 else x.sign() * x.abs() ** (p - 1)
        scale = (g / norm ** (p - 1)).where(norm != 0, 0.0)
        return scaled * scale, None, None, None


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm over ``dim`` (all elements by default): p = 2 / 'fro', 1, inf, -inf, 0 or any number;
    p='nuc' is the nuclear matrix norm over a 2-D input or a 2-tuple ``dim`` (see ``linalg.matrix_norm``).

    >>> clgrad.norm(clgrad.tensor([3.0, 4.0]))  # tensor(5.)
    """
    if p is None or p == "fro":
        if isinstance(dim, (tuple, list)) and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        p = 2
    elif p == "nuc":
        return matrix_norm(input, "nuc", tuple(range(input.dim())) if dim is None else dim, keepdim, dtype=dtype)
    elif isinstance(p, str):
        raise RuntimeError(f"linalg.vector_norm: Expected a number for ord, but got '{p}'")
    if dtype is not None:
        input = input.to(D.as_dtype(dtype))
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {input.dtype.scalar_name}")
    dims = R._dims("norm", input, dim)
    if needs_graph(input):
        return _Norm.apply(input, float(p), dims, keepdim)
    return _vector_norm(input, float(p), dims, keepdim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - torch's name
    """``linalg.vector_norm``: the ord-norm of the elements over ``dim`` (all by default), any real ord."""
    if ord is None or isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return norm(x, ord, dim, keepdim, dtype)


def _matrix_dims(A, dim) -> tuple:
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = (wrap_dim(d, A.dim()) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002 - torch's name
    """``linalg.matrix_norm``: 'fro', 'nuc' (sum of singular values), 2 / -2 (largest / smallest singular value),
    1 / -1 (max / min column abs-sum), inf / -inf (max / min row abs-sum) of the matrices over ``dim``.

    The singular values come from ``linalg.svdvals`` (the backend's SVD primitive, on the device).
    >>> clgrad.linalg.matrix_norm(clgrad.eye(3), "nuc")  # tensor(3.)
    """
    d0, d1 = _matrix_dims(A, dim)
    if dtype is not None:
        A = A.to(D.as_dtype(dtype))
    if A.dtype.kind != "f":
        raise RuntimeError(
            f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {A.dtype.scalar_name}")
    if ord == "fro":
        return norm(A, 2, (d0, d1), keepdim)
    if ord not in ("nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.numel() == 0 and ord in ("nuc", 2, 1, math.inf):  # torch: 0, as the empty sum
        return R.sum(A.abs(), (d0, d1), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        rest = [d for d in range(A.dim()) if d not in (d0, d1)]
        s = svdvals(A.permute(*rest, d0, d1))
        out = R.sum(s, -1) if ord == "nuc" else (R.amax if ord == 2 else R.amin)(s, -1)
        return out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1)) if keepdim else out
    summed, other = (d0, d1) if abs(ord) == 1 else (d1, d0)  # 1: column sums; inf: row sums
    if not keepdim and summed < other:
        other -= 1
    return (R.amax if ord > 0 else R.amin)(R.sum(A.abs(), summed, keepdim=keepdim), other, keepdim=keepdim)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - torch's name
    """``linalg.norm``: a vector norm over one dim (or all, ord None), a matrix norm over two dims (or of a 2-D
    input given an ord)."""
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if dim is None and ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if isinstance(ord, str) or dim is not None and len(dim) == 2 or dim is None and ord is not None and A.dim() == 2:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def count_nonzero(input, dim=None):
    """How many elements over ``dim`` (int, tuple or None for all) are not zero, as int64."""
    return R.sum(input != 0, dim=dim)


def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (or every element) in one call."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
    d = () if dim is None else dim
    return _MinMax(R.amin(input, d, keepdim), R.amax(input, d, keepdim))


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        if name not in ("var_mean", "std_mean"):
            setattr(T, name, globals()[name])


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
