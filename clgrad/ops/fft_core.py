"""torch.fft's transforms on (re, im) PAIR tensors: a complex signal of shape S is a real float32/float64 tensor of
shape S + (2,). ``clgrad.fft`` converts complex tensors to and from pairs at its boundary; everything here is real
arithmetic, so it is differentiable with the ordinary real autograd (the gradient of a pair tensor is PyTorch's
complex gradient viewed as real, ``torch.view_as_real(z.grad)``).

One kernel primitive does the work: the backends' ``fft_c2c`` (a batched complex transform along the contiguous
axis -2 of a pairs buffer). ``_C2C`` moves a dim there (a contiguous copy), transforms and moves it back; its
backward is the opposite-direction transform with the same scale (the adjoint of a scaled DFT). The real
transforms are compositions of it with differentiable view/join ops, so their gradients are PyTorch's formulas:
r2c is "append a zero imaginary part, c2c, keep the first n//2 + 1 bins" (for even n one ``fft_r2c`` launch
sequence, ``_R2C``, whose backward pads the gradient with zeros, transforms back and keeps the real part, as
``fft_r2c_backward``), c2r is "complete the Hermitian half spectrum,
c2c, keep the real part" (its adjoint is rfft of the gradient with bins 1 .. n - n//2 - 1 doubled, as
``fft_c2r_backward``; for even n one ``fft_c2r`` launch sequence, ``_C2R``, with that backward).

The public names mirror torch.fft with pairs for complex tensors: ``fft(p, n, dim, norm)`` ... ``ihfftn``. Dims
count the complex dims (the pairs' last axis is not one).
"""
from __future__ import annotations

import math

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..strides import wrap_dim
from ..tensor import Tensor
from .creation import empty, tensor, zeros
from .joins import cat, stack

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "conj"]

NORMS = ("backward", "ortho", "forward")


class _C2C(Function):
    """``scale * DFT`` of pairs ``p`` along complex dim ``dim`` (the inverse sign when ``inverse``)."""

    @staticmethod
    def forward(ctx, p, dim, scale, inverse):
        ctx.args = (dim, scale, inverse)
        return c2c_raw(p, dim, scale, inverse)

    @staticmethod
    def backward(ctx, g):
        dim, scale, inverse = ctx.args
        return _C2C.apply(g, dim, scale, not inverse), None, None, None


