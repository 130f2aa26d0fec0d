"""OpenCL implementation of the ``conv`` primitives (an op family of OpenCLBackend): im2col/col2im from
``kernels/conv.cl.mako``, pooling and interpolation from ``kernels/pool.cl.mako``.

Same contract as ``cpu_conv.CPUConv``: 4-D [N, C, H, W] operands, inputs of any strides, outputs fresh and
contiguous. Kernels take the geometry as run-time scalars, so one build per (kind, dtype) serves every shape.
Backward kernels accumulate in float (double for float64); a float16 gradient goes through a float32 temporary.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ..common import INT32_MAX, copy_compute, view
from . import looplimit, programs
from .launch import Launcher, launch_size

_BITS = {2: "ushort", 4: "uint", 8: "ulong"}  # im2col moves bits: no conversion, no fp64 needed
_MAX_TABLES = 64
# im2col work-items to aim for on a CPU device: enough for every core, few enough that each does real work
CPU_ITEMS = 4096
GRID_TAPS = 64  # the grid kernels unroll windows of at most this many taps (a 7x7 stem has 49)
# ... and im2col's with padding (masked loads) at most this many: on PoCL (AMD EPYC, batch 32) padded 3x3 windows ran
# 1.8-4.4x faster on the grid, but 5x5 on 32x32 1.8-1.9x and 7x7 3.5x slower (5x5 on 12x12 1.5x faster)
GRID_PADDED_TAPS = 9
GRID_LOCAL = 1024  # ... in work-groups of at most this many items
# ... over rows of at least this many positions: ResNet-18's deepest layers (rows of 1 and 2 positions, thousands of
# work-groups of 1-4 items) ran their steps 4-5% slower on the grid in one session's runs (96.8 against 92.6 ms with
# the row kernels; rows of >= 4 on the grid: 91.8), though each launch alone was faster on it
GRID_MIN_WIDTH = 4


def _grid_local(dev, width: int, height: int, taps: int) -> tuple | None:
    """The work-group (width, d, 1) of an im2col/col2im grid kernel over positions (width, height, planes), d the
    largest divisor of ``height`` within GRID_LOCAL items (a fixed size: PoCL compiles again for each new local
    size, and left to pick one it would for each batch size); None where the grid kernels do not apply (GPUs, big
    windows, rows narrower than GRID_MIN_WIDTH or wider than a work-group)."""
    if dev.rank < 2 or not 0 < taps <= GRID_TAPS or width < GRID_MIN_WIDTH or height == 0:
        return None
    limit = min(GRID_LOCAL, dev.props.max_work_group_size)
    if width > limit:
        return None
    return width, max(d for d in range(1, min(height, limit // width) + 1) if height % d == 0), 1


def _acc(dt: D.dtype) -> D.dtype:
    return D.float64 if dt is D.float64 else D.float32


def _strided(t) -> list:
    return [t._offset, *t._strides]


def _data(t):
    return t._storage.data


class CLConv:
    PRIMITIVES = ("im2col", "conv_bias", "col2im", "max_pool2d", "max_pool2d_backward", "pool_gather", "avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", "upsample2d", "upsample2d_backward")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._tables = launcher.cache()  # (device, row table key, column table key, acc) -> (int table, weights)

    def _conv_launch(self, dev, template: str, kind: str, dt: D.dtype, rows: int, args: list, reach: int,
                     loops: int = 0, grid: tuple | None = None, local: tuple | None = None, **params) -> None:
        """Run kernel ``kind`` of ``template`` with one work-item per row (or, with ``grid``, on that n-D range in
        work-groups of ``local``, None letting the device pick; ``rows`` is then its size). ``args`` holds buffers,
        ints of the index type, and np.int32 flags; ``reach`` bounds every element index the kernel forms; ``loops``
        bounds the loop iterations of one work-item (a device with a loop limit refuses more: looplimit.py)."""
        if rows == 0:
            return
        self.rt.check_dtype(dev, dt)
        looplimit.check(dev, loops, f"{template} kernel {kind} (one work-item per row)")
        big = max(reach, rows) > INT32_MAX
        idx_np = np.int64 if big else np.int32
        arg_dtypes, values = [], []
        for a in args:
            if isinstance(a, np.int32):
                arg_dtypes.append(np.int32)
            elif isinstance(a, (int, np.integer)):
                arg_dtypes.append(idx_np)
            else:
                arg_dtypes.append(None)
            values.append(a)
        ctype = params.pop("ctype", dt.ctype)
        acc = _acc(dt)
        window = params.get("window")
        params = dict(kind=kind, ctype=ctype, acc=acc.ctype, fp64=acc is D.float64, idx_t="long" if big else "int",
                      linear=params.get("linear", False))
        if window:  # only then a key item: the recorded program groups (group_table.py) keep their keys
            params["window"] = window
        suffix = "_bilinear" if params["linear"] else ""
        kernel = programs.get_kernel(dev, template, f"{kind}{suffix}_{ctype}", tuple(arg_dtypes), params)
        gsize, lsize = (grid, local) if grid else launch_size(dev, rows)
        kernel(dev.queue, gsize, lsize, *values)

    def _conv_acc(self, out):
        """Where a backward kernel writes: ``out`` itself, or a float32 temporary for a float16 ``out``."""
        if out.dtype in D.HALF_FLOATS:
            return self.be.scratch(out.device, D.float32, out.shape)
        return out

    def _conv_finish(self, out, acc) -> None:
        if acc is not out:
            self.be.elementwise("identity", out, [acc], copy_compute(acc.dtype, out.dtype))

    def im2col(self, cols, x, win) -> None:
        n, c, h, w = x.shape
        dev = self.rt.dev(cols)
        local = _grid_local(dev, win.ow, win.oh, win.kh * win.kw)
        inside = (win.ph, win.pw) == (0, 0) and (win.oh - 1) * win.sh + (win.kh - 1) * win.dh < h and \
            (win.ow - 1) * win.sw + (win.kw - 1) * win.dw < w
        if local and (inside or win.kh * win.kw <= GRID_PADDED_TAPS) and (x._strides[3] == 1 or w == 1):
            # positions with a unit stride store vectors; the folded products' [N, L, taps] rows scatter them
            unit = cols._strides[2] == 1
            args = [_data(cols), *_strided(cols), _data(x), *_strided(x)[:4], c, h, w, win.ow, win.sh, win.ph,
                    win.pw, win.dh, win.dw]
            self._conv_launch(dev, "conv", "im2col_grid", x.dtype, cols.numel(), args,
                              max(cols._storage.size, x._storage.size), grid=(win.ow, win.oh, n * c), local=local,
                              ctype=_BITS[x.dtype.itemsize], window=(win.kh, win.kw, win.sw, not inside, unit))
            return
        taps = n * c * win.kh * win.kw
        # CPUs: blocks of rows, so that about CPU_ITEMS work-items share the work; GPUs: one row each
        block = 1 if dev.rank < 2 else max(1, min(win.oh, -(-taps * win.oh // CPU_ITEMS)))
        # ... and, where rows are few (deep layers), blocks of images
        images = 1 if dev.rank < 2 else max(1, min(n, -(-taps * -(-win.oh // block) // CPU_ITEMS)))
        budget = looplimit.budget(dev)
        if budget is not None:  # each row of a block is a loop of ow steps
            block = max(1, min(block, budget // (win.ow + 3)))
            images = max(1, min(images, budget // (block * (win.ow + 3))))
        items = -(-n // images) * (taps // max(n, 1)) * -(-win.oh // block)
        args = [_data(cols), *_strided(cols), _data(x), *_strided(x), c, h, w, win.oh, win.ow, *win[:8], block, n,
                images, items]
        self._conv_launch(dev, "conv", "im2col", x.dtype, items, args, max(cols._storage.size, x._storage.size),
                          loops=images * block * (win.ow + 3), ctype=_BITS[x.dtype.itemsize])

    def conv_bias(self, out, bias) -> None:
        """out [N, C, ...] (contiguous) += bias [C] per channel."""
        n, c = out.shape[:2]
        rows, length = n * c, out.numel() // max(n * c, 1)
        budget = looplimit.budget(self.rt.dev(out))
        if budget is not None and length > budget:  # planes too big to loop over (looplimit.py): a broadcast add
            planes = view(out, (n, c, length), (c * length, length, 1))
            self.be.elementwise("add", planes, [planes, view(bias, (n, c, length), (0, bias._strides[0], 0))], out.dtype)
            return
        args = [_data(out), _data(bias), bias._offset, bias._strides[0], c, length, rows]
        self._conv_launch(self.rt.dev(out), "conv", "bias", out.dtype, rows, args, max(out.numel(), bias._storage.size),
                          loops=length)

    def col2im(self, out, cols, win) -> None:
        n, c, h, w = out.shape
        acc = self._conv_acc(out)
        dev = self.rt.dev(out)
        local = _grid_local(dev, w, h, win.kh * win.kw) if win.sh == win.sw == 1 else None
        if local and (cols._strides[2] == 1 or win.oh * win.ow == 1):
            args = [_data(acc), _data(cols), *_strided(cols)[:3], c, h, w, win.oh, win.ow, win.ph, win.pw, win.dh,
                    win.dw]
            self._conv_launch(dev, "conv", "col2im_grid", cols.dtype, out.numel(), args,
                              max(out.numel(), cols._storage.size), grid=(w, h, n * c), local=local,
                              window=(win.kh, win.kw))
            self._conv_finish(out, acc)
            return
        rows = n * c * h
        args = [_data(acc), _data(cols), *_strided(cols), c, h, w, win.oh, win.ow, *win[:8], rows]
        self._conv_launch(self.rt.dev(out), "conv", "col2im", cols.dtype, rows, args, max(out.numel(), cols._storage.size),
                          loops=w + win.kh * (1 + win.kw * (win.ow + 1)))
        self._conv_finish(out, acc)

    def max_pool2d(self, out, indices, x, win) -> None:
        n, c, h, w = x.shape
        rows = n * c * win.oh
        args = [_data(out), _data(indices), _data(x), *_strided(x), c, h, w, win.oh, win.ow, *win[:8], rows]
        # windows of a fixed size, all inside the input (no padding, no dilation, no ceil_mode overhang): unrolled
        # at compile time, so the compiler vectorizes the row loop (MNIST's 2x2 pools: 324 -> 134 us on PoCL)
        inside = (win.oh - 1) * win.sh + win.kh <= h and (win.ow - 1) * win.sw + win.kw <= w
        fixed = (win.ph, win.pw, win.dh, win.dw) == (0, 0, 1, 1) and inside and win.kh * win.kw <= 16
        dev = self.rt.dev(out)
        reach = max(out.numel(), x._storage.size)
        if fixed and dev.rank >= 2 and n * c <= INT32_MAX:
            # CPU devices: a work-item per output of a 3-D range, vectorized across ow (MNIST's first pool 367 ->
            # 185 us of device time on PoCL, AMD EPYC)
            self._conv_launch(dev, "pool", "max_pool_grid", x.dtype, out.numel(),
                              [_data(out), _data(indices), _data(x), *_strided(x), c, w, win.oh, win.ow, win.sh, win.sw],
                              reach, grid=(win.ow, win.oh, n * c), window=(win.kh, win.kw))
            return
        self._conv_launch(dev, "pool", "max_pool", x.dtype, rows, args, reach,
                          loops=win.ow * (1 + win.kh * (1 + win.kw)) + win.ph + win.pw + 8,
                          window=(win.kh, win.kw) if fixed else None)

    def max_pool2d_backward(self, grad_in, grad_out, indices, win) -> None:
        n, c, h, w = grad_in.shape
        acc = self._conv_acc(grad_in)
        disjoint = (win.kh - 1) * win.dh < win.sh and (win.kw - 1) * win.dw < win.sw
        if disjoint and self.rt.dev(grad_in).rank >= 2 and n * c <= INT32_MAX:
            self._max_pool_scatter(acc, grad_out, indices, win)
            self._conv_finish(grad_in, acc)
            return
        rows = n * c * h
        args = [_data(acc), _data(grad_out), *_strided(grad_out), _data(indices), indices._offset,
                c, h, w, win.oh, win.ow, win.kh, win.sh, win.ph, win.dh, rows]
        self._conv_launch(self.rt.dev(grad_in), "pool", "max_pool_bwd", grad_out.dtype, rows, args,
                          max(grad_in.numel(), grad_out._storage.size, indices._storage.size),
                          loops=w + ((win.kh - 1) * win.dh // win.sh + 2) * (win.ow + 1))
        self._conv_finish(grad_in, acc)

    def _max_pool_scatter(self, acc, grad_out, indices, win) -> None:
        """max-pool's backward for disjoint windows on CPU devices: zero, then one work-item per output."""
        n, c, h, w = acc.shape
        self.be.elementwise("identity", acc, [0], acc.dtype)
        self._conv_launch(self.rt.dev(acc), "pool", "max_pool_bwd_scatter", grad_out.dtype, grad_out.numel(),
                          [_data(acc), _data(grad_out), *_strided(grad_out), _data(indices), indices._offset, c, h * w,
                           win.oh, win.ow], max(acc.numel(), grad_out._storage.size, indices._storage.size),
                          grid=(win.ow, win.oh, n * c))
        acc._storage.version += 1

    def pool_gather(self, out, src, indices) -> None:
        """``src`` must be contiguous (this only serves max-pool's double backward)."""
        n, c, oh, ow = out.shape
        rows = n * c * oh
        args = [_data(out), _data(src), src._offset, _data(indices), indices._offset,
                src.shape[2] * src.shape[3], oh, ow, rows]
        self._conv_launch(self.rt.dev(out), "pool", "gather", src.dtype, rows, args,
                          max(out.numel(), src._storage.size, indices._storage.size), loops=ow)

    def avg_pool2d(self, out, x, win, include_pad: bool, divisor: int | None) -> None:
        n, c, h, w = x.shape
        rows = n * c * win.oh
        args = [_data(out), _data(x), *_strided(x), c, h, w, win.oh, win.ow, *win[:6],
                np.int32(include_pad), np.int32(divisor or 0), rows]
        self._conv_launch(self.rt.dev(out), "pool", "avg_pool", x.dtype, rows, args, max(out.numel(), x._storage.size),
                          loops=win.ow * (1 + win.kh * (1 + win.kw)))

    def avg_pool2d_backward(self, grad_in, grad_out, win, include_pad: bool, divisor: int | None) -> None:
        n, c, h, w = grad_in.shape
        acc = self._conv_acc(grad_in)
        rows = n * c * h
        args = [_data(acc), _data(grad_out), *_strided(grad_out), c, h, w, win.oh, win.ow, *win[:6],
                np.int32(include_pad), np.int32(divisor or 0), rows]
        self._conv_launch(self.rt.dev(grad_in), "pool", "avg_pool_bwd", grad_out.dtype, rows, args,
                          max(grad_in.numel(), grad_out._storage.size),
                          loops=w + (win.kh // win.sh + 2) * win.ow * (1 + win.kw))
        self._conv_finish(grad_in, acc)

    def adaptive_avg_pool2d(self, out, x) -> None:
        n, c, h, w = x.shape
        oh, ow = out.shape[2:]
        rows = n * c * oh
        loops = ow * (1 + (-(-h // oh) + 1) * (1 + -(-w // ow) + 1))
        budget = looplimit.budget(self.rt.dev(out))
        if budget is not None and loops > budget and oh == ow == 1 and n * c:
            # a global average too big for one work-item's loop (looplimit.py): a sum, then the kernel's divisions
            acc = _acc(x.dtype)
            total = self.be.scratch(out.device, acc, (n, c, 1, 1))
            self.be.reduce("sum", x, (2, 3), total)
            self.be.elementwise("div", total, [total, h], acc)
            self.be.elementwise("div", out, [total, w], acc)
            return
        args = [_data(out), _data(x), *_strided(x), c, h, w, oh, ow, rows]
        # window bounds multiply an output index by an input size
        reach = max(out.numel(), x._storage.size, (oh + 1) * h, (ow + 1) * w)
        self._conv_launch(self.rt.dev(out), "pool", "adaptive", x.dtype, rows, args, reach, loops=loops)

    def adaptive_avg_pool2d_backward(self, grad_in, grad_out) -> None:
        n, c, h, w = grad_in.shape
        oh, ow = grad_out.shape[2:]
        acc = self._conv_acc(grad_in)
        rows = n * c * h
        args = [_data(acc), _data(grad_out), *_strided(grad_out), c, h, w, oh, ow, rows]
        reach = max(grad_in.numel(), grad_out._storage.size, (oh + 1) * h, (ow + 1) * w, (h + 1) * oh)
        self._conv_launch(self.rt.dev(grad_in), "pool", "adaptive_bwd", grad_out.dtype, rows, args, reach,
                          loops=w + (-(-oh // h) + 2) * (1 + ow * (2 + -(-w // ow))))
        self._conv_finish(grad_in, acc)

    def _conv_tables(self, device, th, tw, dt: D.dtype):
        """The device copies of two axes' interpolation tables, built once per device and geometry."""
        acc = _acc(dt)
        key = (str(device), th.key, tw.key, acc.name)
        found = self._tables.get(key)
        if found is None:
            if len(self._tables) >= _MAX_TABLES:
                self._tables.clear()
            ints = np.concatenate([th.i0, th.i1, tw.i0, tw.i1, th.r0, th.r1]).astype(np.int32)
            weights = np.concatenate([th.l0, th.l1, tw.l0, tw.l1]).astype(acc.np)
            found = []
            for host, d in ((ints, D.int32), (weights, acc)):
                t = self.be.scratch(device, d, host.shape)
                self.be.write(t._storage, host)
                found.append(t)
            self._tables[key] = found = tuple(found)
        return found

    def upsample2d(self, out, x, th, tw) -> None:
        n, c, h, w = x.shape
        oh, ow = out.shape[2:]
        ti, tl = self._conv_tables(out.device, th, tw, x.dtype)
        rows = n * c * oh
        args = [_data(out), _data(x), *_strided(x), _data(ti), _data(tl), c, h, w, oh, ow, rows]
        self._conv_launch(self.rt.dev(out), "pool", "upsample", x.dtype, rows, args, max(out.numel(), x._storage.size),
                          loops=ow, linear=th.linear)

    def upsample2d_backward(self, grad_in, grad_out, th, tw) -> None:
        n, c, h, w = grad_in.shape
        oh, ow = grad_out.shape[2:]
        acc = self._conv_acc(grad_in)
        ti, tl = self._conv_tables(grad_in.device, th, tw, grad_out.dtype)
        rows = n * c * h
        args = [_data(acc), _data(grad_out), *_strided(grad_out), _data(ti), _data(tl), c, h, w, oh, ow, rows]
        self._conv_launch(self.rt.dev(grad_in), "pool", "upsample_bwd", grad_out.dtype, rows, args,
                          max(grad_in.numel(), grad_out._storage.size), loops=w + 2 * (-(-oh // h) + 2) * (ow + 1),
                          linear=th.linear)
        self._conv_finish(grad_in, acc)
