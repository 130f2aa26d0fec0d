"""OpenCL implementation of the ``scan`` primitives (an op family of OpenCLBackend): scans (cumsum/cumprod),
the stable row sort, and the gather / scatter / bin-count helpers of sort-based ops.

Every launcher views its tensor as ``rows`` rows of ``n`` elements along one dim. The other dims are
coalesced jointly for the input and the output (``coalesce``), so any layout is read and written in place
through strides; kernels come from ``kernels/scan.cl.mako`` and ``kernels/sort.cl.mako``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ...device import device
from ..common import INT32_MAX, acc_dtype, pow2, view
from . import looplimit, programs
from .launch import WG, Launcher, coalesce, launch_size  # WG: work-items per group of the block scan and the local sort

PER = 8  # elements each work-item scans serially in the block scan (a chunk is WG * PER)
SERIAL_SCAN = 64  # rows at most this long get a work-item each; so does any row when rows fill a CPU device
SERIAL_SORT = 16  # rows at most this long are insertion-sorted by one work-item
MAX_CHUNK = 2048  # elements one work-group sorts in __local memory (bounded by the device's local memory too)
# CPU devices sort rows serially (a merge sort per work-item beats barrier-synchronised work-groups there).
# None chooses by device type; tests set True / False to run either path on any device.
ROW_SORT: bool | None = None
SEGMENT_MIN = 4096  # shortest row segment a CPU work-item sorts when rows are too few to fill the device
RUN = 16  # runs the per-row merge sort insertion-sorts first


@dataclass
class Rows:
    """A tensor seen as rows along ``dim``: buffer, offset, step along the row, and per outer dim its stride."""

    buf: object
    off: int
    step: int
    ostr: list


def _outer(t, dim: int) -> tuple[list, list]:
    dims = [d for d in range(t.dim()) if d != dim]
    return [t.shape[d] for d in dims], [t._strides[d] for d in dims]


def _layout(src, out, dim: int):
    """(rows, n, outer shape, src Rows, out Rows) with the outer dims of both tensors coalesced together."""
    shape, src_str = _outer(src, dim)
    _, out_str = _outer(out, dim)
    oshape, (s_str, o_str) = coalesce(shape, [src_str, out_str])
    n = src.shape[dim] if src.dim() else 1
    step_s = src._strides[dim] if src.dim() else 1
    step_o = out._strides[dim] if out.dim() else 1
    return (math.prod(shape), n, oshape, Rows(src._storage.data, src._offset, step_s, s_str),
            Rows(out._storage.data, out._offset, step_o, o_str))


def _big(*tensors, extra: int = 0) -> bool:
    return max([t._storage.size for t in tensors] + [extra]) > INT32_MAX


def _outer_values(oshape, *strides) -> list:
    vals = []
    for d, size in enumerate(oshape):
        vals.append(size)
        vals += [s[d] for s in strides]
    return vals


def _local_size(dev, n: int) -> int:
    return min(WG, pow2(n), 1 << (dev.props.max_work_group_size.bit_length() - 1))


def _fp64(*dts) -> bool:
    return any(d is D.float64 for d in dts)


class CLScan:
    PRIMITIVES = ("scan", "sort", "gather_dim", "scatter_dim", "bincount")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    # ---- scans ------------------------------------------------------------------------------------
    def scan(self, op: str, src, dim: int, out, reverse: bool = False) -> None:
        """Inclusive scan of ``src`` along ``dim`` into ``out`` (same shape); see CPUScan.scan."""
        if out.numel() == 0:
            return
        dev = self.rt.dev(out)
        acc = acc_dtype(op, src.dtype, out.dtype)
        self.rt.check_dtype(dev, acc)
        rows, n, oshape, s, o = _layout(src, out, dim)
        if reverse:  # walk each row from its last element
            s.off, s.step = s.off + (n - 1) * s.step, -s.step
            o.off, o.step = o.off + (n - 1) * o.step, -o.step
        job = dict(dev=dev, op=op, acc=acc, big=_big(src, out, extra=2 * rows * n), fp64=_fp64(src.dtype, out.dtype))
        self._scan(job, src.dtype.ctype, s, out.dtype.ctype, o, oshape, rows, n)

    def _scan(self, job, in_ctype, s: Rows, out_ctype, o: Rows, oshape, rows, n) -> None:
        dev = job["dev"]
        if n <= SERIAL_SCAN or (dev.rank == 2 and rows >= 4 * dev.props.compute_units and _loops_within(dev, n)):
            self._scan_launch(job, "serial", in_ctype, s, out_ctype, o, oshape, rows, n, (rows,), None)
            return
        wg = _local_size(dev, -(-n // PER))
        chunks = -(-n // (wg * PER))
        if chunks == 1:
            self._scan_launch(job, "block", in_ctype, s, out_ctype, o, oshape, rows, n, (wg, rows), (wg, 1))
            return
        # several chunks per row: chunk scans to scratch, a scan of the chunk totals, then the carry pass
        acc = job["acc"]
        scratch = self._scan_tmp(dev, acc, rows * n)
        part = self._scan_tmp(dev, acc, rows * chunks)
        carry = self._scan_tmp(dev, acc, rows * chunks)
        self._scan_launch(job, "block", in_ctype, s, out_ctype, o, oshape, rows, n, (wg * chunks, rows), (wg, 1),
                          scratch=(scratch.data, part.data))
        totals = Rows(part.data, 0, 1, [chunks])
        self._scan(job, acc.ctype, totals, acc.ctype, Rows(carry.data, 0, 1, [chunks]), [rows], rows, chunks)
        gsize, lsize = self._scan_grid2(dev, n, rows)
        self._scan_launch(job, "carry", acc.ctype, s, out_ctype, o, oshape, rows, n, gsize, lsize,
                          scratch=(scratch.data, carry.data), chunk=(wg * PER, chunks))

    def _scan_tmp(self, dev, dt: D.dtype, size: int):
        return self.be.empty(device("opencl", dev.index), dt, size)

    @staticmethod
    def _scan_grid2(dev, n: int, rows: int):
        if dev.rank == 2:
            return (n, rows), None
        return (-(-n // WG) * WG, rows), (WG, 1)

    def _scan_launch(self, job, kind, in_ctype, s: Rows, out_ctype, o: Rows, oshape, rows, n, gsize, lsize,
                     scratch=None, chunk=None) -> None:
        idx_np = np.int64 if job["big"] else np.int32
        acc = job["acc"]
        to_scratch = kind == "block" and scratch is not None
        params = dict(kind=kind, op=job["op"], acc=acc.ctype, in_ctype=in_ctype, out_ctype=out_ctype,
                      to_scratch=to_scratch, outer_nd=len(oshape), idx_t="long" if job["big"] else "int",
                      per=PER, fp64=job["fp64"] or acc is D.float64)
        if kind == "carry":
            head, args = [None, None, idx_np, idx_np], [scratch[0], scratch[1], *chunk]
        else:
            head, args = [None, idx_np, idx_np], [s.buf, s.off, s.step]
        if to_scratch:
            head, args = head + [None, None], args + list(scratch)
        else:
            head, args = head + [None, idx_np, idx_np], args + [o.buf, o.off, o.step]
        strides = [o.ostr] if kind == "carry" else [s.ostr] if to_scratch else [s.ostr, o.ostr]
        head += [idx_np] * (len(oshape) * (1 + len(strides))) + [idx_np, idx_np]
        args += _outer_values(oshape, *strides) + [rows, n]
        if kind == "block":
            wg = gsize[0] if lsize is None else lsize[0]
            head += [None, None]
            args += [cl.LocalMemory(acc.itemsize * wg * PER), cl.LocalMemory(acc.itemsize * wg)]
        name = f"scan_{job['op']}_{kind}_{in_ctype}"
        kernel = programs.get_kernel(job["dev"], "scan", name, tuple(head), params)
        kernel(job["dev"].queue, gsize, lsize, *args)

    # ---- sort ------------------------------------------------------------------------------------
    def sort(self, src, dim: int, descending: bool, values, indices) -> None:
        """Stable sort of ``src`` along ``dim`` into ``values`` and ``indices`` (int64), fresh contiguous tensors
        of ``src``'s shape (so they share strides); see CPUScan.sort."""
        if src.numel() == 0:
            return
        dev = self.rt.dev(values)
        self.rt.check_dtype(dev, src.dtype)
        rows, n, oshape, s, o = _layout(src, values, dim)
        key = D.float32 if src.dtype in D.HALF_FLOATS else src.dtype
        big = _big(src, values, indices, extra=2 * rows * n)
        job = dict(dev=dev, key=key, pos=D.int64 if n > INT32_MAX else D.int32, in_ctype=src.dtype.ctype,
                   descending=bool(descending), big=big, fp64=src.dtype is D.float64, oshape=oshape, rows=rows, n=n,
                   final=[values._storage.data, values._offset, indices._storage.data, indices._offset, o.step])
        if n <= SERIAL_SORT:
            gsize, lsize = (rows,), None
            if dev.rank < 2:
                gsize, lsize = (-(-rows // 64) * 64,), (64,)
            args = [s.buf, s.off, s.step, *job["final"], *_outer_values(oshape, s.ostr, o.ostr), rows, n]
            self._sort_launch(job, "serial", args, gsize, lsize, final=True)
            return
        on_cpu = dev.rank == 2 if ROW_SORT is None else ROW_SORT
        if not on_cpu and n <= _chunk(job):
            self._local_sort(job, s, o, None)
            return
        # ping-pong scratch of keys and positions; the Storage objects must outlive the launches (freeing one
        # returns its buffer to the pool, where the next allocation of the same size would find it)
        held = [self._scan_tmp(dev, dt, rows * n) for dt in (key, job["pos"], key, job["pos"])]
        a, b = [held[0].data, held[1].data], [held[2].data, held[3].data]
        w = self._segsort(job, s, o, a, b) if on_cpu else self._local_sort(job, s, o, a)
        gsize, lsize = self._scan_grid2(dev, n, rows)
        while w < n:  # merge runs of width w pairwise until one run spans the row
            final = 2 * w >= n
            dest = [*job["final"], *_outer_values(oshape, o.ostr)] if final else b
            self._sort_launch(job, "merge", [*a, *dest, rows, n, w], gsize, lsize, final=final)
            a, b = b, a
            w *= 2

    def _segsort(self, job, s: Rows, o: Rows, a, b) -> int:
        """CPU devices: a serial merge sort per row, or per segment of a row when rows are too few to give every
        core work; returns the sorted run length (n when done)."""
        rows, n = job["rows"], job["n"]
        target = 4 * job["dev"].props.compute_units
        segs = 1 if rows >= target else max(1, min(-(-target // rows), n // SEGMENT_MIN))
        seg = min(-(-n // segs), _segment_most(job["dev"]))  # shorter segments on a device with a loop limit
        segs = -(-n // seg)
        final = segs == 1
        outer = _outer_values(job["oshape"], s.ostr, o.ostr) if final else _outer_values(job["oshape"], s.ostr)
        args = [s.buf, s.off, s.step, *(job["final"] if final else []), *a, *b, *outer, rows, n, seg, segs]
        self._sort_launch(job, "segsort", args, (rows * segs,), None, final=final)
        return seg

    def _local_sort(self, job, s: Rows, o: Rows, a) -> int:
        """GPUs: work-groups sort chunks of rows in __local memory; returns the sorted run length (n when done)."""
        dev, key, pos, rows, n = job["dev"], job["key"], job["pos"], job["rows"], job["n"]
        chunk = _chunk(job)
        wg = _local_size(dev, chunk)
        chunks = -(-n // chunk)
        local = [cl_local(chunk * key.itemsize), cl_local(chunk * pos.itemsize)] * 2
        final = chunks == 1
        if final:
            args = [s.buf, s.off, s.step, *job["final"], *_outer_values(job["oshape"], s.ostr, o.ostr)]
        else:
            args = [s.buf, s.off, s.step, *a, *_outer_values(job["oshape"], s.ostr)]
        self._sort_launch(job, "local", args + [rows, n, chunk] + local, (wg * chunks, rows), (wg, 1), final=final)
        return chunk

    def _sort_launch(self, job, kind, args, gsize, lsize, final: bool) -> None:
        idx_np = np.int64 if job["big"] else np.int32
        # the outer dims matter only where a kernel addresses the input or the final output through strides
        outer_nd = len(job["oshape"]) if final or kind != "merge" else 0
        params = _sort_params(kind, job["big"], key_t=job["key"].ctype, pos_t=job["pos"].ctype, in_ctype=job["in_ctype"],
                              val_ctype=job["in_ctype"], descending=job["descending"], outer_nd=outer_nd, final=final,
                              fp64=job["fp64"])
        arg_dtypes = tuple(None if _is_buffer(v) else idx_np for v in args)
        order = "desc" if job["descending"] else "asc"
        name = f"sort_{kind}_{order}_{job['in_ctype']}"
        kernel = programs.get_kernel(job["dev"], "sort", name, arg_dtypes, params)
        kernel(job["dev"].queue, gsize, lsize, *args)

    # ---- gather / scatter along a dim, bincount ---------------------------------------------------
    def gather_dim(self, src, dim: int, index, out) -> None:
        """``out[..., j, ...] = src[..., index[..., j, ...], ...]``; see CPUScan.gather_dim."""
        if out.numel() == 0:
            return
        src, index = self.be.contiguous(src), self.be.contiguous(index)
        n, m, inner = _nmi(src, index, dim)
        args = [src._storage.data, src._offset, index._storage.data, index._offset, out._storage.data, out._offset,
                m, n, inner, out.numel()]
        self._sort_helper_launch(out, "gather", args, dict(iota=False, masked=False), src, index)

    def scatter_dim(self, src, dim: int, index, out, mask=None) -> None:
        """``out[..., index[..., j, ...], ...] = src[..., j, ...]`` (``j`` itself when src is None) where
        ``mask`` is nonzero; see CPUScan.scatter_dim."""
        if index.numel() == 0:
            return
        index = self.be.contiguous(index)
        n, m, inner = _nmi(out, index, dim)
        args = []
        if src is not None:
            src = self.be.contiguous(src)
            args += [src._storage.data, src._offset]
        args += [index._storage.data, index._offset]
        if mask is not None:
            mask = self.be.contiguous(mask)
            args += [mask._storage.data, mask._offset]
        args += [out._storage.data, out._offset, m, n, inner, index.numel()]
        self._sort_helper_launch(out, "scatter", args, dict(iota=src is None, masked=mask is not None), out, index)

    def _sort_helper_launch(self, out, kind, args, flags, *tensors) -> None:
        dev = self.rt.dev(out)
        big = _big(*tensors, out, extra=2 * out._storage.size)
        idx_np = np.int64 if big else np.int32
        # a copy moves bits: half and bfloat16 travel as ushort, so no value conversion can touch it
        val = "ushort" if out.dtype in D.HALF_FLOATS else out.dtype.ctype
        params = _sort_params(kind, big, val_ctype=val, fp64=out.dtype is D.float64, **flags)
        arg_dtypes = tuple(None if _is_buffer(v) else idx_np for v in args)
        total = args[-1]
        name = f"{kind}{'_iota' if flags['iota'] else ''}{'_masked' if flags['masked'] else ''}_{val}"
        kernel = programs.get_kernel(dev, "sort", name, arg_dtypes, params)
        kernel(dev.queue, *launch_size(dev, total), *args)

    def bincount(self, input, weights, out) -> None:
        """``out[b]`` = how many entries of the 1-D int ``input`` equal b (or the sum of their ``weights``, given
        in ``out``'s dtype): a sort, then two binary searches per bin, so the result is deterministic."""
        nbins = out.numel()
        if nbins == 0:
            return
        n = input.numel()
        dev = self.rt.dev(out)
        if weights is not None and not _loops_within(dev, n):
            # a bin may hold more weights than one work-item can add up on this device (looplimit.py):
            # scatter-add them instead (atomic, so the order of the sum is not fixed)
            idx = self.be.scratch(input.device, D.int64, input.shape)
            self.be.elementwise("identity", idx, [input], D.int64)
            self.be.elementwise("identity", out, [0], out.dtype)
            self.be.index_put(view(out, (n,), (0,)), weights, [(idx, nbins, 1)], "add", wrap=False, checked=False)
            return
        srt = self.be.scratch(input.device, input.dtype, input.shape)
        perm = self.be.scratch(input.device, D.int64, input.shape)
        self.sort(input, 0, False, srt, perm)
        args = [srt._storage.data, n]
        if weights is not None:
            ws = self.be.scratch(weights.device, weights.dtype, weights.shape)
            self.gather_dim(weights, 0, perm, ws)
            args.append(ws._storage.data)
        args += [out._storage.data, nbins]
        big = _big(input, out, extra=2 * nbins)
        idx_np = np.int64 if big else np.int32
        params = _sort_params("bincount", big, in_ctype=input.dtype.ctype, val_ctype=out.dtype.ctype,
                              fp64=out.dtype is D.float64, weighted=weights is not None)
        arg_dtypes = tuple(None if _is_buffer(v) else idx_np for v in args)
        name = f"bincount_{input.dtype.ctype}_{out.dtype.ctype}"
        kernel = programs.get_kernel(dev, "sort", name, arg_dtypes, params)
        kernel(dev.queue, *launch_size(dev, nbins), *args)


def _loops_within(dev, iterations: int) -> bool:
    b = looplimit.budget(dev)
    return b is None or iterations <= b


def _segment_most(dev) -> int:
    """The longest row segment one segsort work-item may sort on ``dev``: any, or on a device with a loop limit
    (looplimit.py) the longest power of two whose sort stays within its budget (per element: up to RUN / 2 steps
    of insertion, one per merge pass, a load and a store)."""
    b = looplimit.budget(dev)
    if b is None:
        return 1 << 62
    seg = RUN
    while 2 * seg * (RUN // 2 + 3 + (2 * seg // RUN).bit_length()) <= b:
        seg *= 2
    return seg


def _chunk(job) -> int:
    """Elements per work-group of the local sort: a power of two whose two key + position buffers take at most
    half the device's local memory."""
    room = job["dev"].props.local_memory // (4 * (job["key"].itemsize + job["pos"].itemsize))
    return min(MAX_CHUNK, pow2(job["n"]), 1 << (room.bit_length() - 1))


def _sort_params(kind: str, big: bool, **given) -> dict:
    """Every variable kernels/sort.cl.mako reads, with neutral values for those ``kind`` ignores."""
    params = dict(kind=kind, idx_t="long" if big else "int", key_t="int", pos_t="int", in_ctype="int", val_ctype="int",
                  descending=False, outer_nd=0, final=False, fp64=False, serial_max=SERIAL_SORT, iota=False,
                  masked=False, weighted=False, run=RUN)
    params.update(given)
    return params


def _nmi(full, index, dim: int) -> tuple[int, int, int]:
    """(n, m, inner): the size of ``dim`` in the indexed tensor, in ``index``, and the elements after ``dim``."""
    if index.dim() == 0:
        return 1, 1, 1
    return full.shape[dim], index.shape[dim], math.prod(index.shape[dim + 1:])


def _is_buffer(v) -> bool:
    return v is None or isinstance(v, (cl.MemoryObjectHolder, cl.LocalMemory))


def cl_local(nbytes: int):
    return cl.LocalMemory(nbytes)
