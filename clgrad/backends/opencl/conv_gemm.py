"""Implicit-GEMM convolutions (``kernels/conv_gemm.cl.mako``): the fused-conv capability of OpenCLBackend.

The product tiles of matmul.cl.mako with the B tile read from x through the im2col index map, so neither the column
matrix nor the im2col launch exists; the forward adds the bias (and applies ReLU) in the store. One kernel per
tiling serves the forward and the batch-summed weight gradient (a run-time mode): on PoCL each kernel costs 1-3 s of
code generation in a cold start. Launchers are cached on shapes, strides and dtypes, as matmul's are.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ..common import INT32_MAX
from . import looplimit, programs
from .launch import Launcher
from .matmul import SHORT_M, tiling

_ACC = {"half": "float", "float": "float", "double": "double"}
# Weight-gradient work-groups to aim for per launch: enough for every core, few partial sums to add up after.
WEIGHT_CHUNK_GROUPS = 16


# CPU devices: the smallest product rows (output channels per group) and taps (C/groups*kh*kw) that take the
# implicit GEMM. Measured on PoCL (2 cores, busy host, ms, implicit / im2col+matmul): ResNet 64->64 3x3 at 16x16,
# batch 32: forward 12.5-16 / 15-20, input gradient 9-19 / 16-31, weight gradient 13-20 / 9-44; 32->64 3x3 at 26x26,
# batch 64: 22-31 / 34-39, 51-108 / 35-88, 32-43 / 40-62. The MNIST convs (1->10, 10->20 5x5; 1->32 3x3) were
# slower implicit (fwd 1.5-2.1 / 1.0-2.2, weight gradient 1.7-3.5 / 1.0-2.3; the input gradient of a 1-channel
# conv 15-27 / 1.4-1.8): a 16-row tile is mostly padding for their few channels, and short rows make short runs.
CPU_MIN_ROWS = 32
CPU_MIN_TAPS = 64


def usable(x, rows: int, taps: int, depth: int) -> bool:
    """Whether the implicit-GEMM kernels serve x's device and dtype (float types) for a product of ``rows`` output
    channels per group over ``taps`` window taps, ``depth`` terms deep per output (on a device with a loop limit,
    looplimit.py, only where one work-item's loops stay within its budget)."""
    if x.dtype.ctype not in _ACC:  # integers, bfloat16: im2col + matmul
        return False
    dev = Launcher.dev(x)
    budget = looplimit.budget(dev)
    if budget is not None and _loops(tiling(dev, _ACC[x.dtype.ctype], short=rows <= SHORT_M), depth) > budget:
        return False
    return dev.rank < 2 or (rows >= CPU_MIN_ROWS and taps >= CPU_MIN_TAPS)


def _loops(t, depth: int) -> int:
    """An upper bound on one work-item's loop iterations: per tk-deep slab its A rows, its B lines (each at most
    three loops over its length, plus one per run) and the slab's tk steps; then the stores."""
    lx, ly, _ = t.local_size
    nt, line = lx * ly, max(t.tk, t.tn)
    slab = -(-t.tm // nt) * (t.tk + 2) + -(-line // nt) * (4 * line + 4) + t.tk
    return -(-depth // t.tk) * slab + t.wm * t.wn * t.vw + 8


class CLConvGemm:
    """``conv(out, x, w, bias, win, groups, relu)`` and ``conv_weight(out, x, gy, win)``: see the template."""

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._launchers = launcher.cache()

    def usable(self, x, rows: int, taps: int, depth: int) -> bool:
        return usable(x, rows, taps, depth)

    def conv(self, out, x, w, bias, win, groups: int, relu: bool = False) -> None:
        """out [N, Co, oh, ow] (contiguous) = conv(x [N, C, H, W], w [groups, Co/groups, C/groups*kh*kw] with unit
        stride along its last dim) (+ bias [Co], contiguous) (then ReLU when ``relu``)."""
        n, co = out.shape[:2]
        m, k, length = co // groups, w.shape[2], win.oh * win.ow
        self._launch(out, w, x, bias, win, dict(M=m, N=length, K=k, NB=n, G=groups, per=1, mode=0, relu=relu,
                                               C=x.shape[1] // groups, z=n * groups, a_sz=w._strides[0],
                                               a_sm=w._strides[1]))

    def conv_weight(self, out, x, gy, win) -> None:
        """out [Z, Co, C*kh*kw] (contiguous) = the weight gradient of a groups=1 convolution, summed over chunks of
        ceil(N / Z) images each; ``gy`` [N, Co, oh*ow] with unit stride along its last dim."""
        nb, co, length = gy.shape
        z = out.shape[0]
        self._launch(out, gy, x, None, win, dict(M=co, N=out.shape[2], K=length, NB=nb, G=1, per=-(-nb // z),
                                                 mode=1, relu=False, C=x.shape[1], z=z, a_sz=gy._strides[0],
                                                 a_sm=gy._strides[1]))

    def weight_chunks(self, n: int, co: int, taps: int) -> int:
        """How many partial sums conv_weight should write for n images (the caller adds them up)."""
        tiles = -(-co // 16) * -(-taps // 64)
        chunks = max(1, min(n, -(-WEIGHT_CHUNK_GROUPS // tiles)))
        return -(-n // -(-n // chunks))  # no empty chunks

    def _launch(self, out, a, x, bias, win, g: dict) -> None:
        if out.numel() == 0:
            return
        key = (out.device.index, out.dtype, out._shape, a._shape, a._strides, x._shape, x._strides, tuple(win),
               bias is None, tuple(sorted(g.items())))
        launch = self._launchers.get(key)
        if launch is None:
            launch = self._launchers[key] = self._launcher(out, a, x, win, g)
        launch(out, a, x, bias)

    def _launcher(self, out, a, x, win, g: dict):
        dev = self.rt.dev(out)
        dt = out.dtype
        self.rt.check_dtype(dev, dt)
        acc = _ACC[dt.ctype]
        t = tiling(dev, acc, short=g["M"] <= SHORT_M)
        lx, ly, _ = t.local_size
        grid = (-(-g["N"] // t.tn) * lx, -(-g["M"] // t.tm) * ly, g["z"])
        reach = max(out.numel(), a._storage.size, x._storage.size, out.shape[1] * 2)
        big = reach + max(t.tm, t.tn, t.tk) * (abs(a._strides[1]) + 1) > INT32_MAX
        idx_np = np.int64 if big else np.int32
        params = dict(ctype=dt.ctype, acc=acc, fp64=dt is D.float64, idx_t="long" if big else "int", **t._asdict())
        arg_dtypes = (None, idx_np, None, idx_np, idx_np, idx_np, None) + (idx_np,) * 5 + (idx_np,) * 12
        arg_dtypes += (idx_np,) * 6 + (np.int32, np.int32, None, idx_np)
        kernel = programs.get_kernel(dev, "conv_gemm", f"conv_gemm_{dt.ctype}", arg_dtypes, params)
        geometry = (g["C"], x.shape[2], x.shape[3], win.ow, *win[:8])
        sizes = (g["M"], g["N"], g["K"], g["NB"], g["G"], g["per"], np.int32(g["mode"]), np.int32(g["relu"]))
        a_sz, a_sm = g["a_sz"], g["a_sm"]
        local = (lx, ly, 1)

        def launch(out, a, x, bias):
            b = (None, 0) if bias is None else (bias._storage.data, bias._offset)
            kernel(dev.queue, grid, local, out._storage.data, out._offset, a._storage.data, a._offset, a_sz, a_sm,
                   x._storage.data, x._offset, *x._strides, *geometry, *sizes, *b)

        return launch
