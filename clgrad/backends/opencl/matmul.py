"""OpenCL implementation of the ``matmul`` primitive (an op family of OpenCLBackend)."""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ..common import INT32_MAX, expand, is_contiguous, view
from . import autotune, looplimit, programs
from .launch import Launcher
from .tilings import FEW_TILES, SHORT_M, SKINNY_M, TILINGS, Tiling  # noqa: F401 (TILINGS: tests read it here)

# Most OpenCL runtimes cap the 3rd global dimension well below 2**32 (CUDA grids at 65535), so longer
# batches go in several launches.
MAX_BATCH = 65535

# Accumulator per storage type: half sums in float; integers sum in the unsigned type of at least their
# width, whose wrap-around is defined in C (signed overflow is not) and equals the stored result mod 2**bits.
_ACC = {"half": "float", "bfloat16": "float", "float": "float", "double": "double", "long": "ulong"}


# CPU devices: products of at least this many multiply-adds whose b is read along k (x @ W.T) take the nt_blocks
# kernel. On PoCL (AMD EPYC) NT products ran 19-26% faster with it (64x9216x128 2.14 -> 1.73 ms, 512^3 2.65 -> 1.96);
# below this the MNIST and RNN steps' products stay on the shared kernel (0.18 s less of cold-start code generation)
NT_BLOCKS_WORK = 1 << 24


def tiling(dev, acc: str, skinny: bool = False, kind: str | None = None, short: bool = False) -> Tiling:
    """The tiling used on ``dev`` from the ``kind`` tables ('gpu' or 'cpu'; by default GPUs and
    accelerators get 'gpu', CPUs and simulators 'cpu'); ``short`` picks CPUs' few-row tilings."""
    kind = kind or ("gpu" if dev.rank < 2 else "cpu")
    suffix = "_skinny" if skinny else ""
    if short and not skinny and kind == "cpu":
        suffix = "_short"
    table = TILINGS[kind + suffix]
    # on a device that stops a work-item's loops early (looplimit.py) one slab must fit its budget: longer products
    # are then split along K
    budget = looplimit.budget(dev)
    t = autotune.tuned(dev, kind + suffix, acc)
    if t is not None and (budget is None or _mm_loops(t, t.tk, 1) <= budget):
        return t
    for t in table:
        lx, ly, _ = t.local_size
        if (lx * ly <= dev.props.max_work_group_size and t.local_bytes(acc) <= dev.props.local_memory
                and (budget is None or _mm_loops(t, t.tk, 1) <= budget)):
            return t
    return table[-1]


