"""OpenCL implementation of the ``reduce`` primitive (an op family of OpenCLBackend).

The launcher turns any reduction into M outputs by K reduced elements: kept dims and reduced dims
are each coalesced (so transposed, sliced, expanded and offset inputs are read in place through
strides) and ``kernels/reduce.cl.mako`` runs one (LX, LY) work-group layout chosen by ``plan``.
When few outputs each reduce many elements, the reduction is split into G chunks per output whose
partial results a second launch of the same template combines.

CPU devices take a different ``layout`` of the template ("loop"): PoCL runs a local-memory tree poorly (it splits
its work-item loops at every barrier) and does not vectorize across work-items around an inner loop, so there each
work-item loops over a chunk of one output's elements with explicit VEC-wide vector loads (``cpu_plan``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ...registry.reductions import REDUCTIONS
from ..common import INT32_MAX, acc_dtype, pow2
from . import programs
from .launch import WG, Launcher, coalesce  # WG: work-items per group; a power of two for the tree

PER_ITEM = 256  # most elements one work-item adds serially (float32 error grows with this count)
MIN_PER_ITEM = 16  # splitting finer than this costs more in partials than it gains
SERIAL_K = 32  # rows this short get one work-item each
VEC = 16  # lanes of the CPU kernel's vector loads (a 64-byte line of float32, AVX-512's width)
COL_UNROLL = 8  # vectors of neighbouring outputs one CPU work-item keeps in a column reduction (1 KiB per row)
COL_CHUNK = 128  # rows one CPU work-item adds per output in a column reduction (measured; at most PER_ITEM)


@dataclass
class Source:
    """What one launch reads: a buffer addressed as (outer coords, inner coords) through strides."""

    buf: object
    off: int
    ctype: str
    oshape: list
    ostr: list
    ishape: list
    istr: list
    idx: object = None  # buffer of int64 indices parallel to ``buf`` (partials of max/min)


@dataclass
class Dest:
    """Where one launch writes: ``M`` values per chunk along y (G chunks), and optionally indices."""

    buf: object
    off: int
    dtype: D.dtype
    idx: object = None
    idx_off: int = 0


@dataclass
class Job:
    """What stays fixed across the passes of one reduction."""

    dev: object  # runtime.CLDevice
    device: object  # clgrad.device, for allocating partials
    op: str
    acc: D.dtype
    big: bool  # 64-bit index math


def plan(dev, M: int, K: int, column: bool) -> tuple[int, int, int, int]:
    """(LX, LY, G, chunk): local size, number of chunks each output's K is split into, chunk length.

    Short rows get a work-item per output. Otherwise, when kept dims are the fast-moving ones (column
    sums) LX neighbours read neighbouring addresses, else a whole group shares a row.
    Rows are split until there are enough groups to fill the device and no work-item adds more than
    PER_ITEM elements serially.
    """
    wg = min(WG, 1 << (dev.props.max_work_group_size.bit_length() - 1))
    target = 4 * dev.props.compute_units
    if K <= SERIAL_K:
        return min(wg, pow2(M)), 1, 1, K
    lx = min(32, pow2(M)) if column else 1
    ly = min(wg // lx, pow2(K))
    fill = -(-target // -(-M // lx))
    g = max(-(-K // (ly * PER_ITEM)), min(fill, K // (ly * MIN_PER_ITEM)), 1)
    chunk = -(-K // g)
    return lx, ly, -(-K // chunk), chunk


def loops(dev) -> bool:
    """Whether ``dev`` gets the CPU kernel (tests monkeypatch this to run it on Oclgrind)."""
    return dev.rank == 2


def cpu_plan(dev, source: Source, M: int, K: int, with_idx: bool) -> tuple[str, int, int, int]:
    """(axis, vec, G, chunk) of the CPU kernel: "row" vectors along a contiguous reduced dim, "col" vectors
    across contiguous outputs (a column sum; vec is then the outputs per work-item), else "scalar". Each work-item adds at most PER_ITEM elements
    per accumulator lane (the float32 error bound), and rows are split further until every core has work."""
    target = 4 * dev.props.compute_units
    if not with_idx and len(source.ishape) == 1 and source.istr[0] == 1 and K >= VEC:
        axis, vec, most = "row", VEC, VEC * PER_ITEM
    elif not with_idx and M > 1 and source.ostr[-1] == 1 and source.oshape[-1] % 4 == 0:
        # the outputs of one work-item never cross a row of the kept dims
        width = math.gcd(VEC * COL_UNROLL, source.oshape[-1])
        return "col", width, -(-K // min(K, COL_CHUNK)), min(K, COL_CHUNK)
    else:
        axis, vec, most = "scalar", 1, PER_ITEM
    g = max(-(-K // most), min(-(-target // M), K // (vec * MIN_PER_ITEM)), 1)
    per = -(-K // g)
    chunk = -(-per // vec) * vec  # a multiple of vec, so that vectors never straddle two chunks
    return axis, vec, -(-K // chunk), chunk


@functools.lru_cache(maxsize=4096)
def _layout(shape: tuple, strides: tuple, dims: tuple, reorder: bool) -> tuple:
    """(outer shape, outer strides, inner shape, inner strides) of a reduction over ``dims``, each side
    coalesced; cached, as a training loop reduces the same layouts over and over."""
    outer = [d for d in range(len(shape)) if d not in dims]
    inner = list(dims)
    if reorder:
        # the order of a sum's terms is free: largest stride first lets e.g. a transposed input coalesce
        inner.sort(key=lambda d: -abs(strides[d]))
    oshape, (ostr,) = coalesce([shape[d] for d in outer], [[strides[d] for d in outer]])
    ishape, (istr,) = coalesce([shape[d] for d in inner], [[strides[d] for d in inner]])
    return tuple(oshape), tuple(ostr), tuple(ishape), tuple(istr)


class CLReduce:
    PRIMITIVES = ("reduce",)

    def __init__(self, backend, launcher: Launcher):
        # kernels and local-memory arguments by launch signature: a repeated reduction skips rendering the key
        self.be, self.rt = backend, launcher
        self._kernels = launcher.cache()

    def reduce(self, op: str, src, dims, out, out_idx=None) -> None:
        """Reduce ``src`` over ``dims`` into ``out`` (contiguous, ``src``'s shape with 1 on ``dims``);
        see CPUReduce.reduce. Enqueues kernels only: never waits for the device."""
        M = out.numel()
        if M == 0:
            return
        dims = tuple(dims)
        K = math.prod(src.shape[d] for d in dims)
        if K == 0:
            self.be.elementwise("identity", out, [REDUCTIONS[op].identity], out.dtype)
            return
        dev = self.rt.dev(out)
        acc = acc_dtype(op, src.dtype, out.dtype)
        self.rt.check_dtype(dev, acc)
        if self._in_two_steps(op, src, dims, out, out_idx, acc):
            return
        oshape, ostr, ishape, istr = _layout(src._shape, src._strides, dims, out_idx is None)
        source = Source(src._storage.data, src._offset, src.dtype.ctype, oshape, ostr, ishape, istr)
        dest = Dest(out._storage.data, out._offset, out.dtype)
        if out_idx is not None:
            dest.idx, dest.idx_off = out_idx._storage.data, out_idx._offset
        # (g + 1) * chunk in the kernel reaches up to 2K
        big = max(src._storage.size, out._storage.size, 2 * K) > INT32_MAX
        self._reduce(Job(dev, out.device, op, acc, big), source, M, K, dest)

    def _in_two_steps(self, op: str, src, dims: tuple, out, out_idx, acc) -> bool:
        """A float sum over trailing dims and others (a conv bias gradient: dims 0, 2, 3 of [N, C, H, W]) as two
        reductions: the contiguous trailing block first (one long row per output: every work-item busy), then the
        rest. One pass gave each of the few outputs one work-item's strided walk: 305 us against 46 for the two
        steps on [64, 10, 24, 24] (PoCL, 2 cores). The sum's order changes, as any plan's split does."""
        nd = len(src.shape)
        trail = []
        while nd - 1 - len(trail) in dims:
            trail.append(nd - 1 - len(trail))
        rest = tuple(d for d in dims if d not in trail)
        inner = math.prod(src.shape[d] for d in trail)
        if op != "sum" or out_idx is not None or src.dtype.kind != "f" or not trail or not rest or inner < 16:
            return False
        if not all(src._strides[d] == math.prod(src.shape[d + 1:]) for d in trail):  # a dense trailing block
            return False
        mid = self.be.scratch(out.device, acc, tuple(1 if d in trail else n for d, n in enumerate(src.shape)))
        self.reduce("sum", src, tuple(trail), mid)
        self.reduce("sum", mid, rest, out)
        return True

    def _reduce(self, job: Job, source: Source, M: int, K: int, dest: Dest) -> None:
        if loops(job.dev):
            axis, vec, g, chunk = cpu_plan(job.dev, source, M, K, dest.idx is not None)
            shape = (axis, vec, g)
        else:
            column = M > 1 and abs(source.ostr[-1]) < min(abs(s) for s in source.istr)
            lx, ly, g, chunk = plan(job.dev, M, K, column)
            shape = (lx, ly, g)
        if g == 1:
            self._launch(job, source, M, K, chunk, shape, dest)
            return
        # pass 1 writes [G, M] partials in the accumulation type; they are then reduced like a column sum
        part = self.be.empty(job.device, job.acc, g * M)
        part_idx = self.be.empty(job.device, D.int64, g * M) if dest.idx is not None else None
        pdest = Dest(part.data, 0, job.acc, None if part_idx is None else part_idx.data)
        self._launch(job, source, M, K, chunk, shape, pdest)
        partials = Source(part.data, 0, job.acc.ctype, [M], [1], [g], [M], pdest.idx)
        if g * M > INT32_MAX:
            job = Job(job.dev, job.device, job.op, job.acc, True)
        self._reduce(job, partials, M, g, dest)

    def _launch(self, job: Job, source: Source, M: int, K: int, chunk: int, shape, dest: Dest) -> None:
        """Enqueue one pass; ``shape`` is (LX, LY, G) of the tree kernel or (axis, vec, G) of the CPU one."""
        a, b, g = shape
        op, acc = job.op, job.acc
        with_idx = dest.idx is not None
        mode = "none" if not with_idx else ("load" if source.idx is not None else "pos")
        out_dt = dest.dtype
        key = (job.dev.index, op, acc, job.big, source.ctype, len(source.oshape), len(source.ishape), mode, out_dt, a, b)
        cached = self._kernels.get(key)
        if cached is None:
            cached = self._kernels[key] = _kernel(job, source, mode, out_dt, shape)
        kernel, local_idx, local_acc = cached
        values = [source.buf, source.off]
        for n, s in zip(source.oshape, source.ostr):
            values += (n, s)
        for n, s in zip(source.ishape, source.istr):
            values += (n, s)
        if mode == "load":
            values.append(source.idx)
        values += (M, K, chunk, dest.buf, dest.off)
        if with_idx:
            values += (dest.idx, dest.idx_off)
        if isinstance(a, str):  # the CPU kernel: no local memory, and PoCL picks the local size
            kernel(job.dev.queue, (M // b if a == "col" else M, g), None, *values)
            return
        if with_idx:
            values.append(local_idx)
        values.append(local_acc)
        kernel(job.dev.queue, (-(-M // a) * a, b * g), (a, b), *values)


def _kernel(job: Job, source: Source, mode: str, out_dt: D.dtype, shape) -> tuple:
    """(kernel, local memory for indices or None, local memory for partial values) of one launch signature."""
    op, acc = job.op, job.acc
    cpu = isinstance(shape[0], str)
    layout = dict(layout="tree", axis="none", vec=1, unroll=1)
    if cpu:
        vec = min(shape[1], VEC)
        layout = dict(layout="loop", axis=shape[0], vec=vec, unroll=shape[1] // vec)
    idx_np = np.int64 if job.big else np.int32
    with_idx = mode != "none"
    out_cast = out_dt.ctype if out_dt in D.HALF_FLOATS else "bool" if out_dt is D.bool and op not in ("all", "any") else "plain"
    # op stands for its C expressions, which programs.render_params takes from registry/reductions.py
    params = dict(
        op=op, in_ctype=source.ctype, acc=acc.ctype, out_ctype=out_dt.ctype, out_cast=out_cast, idx=mode,
        outer_nd=len(source.oshape), inner_nd=len(source.ishape), idx_t="long" if job.big else "int",
        fp64="double" in (source.ctype, acc.ctype, out_dt.ctype), **layout,
    )
    arg_dtypes = [None, idx_np] + [idx_np] * (2 * len(source.oshape) + 2 * len(source.ishape))
    if mode == "load":
        arg_dtypes.append(None)
    arg_dtypes += [idx_np, idx_np, idx_np, None, idx_np]
    if with_idx:
        arg_dtypes += [None, idx_np]
    name = f"reduce_{op}{'_arg' if with_idx else ''}_{source.ctype}"
    if cpu:
        return programs.get_kernel(job.dev, "reduce", name, tuple(arg_dtypes), params), None, None
    arg_dtypes += [None, None] if with_idx else [None]
    kernel = programs.get_kernel(job.dev, "reduce", name, tuple(arg_dtypes), params)
    lx, ly, _ = shape
    return (kernel, cl.LocalMemory(8 * lx * ly) if with_idx else None, cl.LocalMemory(acc.itemsize * lx * ly))
