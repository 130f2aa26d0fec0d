"""The public ``clgrad.stft`` / ``clgrad.istft`` (and the Tensor methods): torch's signatures, converting complex
tensors to and from (re, im) pairs through ``clgrad.fft``'s adapters; the work is in ``ops/spectral.py``."""
from __future__ import annotations

from .fft import _complex, _is_complex, _pairs
from .ops import spectral as _spectral

__all__ = ["stft", "istft"]


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",  # noqa: A002
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform: ``clgrad.stft(x, 64, window=clgrad.hann_window(64), return_complex=True)``
    is [n_fft // 2 + 1, frames] (complex). ``return_complex=False`` gives the (re, im) pairs [..., 2]."""
    complex_in = _is_complex(input) or (window is not None and _is_complex(window))
    if return_complex is None and not complex_in:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if align_to_window is not None:
        raise NotImplementedError("stft: align_to_window is not supported by clgrad")
    x = _pairs(input) if complex_in else input
    spec = _spectral.stft(x, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                          is_complex=complex_in)
    return _complex(spec) if return_complex or return_complex is None else spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,  # noqa: A002
          onesided=None, length=None, return_complex=False):
    """The inverse of ``stft`` (overlap-add): a real signal, complex with ``return_complex=True``."""
    if not _is_complex(input):
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    window_pairs = window is not None and _is_complex(window)
    if window_pairs and not return_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    y = _spectral.istft(_pairs(input), n_fft, hop_length, win_length, _pairs(window) if window_pairs else window,
                        center, normalized, onesided, length, return_complex, window_pairs)
    return _complex(y) if return_complex else y


def install(T) -> None:
    """Tensor.stft / Tensor.istft."""
    T.stft, T.istft = stft, istft
