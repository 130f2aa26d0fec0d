"""OpenCL implementation of the ``fft`` primitive (an op family of OpenCLBackend): ``fft_c2c``, launches of
``kernels/fft.cl.mako``. See ``cpu_fft.CPUFFT`` for the reference semantics.

A length whose prime factors are all in (2, 3, 5, 7) is one mixed-radix Stockham pass per factor (radix 4 first,
then 2, 3, 5, 7; one launch each), ping-ponging between ``out`` and one temporary so that the last pass writes
``out``. Any other length goes through Bluestein's chirp-z: the transform becomes a circular convolution of length
M (the power of two >= 2n - 1), done as two power-of-two FFTs and a pointwise product with the filter's transform.
Twiddle tables, chirps and the filter's transform are computed on the host in float64 (numpy), rounded once to the
dtype and cached per (device, length, dtype, direction), so the error grows like that of a float64 plan rounded to
the dtype, not like sines computed in float32.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ..common import INT32_MAX
from . import programs
from .launch import Args, Launcher, index_type, launch_size

RADICES = (4, 2, 3, 5, 7)
LOCAL = 64  # work-items per row of the one-launch local-memory kernel
LOCAL_BYTES = None  # the most local memory the local kernel takes: None is half the device's (tests set 0)
SPECIALIZE = 256  # from this length on, the local kernel is rendered for its radices (a build per length)


def factor(n: int) -> tuple[list[int], int]:
    """The Stockham radices of ``n`` and the part of it they leave (1 when ``n`` needs no Bluestein)."""
    radices = []
    for r in RADICES:
        while n % r == 0 and n > 1:
            radices.append(r)
            n //= r
    return radices, n


class _Plan:
    """What the kernels of one (device, length, dtype, direction) read: a twiddle table, and for a Bluestein length
    the chirp, the transformed filter and the power-of-two plan."""

    def __init__(self, be, dev, dt: D.dtype, n: int, inverse: bool, sub):
        radices, rest = factor(n)
        self.n, self.radices = n, (radices or [1]) if rest == 1 else None
        host = lambda z: be_upload(be, dev, dt, z)  # noqa: E731
        if self.radices is not None:
            self.tw = host(np.exp(-2j * np.pi * np.arange(n) / n))
            return
        self.M = sub.n
        sign = 1.0 if inverse else -1.0
        chirp = np.exp(sign * 1j * np.pi * (np.arange(n, dtype=np.int64) ** 2 % (2 * n)) / n)
        filt = np.zeros(self.M, np.complex128)
        filt[:n] = chirp.conj()
        filt[self.M - n + 1:] = chirp[1:][::-1].conj()
        self.chirp, self.filt = host(chirp), host(np.fft.fft(filt) / self.M)
        self.sub = sub  # the power-of-two plan of length M


def be_upload(be, dev, dt: D.dtype, z: np.ndarray):
    """A storage holding the complex host array ``z`` as (re, im) pairs of ``dt``."""
    pairs = np.stack([z.real, z.imag], -1).astype(dt.np).ravel()
    st = be.empty(dev, dt, pairs.size)
    be.write(st, pairs)
    return st


class CLFFT:
    PRIMITIVES = ("fft_c2c", "fft_r2c", "fft_c2r")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._plans = launcher.cache(64)

    def fft_c2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """The batched complex transform of the last axis of the pairs ``x`` into ``out``; see
        interface.Backend.fft_c2c."""
        dt = out.dtype
        if out.numel() == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, dt)
        n = out.shape[-2]
        rows = out.numel() // (2 * n)
        self._c2c(dev, out.device, dt, n, inverse, (x._storage, x._offset), (out._storage, out._offset), rows, scale)

    def fft_r2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """rfft of the last axis of the real ``x`` into the pairs ``out``; see interface.Backend.fft_r2c. The real
        row read as n/2 (re, im) pairs is one half-length complex transform; the ``rpost`` kernel untangles it."""
        dt = out.dtype
        if out.numel() == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, dt)
        n = x.shape[-1]
        h, rows = n // 2, x.numel() // n
        z = self.be.empty(out.device, dt, rows * n)
        self._c2c(dev, out.device, dt, h, False, (x._storage, x._offset), (z, 0), rows, 1.0)
        rw = self._real_twiddles(out.device, dev, dt, n)
        self._launch(dev, dt, "rpost", rows * (h + 1), [(z, None), (out._storage, out._offset), (rw, None)], [h],
                     [-1.0 if inverse else 1.0, scale])

    def fft_c2r(self, out, x, scale: float = 1.0) -> None:
        """irfft of the half spectra ``x`` into the real ``out``; see interface.Backend.fft_c2r: the ``cpre`` kernel
        folds them into one half-length complex input whose inverse transform, read as pairs, is the output."""
        dt = out.dtype
        if out.numel() == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, dt)
        n = out.shape[-1]
        h, rows = n // 2, out.numel() // n
        z = self.be.empty(out.device, dt, rows * n)
        rw = self._real_twiddles(out.device, dev, dt, n)
        self._launch(dev, dt, "cpre", rows * h, [(x._storage, x._offset), (z, None), (rw, None)], [h])
        self._c2c(dev, out.device, dt, h, True, (z, 0), (out._storage, out._offset), rows, 2.0 * scale)

    def _real_twiddles(self, device, dev, dt, n: int):
        """exp(-2 pi i k / n) for k <= n/2, cached."""
        key = ("rw", dev.index, n, dt.name)
        rw = self._plans.get(key)
        if rw is None:
            rw = self._plans[key] = be_upload(self.be, device, dt, np.exp(-2j * np.pi * np.arange(n // 2 + 1) / n))
        return rw

    def _c2c(self, dev, device, dt, n: int, inverse: bool, src, dst, rows: int, scale: float) -> None:
        """``rows`` transforms of length ``n`` from ``src`` to ``dst`` ((storage, offset) pairs)."""
        plan = self._plan(device, dev, dt, n, inverse)
        sgn = -1.0 if inverse else 1.0
        if plan.radices is not None:
            return self._stockham(dev, device, dt, plan, src, dst, rows, sgn, scale)
        self._bluestein(dev, device, dt, plan, src, dst, rows, sgn, scale)

    def _plan(self, device, dev, dt: D.dtype, n: int, inverse: bool) -> _Plan:
        key = (dev.index, n, dt.name, inverse)
        plan = self._plans.get(key)
        if plan is None:
            sub = None if factor(n)[1] == 1 else self._plan(device, dev, dt, 1 << (2 * n - 2).bit_length(), False)
            plan = self._plans[key] = _Plan(self.be, device, dt, n, inverse, sub)
        return plan

    def _launch(self, dev, dt, kind, total, buffers, ints, scalars=(), radix=0, size=0):
        idx_np, idx_t = index_type(max(size, 4 * total) > INT32_MAX)
        params = dict(kind=kind, radix=radix, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, passes=(), length=0)
        args = Args(idx_np)
        for buf, off in buffers:
            args.buf(buf.data)
            if off is not None:
                args.idx(off)
        args.idx(*ints, total)
        args.scalar(dt.np, *scalars)
        name = f"fft_{kind}{radix or ''}_{dt.ctype}"
        kernel = programs.get_kernel(dev, "fft", name, tuple(args.types), params)
        kernel(dev.queue, *launch_size(dev, total), *args.values)

    def _stockham(self, dev, device, dt, plan: _Plan, src, dst, rows: int, sgn: float, scale: float) -> None:
        """The passes of ``plan`` from ``src`` to ``dst`` ((storage, offset) pairs), ping-ponging with one temporary
        so that the last pass writes ``dst``."""
        n, radices = plan.n, plan.radices
        size = rows * n * 2
        budget = dev.props.local_memory // 2 if LOCAL_BYTES is None else LOCAL_BYTES
        if 4 * n * dt.itemsize <= budget:
            return self._local(dev, dt, plan, src, dst, rows, sgn, scale)
        tmp = (self.be.empty(device, dt, size), 0) if len(radices) > 1 else None
        ns = 1
        for i, r in enumerate(radices):
            target = dst if (len(radices) - 1 - i) % 2 == 0 else tmp
            last = i == len(radices) - 1
            self._launch(dev, dt, "pass", rows * n // r, [src, target, (plan.tw, None)],
                         [n, ns, n // (ns * r)], [sgn, scale if last else 1.0], radix=r, size=size)
            src, ns = target, ns * r

    def _local(self, dev, dt, plan: _Plan, src, dst, rows: int, sgn: float, scale: float) -> None:
        """Every pass of a row in one launch, in local memory (one work-group of LOCAL work-items per row)."""
        n = plan.n
        radices = [r for r in plan.radices if r > 1]
        idx_np, idx_t = index_type(rows * n * 2 > INT32_MAX)
        # Oclgrind 21.10 gives zeros from the generic kernel's multi-pass loop (radices decoded at run time), which
        # PoCL and Rusticl compute correctly (tests/ops/test_fft.py); there it gets the rendered one, which it runs right
        special = n >= SPECIALIZE or dev.props.platform.startswith("Oclgrind")
        params = dict(kind="local", radix=0, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64,
                      passes=tuple(radices) if special else (), length=n if special else 0)
        args = Args(idx_np)
        for buf, off in (src, dst):
            args.buf(buf.data)
            args.idx(off)
        args.buf(plan.tw.data)
        args.idx(n)
        args.scalar(np.uint32, sum(r << (3 * i) for i, r in enumerate(radices)))  # <= 10 passes in local memory
        args.scalar(np.int32, len(radices))
        args.scalar(dt.np, sgn, scale)
        args.buf(cl.LocalMemory(2 * n * 2 * dt.itemsize))
        name = f"fft_local{n if special else ''}_{dt.ctype}"
        kernel = programs.get_kernel(dev, "fft", name, tuple(args.types), params)
        local = min(LOCAL, dev.props.max_work_group_size)
        kernel(dev.queue, (rows * local,), (local,), *args.values)

    def _bluestein(self, dev, device, dt, plan: _Plan, src, dst, rows: int, sgn: float, scale: float) -> None:
        n, M, sub = plan.n, plan.M, plan.sub
        a = self.be.empty(device, dt, rows * M * 2)
        b = self.be.empty(device, dt, rows * M * 2)
        self._launch(dev, dt, "chirp", rows * M, [src, (a, None), (plan.chirp, None)], [n, M])
        self._stockham(dev, device, dt, sub, (a, 0), (b, 0), rows, 1.0, 1.0)
        self._launch(dev, dt, "mul", rows * M, [(b, None), (plan.filt, None)], [M])
        self._stockham(dev, device, dt, sub, (b, 0), (a, 0), rows, -1.0, 1.0)
        self._launch(dev, dt, "post", rows * n, [(a, None), dst, (plan.chirp, None)], [n, M], [scale])
