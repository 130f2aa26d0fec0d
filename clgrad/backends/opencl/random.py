"""OpenCL implementation of the ``random`` primitive (an op family of OpenCLBackend)."""
from __future__ import annotations

import numpy as np

from .. import philox
from ..common import is_contiguous
from . import programs
from .launch import Launcher, launch_size

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def philox_args(seed: int, offset: int) -> dict:
    """The random kernels' (key, counter base) arguments by position, for a graph replay (capture.py)."""
    seed &= _MASK64
    return {3: np.uint32(seed & _MASK32), 4: np.uint32(seed >> 32), 5: np.uint64(offset & _MASK64)}


class CLRandom:
    PRIMITIVES = ("random", "random_gamma")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def random(self, dist: str, out, seed: int, offset: int, p0, p1) -> None:
        """Fill ``out`` (any layout) with ``dist``: element i (row-major) uses Philox counter ``offset + i``.

        One work-item per element of a contiguous buffer; a strided ``out`` is filled through a contiguous
        temporary so that the stream order is the logical (row-major) order on every device.
        """
        n = out.numel()
        if n == 0:
            return
        if not is_contiguous(out):
            tmp = self.be.scratch(out.device, out.dtype, out.shape)
            self.random(dist, tmp, seed, offset, p0, p1)
            self.be.elementwise("identity", out, [tmp], out.dtype)
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, out.dtype)
        name = out.dtype.name
        ctype = "bool" if name == "bool" else philox.STORAGE_CTYPE[name]  # bool and uint8 are both uchar
        kernel = programs.get_kernel(
            dev, "random", f"{dist}_{ctype}", tuple(philox.scalar_arg_dtypes(dist, name)),
            philox.kernel_params(dist, name),
        )
        if dist == "randint":
            p0, p1 = philox.kernel_int_param(p0), philox.kernel_int_param(p1)
        gsize, lsize = launch_size(dev, n)
        seed &= _MASK64
        kernel(dev.queue, gsize, lsize, out._storage.data, out._offset, n, seed & _MASK32, seed >> 32,
               offset & _MASK64, p0, p1)

    def random_gamma(self, out, alpha, seed: int, offset: int) -> None:
        """Fill ``out`` (contiguous float32/float64) with Gamma(alpha, 1) samples, ``alpha`` contiguous of out's shape
        and dtype: one work-item per element, looping over its rejection rounds until accepted
        (``cpu_random.gamma`` is the reference)."""
        n = out.numel()
        if n == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, out.dtype)
        name = out.dtype.name
        params = {"dist": "gamma", "out_ctype": philox.STORAGE_CTYPE[name], "out_dtype": name,
                  "param_ctype": "float", "fp64": name == "float64"}
        kernel = programs.get_kernel(dev, "random", f"gamma_{params['out_ctype']}",
                                     (None, np.int64, None, np.int64, np.int64, np.uint32, np.uint32, np.uint64),
                                     params)
        gsize, lsize = launch_size(dev, n)
        seed &= _MASK64
        kernel(dev.queue, gsize, lsize, out._storage.data, out._offset, alpha._storage.data, alpha._offset, n,
               seed & _MASK32, seed >> 32, offset & _MASK64)