def _mm_loops(t: Tiling, k: int, step: int) -> int:
    """An upper bound on the loop iterations of one work-item of a product with tiling ``t``, ``k`` deep, summing
    ``step`` batches: per batch and tk-deep slab, its share of both tiles' copies (twice, for the element-by-element
    copies of edge tiles) and the slab's tk steps; then the stores' vector tails."""
    lx, ly, _ = t.local_size
    nt = lx * ly
    slab = 2 * (-(-t.tm * t.tk // nt) + -(-t.tk * t.tn // nt)) + t.tk
    return step * (-(-k // t.tk) * slab + 1) + t.wm * t.wn * t.vw + 8


def _reach(t, margins) -> int:
    """Largest element index the kernel computes for view ``t``, counting rows and columns up to a tile past
    the end (edge tiles form those indices before their bounds check)."""
    return t._offset + sum((n - 1 + extra) * abs(s) for n, s, extra in zip(t.shape, t._strides, margins))


def _strides(t) -> list:
    """The strides of a 3-D view with those of size-1 dims zeroed: they are never stepped along, and a
    stray 1 there would make the kernel copy tiles along a dim that has nothing to copy."""
    return [s if n > 1 else 0 for n, s in zip(t.shape, t._strides)]


def _transposed(out, a, b):
    """a [B, M, K] @ b [B, K, 1] as b^T [B, 1, K] @ a^T [B, K, M] into out^T [B, 1, M] (the same memory)."""
    (a_sb, a_sm, a_sk), (b_sb, b_sk, b_sn) = a._strides, b._strides
    nb, m, k = a.shape
    return (view(b, (nb, 1, k), (b_sb, b_sn, b_sk)), view(a, (nb, k, m), (a_sb, a_sk, a_sm)),
            view(out, (out.shape[0], 1, m), (m, m, 1)))


_MAX_LAUNCHERS = 4096


class CLMatmul:
    PRIMITIVES = ("matmul", "matmul_sum")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._launchers = launcher.cache()  # launch functions by shapes, strides and dtypes

    def matmul(self, out, a, b, bias=None) -> None:
        """out[i] = a[i] @ b[i] (+ bias) for a [B, M, K], b [B, K, N] of any strides, out contiguous [B, M, N]
        and an optional contiguous float32/64 ``bias`` [N] added in the kernel's store (linear's bias)."""
        self._matmul(out, a, b, 0, bias)

    def matmul_sum(self, out, a, b) -> None:
        """out[z] = the sum of a[i] @ b[i] over chunk z of the batch (chunks of ceil(B / Z) batches), for out
        contiguous [Z, M, N]: one kernel instead of B products and a reduction over them."""
        nb, z = a.shape[0], out.shape[0]
        self._matmul(out, a, b, -(-nb // z) if nb else 1)

    def _matmul(self, out, a, b, per: int, bias=None) -> None:
        """matmul (``per`` 0) or matmul_sum with ``per`` batches per chunk of out."""
        if out.numel() == 0:
            return
        # launchers are cached on everything but the offsets, so a repeated product (a recurrent layer's steps)
        # skips the tiling choice, the kernel lookup and the argument types: ~35 us of Python per product
        key = (out.device.index, out.dtype, a.dtype, out._shape, a._shape, a._strides, b._shape, b._strides, per,
               None if bias is None else (bias.dtype, bias._shape, bias._strides))
        launch = self._launchers.get(key)
        if launch is not None:
            launch(out, a, b, bias)
            return
        launch = self._mm_launcher(out, a, b, per, bias)
        launch(out, a, b, bias)  # builds the kernel: only a launcher that worked is kept
        if len(self._launchers) >= _MAX_LAUNCHERS:
            self._launchers.clear()
        self._launchers[key] = launch

    def _mm_launcher(self, out, a, b, per: int, bias, forced: Tiling | None = None):
        """A ``launch(out, a, b, bias)`` for operands of these shapes, strides and dtypes (any offsets); ``forced``
        fixes the tiling (the pieces of a split product)."""
        operands = (a, b, out)
        nb, m, k = a.shape
        n = b.shape[2]
        dev = self.rt.dev(out)
        dt = out.dtype
        self.rt.check_dtype(dev, dt)
        if dt is D.bool:
            raise NotImplementedError(f"'matmul' is not implemented for dtype bool on device {out.device}")
        nz = out.shape[0]
        if bias is not None and (dt not in (D.float32, D.float64) or bias.dtype is not dt or not is_contiguous(bias)):
            def unfused(out, a, b, bias):  # no fused form: the product, then the bias as an elementwise add
                self._matmul(out, a, b, per)
                self.be.elementwise("add", out, [out, expand(bias, out.shape)], dt)
            return unfused
        if k == 1 and not per and dt in (D.float32, D.float64):
            return self._outer
        transpose = n == 1 and m > 1 and bias is None
        if transpose:
            # matrix @ vector: compute out^T = b^T @ a^T (the same memory), so the long dim is the one
            # work-items run along. Not with a bias (a linear layer of one output): its store adds bias[n] along
            # the columns, and the untransposed product with the bias in its store (4.6 us on PoCL for 97 x 51 x 1)
            # costs less than the transposed one (1.4-3 us) and an add launch
            a, b, out = _transposed(out, a, b)
            m, n = 1, m
        acc = _ACC.get(dt.ctype, "uint")
        t = forced or tiling(dev, acc, skinny=m <= SKINNY_M, short=m <= SHORT_M)
        if forced is None and dev.rank >= 2 and m > SKINNY_M and nz * -(-m // t.tm) * -(-n // t.tn) <= FEW_TILES * dev.props.compute_units:
            # few tiles of the big tiling: the short one's smaller tiles keep every core busy. PoCL device times:
            # 64x320x50 35 -> 30 us, 64x50x10 8.4 -> 3.7 us, 384^3 825 -> 530 us, 512^3 1.60 -> 1.39 ms; from
            # 1024^3 (256 big tiles) the big tiling is faster (11.6 vs 13.8 ms, 2048^3 130 vs 227 ms)
            t = tiling(dev, acc, short=True)
        if forced is None and dev.rank >= 2 and m > SKINNY_M and k <= tiling(dev, acc, short=True).tk:
            # one slab deep (a conv's input gradient over few output channels): the short tiling. On PoCL (busy
            # host) MNIST conv2's [250, 20] @ [20, 64] x64 took 2.0-2.6 ms with it against 2.9-10 ms with 64x64
            # tiles, 1024x32x1024 1.1 ms against 1.6-2.4; and the MNIST step then needs one matmul kernel, not two
            # (a cold first step pays 1-3 s of PoCL code generation per matmul kernel)
            t = tiling(dev, acc, short=True)
        if forced is None and dev.rank >= 2 and k <= 32 < t.tk and t.vw > 1:
            # a short K (a conv's input gradient: K = output channels) would be padded to the whole slab:
            # on PoCL a 250x20x4096 product took 1.6 ms with tk 64 and 0.6 ms with tk 32. One bucket only, so
            # a product over a growing K (a recurrent layer's weight gradient over L*N rows) adds one kernel at most
            t = t._replace(tk=32)
        budget = looplimit.budget(dev)
        if forced is None and budget is not None and _mm_loops(t, k, per or 1) > budget:
            # a device that stops a work-item's loops early (looplimit.py): partial products over pieces of K
            # (and of the summed batches), then their sum
            return self._split_launcher(*operands, per, bias, t, budget)
        # the largest element index each operand's kernel arithmetic reaches, less the operand's offset
        reach = (_reach(a, (0, t.tm, t.tk)) - a._offset, _reach(b, (0, t.tk, t.tn)) - b._offset,
                 _reach(out, (0, t.tm, t.tn)) - out._offset, 0 if bias is None else n + t.tn)
        # one kernel form per tiling: the batch loop (a plain product steps one batch per output matrix) and, for
        # float and double, a bias pointer that is NULL when there is none (each form is a PoCL code generation)
        has_bias = dt in (D.float32, D.float64)
        params = dict(ctype=dt.ctype, acc=acc, fp64=dt is D.float64, bias=has_bias, **t._asdict())
        a_sb, a_sm, a_sk = _strides(a)
        b_sb, b_sk, b_sn = _strides(b)
        if (not transpose and dev.rank >= 2 and t.local_size[:2] == (1, 1) and acc == "float" and t.vw == 16
                and t.tn % 16 == 0 and t.tk % 16 == 0 and b_sk == 1 and b_sn != 1 and m * n * k >= NT_BLOCKS_WORK):
            # b read along k (x @ W.T): its tiles transposed in registers, in a kernel of their own (see the template)
            params["nt_blocks"] = True
        kernels = {}
        for big in (False, True):
            idx_np = np.int64 if big else np.int32
            arg_dtypes = (None, idx_np) + (None, idx_np, idx_np, idx_np, idx_np) * 2 + (idx_np,) * 5
            arg_dtypes += (None, idx_np) if has_bias else ()
            kernels[big] = (f"matmul_{dt.ctype}", arg_dtypes, dict(params, idx_t="long" if big else "int"))
        lx, ly, _ = t.local_size
        grid = (-(-n // t.tn) * lx, -(-m // t.tm) * ly)
        local = (lx, ly, 1)
        step = per or 1  # batches summed into each output matrix
        built = {}

        def launch(out, a, b, bias):
            if transpose:
                a, b, out = _transposed(out, a, b)
            offsets = (a._offset, b._offset, out._offset, 0 if bias is None else bias._offset)
            big = max(o + r for o, r in zip(offsets, reach)) > INT32_MAX
            kernel = built.get(big)
            if kernel is None:
                name, arg_dtypes, kparams = kernels[big]
                kernel = built[big] = programs.get_kernel(dev, "matmul", name, arg_dtypes, kparams)
            queue = dev.queue
            extra = () if not has_bias else (None, 0) if bias is None else (bias._storage.data, bias._offset)
            for start in range(0, nz, MAX_BATCH):  # the 3rd dimension counts output matrices
                count = min(MAX_BATCH, nz - start)
                kernel(queue, grid + (count,), local, out._storage.data, out._offset + start * m * n,
                       a._storage.data, a._offset + start * step * a_sb, a_sb, a_sm, a_sk,
                       b._storage.data, b._offset + start * step * b_sb, b_sb, b_sk, b_sn,
                       m, n, k, nb - start * step, step, *extra)

        return launch

    def _outer(self, out, a, b, bias) -> None:
        """A product over K = 1 (a cell's one-feature input times W^T): one multiply of broadcast views, rounded as
        the kernel rounds (the product, then the bias). On PoCL 2 us against 15-21 us for the tiled kernel, whose
        slabs are all padding."""
        nb, m, _ = a.shape
        shape = (nb, m, b.shape[2])
        self.be.elementwise("mul", out, [view(a, shape, (a._strides[0], a._strides[1], 0)),
                                         view(b, shape, (b._strides[0], 0, b._strides[2]))], out.dtype)
        if bias is not None:
            self.be.elementwise("add", out, [out, expand(bias, out.shape)], out.dtype)

    def _split_launcher(self, a, b, out, per: int, bias, t: Tiling, budget: int):
        """A ``launch(out, a, b, bias)`` that keeps each work-item within ``budget`` loop iterations: partial products
        over pieces of K (and of each output's ``per`` summed batches) into a scratch [pieces, Q, M, N] of out's dtype,
        reduced into ``out``. ``t`` is the tiling chosen for the whole product, kept for every piece."""
        nb, m, k = a.shape
        n, nz, dt = b.shape[2], out.shape[0], out.dtype
        step = per or 1
        ksteps = -(-k // t.tk)
        while ksteps > 1 and _mm_loops(t, ksteps * t.tk, 1) > budget:
            ksteps = -(-ksteps // 2)
        kc = min(k, ksteps * t.tk)
        looplimit.check(self.rt.dev(out), _mm_loops(t, kc, 1), f"a product with {m} x {n} tiles")
        # batches one partial sums: a divisor of step, so that partials never straddle two outputs
        pb = max(d for d in range(1, step + 1) if step % d == 0 and _mm_loops(t, kc, d) <= budget)
        pieces, q = -(-k // kc), nz * (step // pb)
        sub = {}  # K of a piece -> its launcher (all pieces but the last share one)

        def launch(out, a, b, bias):
            # the kernel stores its storage type: float16 partials are rounded once more than a whole product
            scratch = self.be.scratch(out.device, dt, (pieces, q, m, n))
            self.be.elementwise("identity", scratch, [0], dt)  # partials past the last batch stay 0
            a_sb, a_sm, a_sk = a._strides
            b_sb, b_sk, b_sn = b._strides
            for p in range(pieces):
                k0 = p * kc
                kk = min(kc, k - k0)
                pa = view(a, (nb, m, kk), a._strides, a._offset + k0 * a_sk)
                pb_ = view(b, (nb, kk, n), b._strides, b._offset + k0 * b_sk)
                po = view(scratch, (-(-nb // pb), m, n), (m * n, n, 1), p * q * m * n)
                if kk not in sub:
                    sub[kk] = self._mm_launcher(po, pa, pb_, pb if per else 0, None, forced=t)
                sub[kk](po, pa, pb_, None)
            # out[z] = the sum over pieces and over chunk z's partials
            total = view(out, (1, nz, 1, m, n), (nz * m * n, m * n, m * n, n, 1))
            self.be.reduce("sum", view(scratch, (pieces, nz, step // pb, m, n), (q * m * n, (step // pb) * m * n, m * n, n, 1)),
                        (0, 2), total)
            if bias is not None:
                self.be.elementwise("add", out, [out, expand(bias, out.shape)], dt)

        return launch
