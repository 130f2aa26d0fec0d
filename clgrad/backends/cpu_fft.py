"""cpu implementation of the ``fft`` primitive (an op family of CPUBackend): numpy's pocketfft, the reference for
``kernels/fft.cl.mako``."""
from __future__ import annotations

import numpy as np

from .common import view_of


class CPUFFT:
    PRIMITIVES = ("fft_c2c", "fft_r2c", "fft_c2r")

    def __init__(self, backend):
        self.be = backend

    def fft_c2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """The batched complex transform of the last axis of the pairs ``x`` into ``out``; see
        interface.Backend.fft_c2c."""
        if out.numel() == 0:
            return
        a = view_of(x)
        z = a[..., 0] + 1j * a[..., 1]  # complex128 for float64, complex64 for float32 (numpy >= 2 keeps it)
        # numpy's "forward" norm leaves the inverse unscaled: both directions are the plain sums here
        r = np.fft.ifft(z, axis=-1, norm="forward") if inverse else np.fft.fft(z, axis=-1)
        if scale != 1.0:
            r *= scale
        o = view_of(out)
        o[..., 0] = r.real
        o[..., 1] = r.imag

    def fft_r2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """rfft of the last axis of the real ``x`` into the pairs ``out``; see interface.Backend.fft_r2c."""
        if out.numel() == 0:
            return
        r = np.fft.rfft(view_of(x), axis=-1) * scale
        o = view_of(out)
        o[..., 0] = r.real
        o[..., 1] = -r.imag if inverse else r.imag

    def fft_c2r(self, out, x, scale: float = 1.0) -> None:
        """irfft of the half spectra ``x`` into the real ``out``; see interface.Backend.fft_c2r."""
        if out.numel() == 0:
            return
        a = view_of(x)
        r = np.fft.irfft(a[..., 0] + 1j * a[..., 1], n=out.shape[-1], axis=-1, norm="forward")
        np.copyto(view_of(out), r * scale if scale != 1.0 else r, casting="unsafe")
