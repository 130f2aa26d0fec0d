"""OpenCL implementation of the ``index`` primitives (an op family of OpenCLBackend): launches of
``kernels/index.cl.mako``. See ``cpu_index.CPUIndex`` for the reference semantics.

Every checked launch gets a one-int flag buffer that the kernel lowers (atomic_min) to the first bad
index's position; reading it back is the one synchronisation these ops make.
"""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ..common import INT32_MAX, first_bad, is_scalar, view
from . import capture, looplimit, programs, runtime
from .launch import Launcher, coalesce, launch_size

NO_ERROR = INT32_MAX
CLAMPED = INT32_MAX - 1  # the key saturated: the position is not exact, so the host searches itself
_RAW = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}
_RAW_NP = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SCALAR_NP = {"uchar": np.uint8, "char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
              "float": np.float32, "double": np.float64, "ushort": np.uint16, "uint": np.uint32, "ulong": np.uint64}
NONZERO_CHUNKS = 16384  # most chunks nonzero splits its input into (the scan pass handles them in one group)
NONZERO_MIN_CHUNK = 32


def _params(kind: str, **given) -> dict:
    """Every variable the template names (Mako's strict mode wants them all), with neutral values for the
    ones this kernel kind does not use."""
    neutral = dict(elem="uchar", mode="copy", atomic="none", value="none", is_bool=False, fp64=False, ndim=1,
                   nidx=0, checked=False, idx_t="int", itemsize=1, is_float=False)
    return dict(neutral, kind=kind, **given)


def has_int64_atomics(dev) -> bool:
    """Whether ``dev`` (a runtime.CLDevice) has 64-bit global atomics (cl_khr_int64_base_atomics)."""
    found = dev.__dict__.get("_int64_atomics")
    if found is None:
        found = dev._int64_atomics = "cl_khr_int64_base_atomics" in dev.cl_device.extensions.split()
    return found


def _atomic_kind(dev, dt: D.dtype, mode: str) -> str:
    """How ``mode`` ('store', 'add', 'mul') updates an element of ``dt`` (see the template's header)."""
    if mode == "store":
        return "none"
    if dt.itemsize <= 2:
        return "word"
    if dt.itemsize == 4:
        return "int32" if mode == "add" and dt is D.int32 else "cas32"
    if not has_int64_atomics(dev):
        return "serial"
    return "int64" if mode == "add" and dt is D.int64 else "cas64"