class _R2C(Function):
    """The n // 2 + 1 first bins of ``_C2C`` of a real ``x`` along ``dim`` (n even: the backends' ``fft_r2c``, a
    half-length complex transform). Backward: torch's ``fft_r2c_backward``, the gradient zero-padded to n bins,
    the opposite-direction c2c, its real part."""

    @staticmethod
    def forward(ctx, x, dim, scale, inverse):
        ctx.args = (dim, scale, inverse, x.shape[dim])
        xc = x.movedim(dim, -1).contiguous()
        out = empty(xc.shape[:-1] + (xc.shape[-1] // 2 + 1, 2), dtype=x.dtype, device=x.device)
        backends.get(x.device).fft_r2c(out, xc, inverse, scale)
        return out.movedim(-2, dim)

    @staticmethod
    def backward(ctx, g):
        dim, scale, inverse, n = ctx.args
        return _C2C.apply(_resize(g, dim, n), dim, scale, not inverse).select(-1, 0), None, None, None


class _C2R(Function):
    """irfft along ``dim`` of a half spectrum ``p`` of n // 2 + 1 bins (n even: the backends' ``fft_c2r``).
    Backward: torch's ``fft_c2r_backward``, rfft of the gradient with bins 1 .. n/2 - 1 doubled."""

    @staticmethod
    def forward(ctx, p, dim, n, scale):
        ctx.args = (dim, n, scale)
        pc = p.movedim(dim, -2).contiguous()
        out = empty(pc.shape[:-2] + (n,), dtype=p.dtype, device=p.device)
        backends.get(p.device).fft_c2r(out, pc, scale)
        return out.movedim(-1, dim)

    @staticmethod
    def backward(ctx, g):
        dim, n, scale = ctx.args
        gi = _R2C.apply(g, dim, scale, False)
        twice = [1.0] + [2.0] * (n // 2 - 1) + [1.0]
        shape = [1] * gi.dim()
        shape[dim] = n // 2 + 1
        return gi * tensor(twice, dtype=g.dtype, device=g.device).reshape(shape), None, None, None


def c2c_raw(p: Tensor, dim: int, scale: float, inverse: bool) -> Tensor:
    """The transform of ``_C2C`` without autograd (``dim`` a non-negative complex dim)."""
    x = p.movedim(dim, -2).contiguous()
    out = empty(x.shape, dtype=x.dtype, device=x.device)
    backends.get(x.device).fft_c2c(out, x, inverse, scale)
    return out.movedim(-2, dim)


def conj(p: Tensor) -> Tensor:
    """The complex conjugate of pairs (a new tensor)."""
    return stack([p.select(-1, 0), -p.select(-1, 1)], -1)


# ---- argument handling (PyTorch's rules and messages) -------------------------------------------------------
def _scale(norm, n: int, inverse: bool) -> float:
    """The factor of a transform over ``n`` points: torch's ``norm`` modes, ``inverse`` for ifft/irfft/ihfft."""
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    return 1.0 / n if (norm == "forward") != inverse and n else 1.0


def _float_dtype(t: Tensor, pairs: bool) -> None:
    if t.dtype is D.float16 or t.dtype.name == "bfloat16":  # bfloat16: another branch adds it
        raise RuntimeError(f"Unsupported dtype {'Half' if t.dtype is D.float16 else 'BFloat16'}")
    if pairs and (t.dim() == 0 or t.shape[-1] != 2 or not t.dtype.is_floating_point):
        raise ValueError(f"expected (re, im) pairs: a float tensor whose last dim is 2, got {tuple(t.shape)}")


def _real(x: Tensor) -> Tensor:
    """A real input as float32/float64 (integers and bool as the default dtype, as torch)."""
    _float_dtype(x, False)
    return x if x.dtype.is_floating_point else x.to(D.get_default_dtype())


def _dims(ndim: int, s, dim, default_all: bool = True):
    """torch's fftn rules: (sizes or None per dim, dims) from ``s`` and ``dim``."""
    if dim is not None:
        dims = [wrap_dim(d, ndim) for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        dims = list(range(ndim - len(s), ndim))
    else:
        dims = list(range(ndim)) if default_all else []
    sizes = [None if s is None or s[i] == -1 else int(s[i]) for i in range(len(dims))]
    for n in sizes:
        if n is not None and n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return sizes, dims


def _resize(t: Tensor, dim: int, n: int) -> Tensor:
    """``t`` trimmed or zero-padded to ``n`` along ``dim``."""
    cur = t.shape[dim]
    if n < cur:
        return t.narrow(dim, 0, n)
    if n > cur:
        shape = list(t.shape)
        shape[dim] = n - cur
        return cat([t, zeros(shape, dtype=t.dtype, device=t.device)], dim)
    return t


def _sized(t: Tensor, sizes, dims):
    """``t`` resized along ``dims`` (None keeps a size); each size checked >= 1 as torch."""
    out = []
    for n, d in zip(sizes, dims):
        n = t.shape[d] if n is None else n
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        t = _resize(t, d, n)
        out.append(n)
    return t, out


def _transform(p: Tensor, dims, scale: float, inverse: bool) -> Tensor:
    """c2c along each of ``dims`` (complex dims, non-negative), the scale applied once."""
    for i, d in enumerate(dims):
        p = _C2C.apply(p, d, scale if i == len(dims) - 1 else 1.0, inverse)
    return p


# ---- the three kinds --------------------------------------------------------------------------------------
def _c2c(p: Tensor, s, dim, norm, inverse: bool, default_all: bool = True) -> Tensor:
    _float_dtype(p, True)
    sizes, dims = _dims(p.dim() - 1, s, dim, default_all)
    p, ns = _sized(p, sizes, dims)
    return _transform(p, dims, _scale(norm, math.prod(ns), inverse), inverse)


def _r2c(x: Tensor, s, dim, norm, inverse: bool, default_all: bool = True) -> Tensor:
    """rfftn (``inverse``: the + sign, ihfftn) of a real tensor: the last of the dims keeps n // 2 + 1 bins."""
    x = _real(x)
    sizes, dims = _dims(x.dim(), s, dim, default_all)
    x, ns = _sized(x, sizes, dims)
    scale = _scale(norm, math.prod(ns), inverse)
    last, first_scale = dims[-1], scale if len(dims) == 1 else 1.0
    if ns[-1] % 2 == 0:
        p = _R2C.apply(x, last, first_scale, inverse)
    else:
        p = stack([x, zeros(x.shape, dtype=x.dtype, device=x.device)], -1)
        p = _C2C.apply(p, last, first_scale, inverse).narrow(last, 0, ns[-1] // 2 + 1)
    return _transform(p, dims[:-1], scale, inverse)


def _c2r(p: Tensor, s, dim, norm, scale_inverse: bool, default_all: bool = True) -> Tensor:
    """irfftn of pairs (the + sign): the last dim holds a Hermitian half spectrum; its output length is
    ``s[-1]``, or 2 * (m - 1) for m bins. ``scale_inverse``: the norm counts as an inverse transform's."""
    _float_dtype(p, True)
    sizes, dims = _dims(p.dim() - 1, s, dim, default_all)
    last = dims[-1]
    n_last = sizes[-1] if sizes[-1] is not None else 2 * (p.shape[last] - 1)
    if n_last < 1:
        raise RuntimeError(f"Invalid number of data points ({n_last}) specified")
    p, ns = _sized(p, sizes[:-1], dims[:-1])
    scale = _scale(norm, math.prod(ns) * n_last, scale_inverse)
    p = _transform(p, dims[:-1], 1.0, True)
    half = _resize(p, last, n_last // 2 + 1)
    if n_last % 2 == 0:
        return _C2R.apply(half, last, n_last, scale)
    tail = n_last - (n_last // 2 + 1)
    if tail:
        half = cat([half, conj(half.narrow(last, 1, tail)).flip(last)], last)
    return _C2C.apply(half, last, scale, True).select(-1, 0)


# ---- torch.fft's names on pairs ---------------------------------------------------------------------------
def _one(dim):
    return None if dim is None else [dim]


def _n(n):
    return None if n is None else [n]


def fft(p, n=None, dim=-1, norm=None):
    return _c2c(p, _n(n), _one(dim), norm, False)


def ifft(p, n=None, dim=-1, norm=None):
    return _c2c(p, _n(n), _one(dim), norm, True)


def rfft(x, n=None, dim=-1, norm=None):
    return _r2c(x, _n(n), _one(dim), norm, False)


def irfft(p, n=None, dim=-1, norm=None):
    return _c2r(p, _n(n), _one(dim), norm, True)


def hfft(p, n=None, dim=-1, norm=None):
    return _c2r(conj(p), _n(n), _one(dim), norm, False)


def ihfft(x, n=None, dim=-1, norm=None):
    return _r2c(x, _n(n), _one(dim), norm, True)


def fftn(p, s=None, dim=None, norm=None):
    return _c2c(p, s, dim, norm, False)


def ifftn(p, s=None, dim=None, norm=None):
    return _c2c(p, s, dim, norm, True)


def rfftn(x, s=None, dim=None, norm=None):
    return _r2c(x, s, dim, norm, False)


def irfftn(p, s=None, dim=None, norm=None):
    return _c2r(p, s, dim, norm, True)


def hfftn(p, s=None, dim=None, norm=None):
    return _c2r(conj(p), s, dim, norm, False)


def ihfftn(x, s=None, dim=None, norm=None):
    return _r2c(x, s, dim, norm, True)


def fft2(p, s=None, dim=(-2, -1), norm=None):
    return fftn(p, s, dim, norm)


def ifft2(p, s=None, dim=(-2, -1), norm=None):
    return ifftn(p, s, dim, norm)


def rfft2(x, s=None, dim=(-2, -1), norm=None):
    return rfftn(x, s, dim, norm)


def irfft2(p, s=None, dim=(-2, -1), norm=None):
    return irfftn(p, s, dim, norm)


def hfft2(p, s=None, dim=(-2, -1), norm=None):
    return hfftn(p, s, dim, norm)


def ihfft2(x, s=None, dim=(-2, -1), norm=None):
    return ihfftn(x, s, dim, norm)
