"""torch.fft's namespace: ``clgrad.fft.fft(x)``, ``rfft``, ``irfftn``, ``fftfreq``, ``fftshift`` ...

The transforms run on (re, im) pair tensors (``ops/fft_core.py``); this module converts at its boundary, through
``_pairs`` (a complex tensor -> ``clgrad.view_as_real``, a real one -> a zero imaginary part) and ``_complex``
(``clgrad.view_as_complex``). Both need clgrad's complex dtypes; without them they raise NotImplementedError.

>>> x = clgrad.randn(8)
>>> clgrad.fft.irfft(clgrad.fft.rfft(x), n=8)  # x again
"""
from __future__ import annotations

import clgrad as _clgrad

from . import dtypes as D
from .ops import fft_core as _core
from .ops.creation import arange as _arange
from .ops.creation import zeros as _zeros
from .ops.joins import stack as _stack
from .ops.rearrange import roll as _roll
from .strides import wrap_dim as _wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _is_complex(x) -> bool:
    return bool(getattr(x, "is_complex", lambda: False)())


def _pairs(x):
    """A tensor as (re, im) pairs: a complex one viewed as real, a real one with a zero imaginary part."""
    if _is_complex(x):
        return _needs("view_as_real")(x)
    real = _core._real(x)
    return _stack([real, _zeros(real.shape, dtype=real.dtype, device=real.device)], -1)


def _complex(p):
    """(re, im) pairs as a complex tensor (a view)."""
    return _needs("view_as_complex")(p.contiguous())


def _needs(name: str):
    fn = getattr(_clgrad, name, None)
    if fn is None:
        raise NotImplementedError(
            f"clgrad.fft needs complex tensors (clgrad.{name}), which this build of clgrad does not have yet; "
            "clgrad.ops.fft_core has every transform on (re, im) pair tensors meanwhile")
    return fn


def _real_input(name: str, x):
    if _is_complex(x):
        raise RuntimeError(f"{name} expects a real input tensor, but got {x.dtype}")
    return x


def fft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The 1-D discrete Fourier transform along ``dim``: ``clgrad.fft.fft(x, n=16)``."""
    return _complex(_core.fft(_pairs(input), n, dim, norm))


def ifft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse of ``fft``."""
    return _complex(_core.ifft(_pairs(input), n, dim, norm))


def rfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The FFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _complex(_core.rfft(_real_input("rfft", input), n, dim, norm))


def irfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse of ``rfft``: a real signal of length ``n`` (default 2 * (m - 1))."""
    return _core.irfft(_pairs(input), n, dim, norm)


def hfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The FFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    return _core.hfft(_pairs(input), n, dim, norm)


def ihfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse of ``hfft``: the half spectrum of a real signal."""
    return _complex(_core.ihfft(_real_input("ihfft", input), n, dim, norm))


def fftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D FFT over ``dim`` (all dims, or the last len(s)), each resized to ``s``."""
    return _complex(_core.fftn(_pairs(input), s, dim, norm))


def ifftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of ``fftn``."""
    return _complex(_core.ifftn(_pairs(input), s, dim, norm))


def rfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D FFT of a real signal, halved along the last of ``dim``."""
    return _complex(_core.rfftn(_real_input("rfftn", input), s, dim, norm))


def irfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of ``rfftn``."""
    return _core.irfftn(_pairs(input), s, dim, norm)


def hfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D ``hfft``: a real result from a Hermitian half spectrum."""
    return _core.hfftn(_pairs(input), s, dim, norm)


def ihfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of ``hfftn``."""
    return _complex(_core.ihfftn(_real_input("ihfftn", input), s, dim, norm))


def fft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``fftn`` over the last two dims."""
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``ifftn`` over the last two dims."""
    return ifftn(input, s, dim, norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``rfftn`` over the last two dims."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``irfftn`` over the last two dims."""
    return irfftn(input, s, dim, norm)


def hfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``hfftn`` over the last two dims."""
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """``ihfftn`` over the last two dims."""
    return ihfftn(input, s, dim, norm)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **_):
    """The sample frequencies of an ``n``-point FFT: [0, 1, ..., -(n // 2), ..., -1] / (d * n)."""
    k = _arange(n, dtype=dtype or D.get_default_dtype(), device=device)
    k = k - n * (k >= (n + 1) // 2).to(k.dtype)
    return (k * (1.0 / (n * d))).requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **_):
    """The sample frequencies of ``rfft``: [0, 1, ..., n // 2] / (d * n)."""
    k = _arange(n // 2 + 1, dtype=dtype or D.get_default_dtype(), device=device)
    return (k * (1.0 / (n * d))).requires_grad_(requires_grad)


def _shift(input, dim, sign: int):
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.dim()) for d in dims]
    if not dims:
        return input.clone()
    return _roll(input, [sign * (input.shape[d] // 2) for d in dims], dims)


def fftshift(input, dim=None):  # noqa: A002
    """Moves the zero frequency to the centre: a roll by n // 2 along ``dim`` (all dims by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of ``fftshift``: a roll by -(n // 2)."""
    return _shift(input, dim, -1)