class CLIndex:
    PRIMITIVES = ("index_gather", "index_put", "nonzero")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def index_gather(self, out, src, indices, wrap: bool = True, checked: bool = True):
        """``out[i] = src[i + sum_k indices[k][i] * step_k]`` over the index space ``out.shape``; see
        CPUIndex.index_gather. Returns None, or (k, value) of the first out-of-range index."""
        if out.numel() == 0:
            return None
        raw = _RAW[src.dtype.itemsize]
        return self._index_launch("gather", src, out, indices, dict(elem=raw, mode="copy", atomic="none", value="none",
                                                              is_bool=False, fp64=False), wrap, checked)

    def index_put(self, dst, value, indices, mode: str = "store", wrap: bool = True, checked: bool = True):
        """``dst[i + sum_k indices[k][i] * step_k] (op)= value[i]``; see CPUIndex.index_put."""
        if dst.numel() == 0:
            return None
        dev = self.rt.dev(dst)
        dt = dst.dtype
        atomic = _atomic_kind(dev, dt, mode)
        # plain stores move bits: one kernel per element size serves every dtype
        elem = _RAW[dt.itemsize] if mode == "store" else dt.ctype
        params = dict(elem=elem, mode=mode, atomic=atomic, value="scalar" if is_scalar(value) else "tensor",
                      is_bool=dt is D.bool, fp64=elem == "double")
        return self._index_launch("put", dst, value, indices, params, wrap, checked)

    def _index_launch(self, kind, data, other, indices, params, wrap, checked):
        dev = self.rt.dev(data)
        n = math.prod(data.shape)
        tensor_value = kind == "gather" or params["value"] == "tensor"
        operands = [data] + ([other] if tensor_value else []) + [t for t, _, _ in indices]
        shape, strides = coalesce(data.shape, [x._strides for x in operands])
        big = max([n] + [x._storage.size for x in operands]) > INT32_MAX
        idx_np = np.int64 if big else np.int32
        ndim, nidx = len(shape), len(indices)
        arg_types, values = [None, idx_np], [data._storage.data, data._offset]
        if tensor_value:
            arg_types += [None, idx_np]
            values += [other._storage.data, other._offset]
        else:
            ctype = "ushort" if params["elem"] in ("half", "bfloat16") else params["elem"]
            arg_types.append(_SCALAR_NP[ctype])
            values.append(np.asarray(other).view(_RAW_NP[data.dtype.itemsize]).view(_SCALAR_NP[ctype])[()])
        for t, size, step in indices:
            arg_types += [None, idx_np, np.int64, np.int64, idx_np]
            values += [t._storage.data, t._offset, size, size if wrap else 0, step]
        per_dim = len(operands) + 1
        for d in range(ndim):
            arg_types += [idx_np] * per_dim
            values += [shape[d]] + [st[d] for st in strides]
        flag = None
        if checked:
            flag = self.be.empty(data.device, D.int32, 1)
            capture.fill(dev.queue, flag.data, np.int32(NO_ERROR), 0, 4)
            arg_types.append(None)
            values.append(flag.data)
        serial = params["atomic"] == "serial"
        arg_types += [idx_np, idx_np] if serial else [idx_np]  # serial: the range [start, n) one launch applies
        params = _params(kind, **params, ndim=ndim, nidx=nidx, checked=checked, idx_t="long" if big else "int")
        name = f"index_{kind}_{params['mode']}_{params['elem']}"
        kernel = programs.get_kernel(dev, "index", name, tuple(arg_types), params)
        if serial:
            # one work-item loops over the updates: in pieces where the device limits its loop (looplimit.py)
            step = looplimit.budget(dev) or n
            for start in range(0, n, step):
                kernel(dev.queue, (1,), (1,), *values, start, min(n, start + step))
        else:
            kernel(dev.queue, *launch_size(dev, n), *values, n)
        return self._index_first_bad(dev, flag, data.shape, indices, wrap) if checked else None

    def _index_first_bad(self, dev, flag, shape, indices, wrap):
        """Read the flag; on an error, the (k, value) of the first bad index (k: which index tensor)."""
        capture.refuse("its index bounds check reads the device")
        key = np.empty(1, np.int32)
        with runtime.waiting(dev):
            cl.enqueue_copy(dev.queue, key, flag.data, is_blocking=True)
        key = int(key[0])
        if key == NO_ERROR:
            return None
        if key == CLAMPED:
            return _search_on_host(self.be, shape, indices, wrap)
        pos, k = divmod(key, len(indices))
        # the kernel's position is row-major over the index space, which coalescing does not reorder
        coords = np.unravel_index(pos, shape) if shape else ()
        t = indices[k][0]
        value = self.be.read(view(t, (), (), t._offset + sum(int(c) * s for c, s in zip(coords, t._strides))))
        return k, int(value)

    def nonzero(self, src, alloc):
        """Coordinates of the nonzero elements of ``src`` in row-major order, as ``alloc(count)`` (an int64
        tensor of shape (count, ndim)) filled in. One 8-byte read (the count) synchronises."""
        dev = self.rt.dev(src)
        shape, strides = (list(src.shape), list(src._strides)) if src.dim() else ([1], [1])
        n = math.prod(shape)
        if n == 0:
            return alloc(0)
        chunk = max(NONZERO_MIN_CHUNK, -(-n // NONZERO_CHUNKS))
        groups = -(-n // chunk)
        big = max(n + chunk, src._storage.size) > INT32_MAX
        idx_np = np.int64 if big else np.int32
        counts = self.be.empty(src.device, D.int64, groups + 1)
        params = dict(itemsize=src.dtype.itemsize, is_float=src.dtype.kind == "f", ndim=len(shape),
                      idx_t="long" if big else "int")
        head_types = [None, idx_np] + [idx_np] * (2 * len(shape)) + [idx_np, idx_np, None]
        head = [src._storage.data, src._offset] + [v for pair in zip(shape, strides) for v in pair] + [n, chunk, counts.data]
        raw = _RAW[src.dtype.itemsize]
        gsize, lsize = launch_size(dev, groups)
        count = programs.get_kernel(dev, "index", f"nonzero_count_{raw}", tuple(head_types), _params("nonzero_count", **params))
        count(dev.queue, gsize, lsize, *head)
        local = min(256, 1 << (dev.props.max_work_group_size.bit_length() - 1))
        scan = programs.get_kernel(dev, "index", "nonzero_scan", (None, idx_np, None),
                                   _params("nonzero_scan", idx_t=params["idx_t"]))
        scan(dev.queue, (local,), (local,), counts.data, groups, cl.LocalMemory(8 * local))
        capture.refuse("the size of its result depends on the data (a host read)")
        total = np.empty(1, np.int64)
        with runtime.waiting(dev):
            cl.enqueue_copy(dev.queue, total, counts.data, src_offset=8 * groups, is_blocking=True)
        out = alloc(int(total[0]))
        if total[0] and src.dim():
            write = programs.get_kernel(dev, "index", f"nonzero_write_{raw}", tuple(head_types) + (None,),
                                        _params("nonzero_write", **params))
            write(dev.queue, gsize, lsize, *head, out._storage.data)
        return out


def _search_on_host(backend, shape, indices, wrap):
    """The first bad index, found on the host (only when the kernel's key saturated: > 2**31 positions)."""
    hosts = [(np.broadcast_to(backend.read(t), shape) if t.numel() else np.zeros(shape, np.int64), size, step)
             for t, size, step in indices]
    return first_bad(hosts, wrap)
