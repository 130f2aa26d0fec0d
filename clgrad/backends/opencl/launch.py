"""Launch geometry and argument packing that every OpenCL launcher shares: coalesced dims, one work-item per
element, the index width of a launch, kernel arguments with their pyopencl scalar types."""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ..common import complex_unsupported
from . import programs, runtime

WG = 256  # work-items of a group where a launcher chooses: a power of two, for the trees
SMALL_LAUNCH = 1 << 16
BIG_LOCAL = 1024  # work-group size of CPU launches from SMALL_LAUNCH work-items (launch_size)


def coalesce(shape, strides_list):
    """Drop size-1 dims and merge dims that are contiguous for every operand.

    Returns (shape, strides_list) with as few dims as possible (at least one), so that kernels are
    rendered for few distinct ``ndim`` values and index math stays cheap.
    """
    dims = [d for d, n in enumerate(shape) if n != 1]
    new_shape = [shape[d] for d in dims] or [1]
    new_strides = [[st[d] for d in dims] or [1] for st in strides_list]
    d = len(new_shape) - 1
    while d > 0:
        if all(st[d - 1] == st[d] * new_shape[d] for st in new_strides):
            new_shape[d - 1] *= new_shape[d]
            del new_shape[d]
            for st in new_strides:
                st[d - 1] = st[d]
                del st[d]
        d -= 1
    return new_shape, new_strides


def is_contig(shape, strides) -> bool:
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def launch_size(dev, n: int, local: int = WG):
    """One work-item per element, in work-groups of a fixed size and a rounded-up global size (kernels guard the
    tail). CPU devices get one of two sizes (64, or BIG_LOCAL from SMALL_LAUNCH elements): PoCL generates code
    for each distinct local size (about 0.2-0.6 s each), and left to choose it picks a different one for nearly
    every global size, so every new batch size compiled again."""
    if dev.rank >= 2:
        if n >= SMALL_LAUNCH:
            big = min(BIG_LOCAL, dev.props.max_work_group_size)
            return (-(-n // big) * big,), (big,)
        return (-(-n // 64) * 64,), (64,)
    local = min(local, dev.props.max_work_group_size)
    return (-(-n // local) * local,), (local,)


def index_type(big: bool):
    """(numpy argument type, C type) of a launch's index math: 64-bit only where some index passes INT32_MAX."""
    return (np.int64, "long") if big else (np.int32, "int")


class Args:
    """Kernel arguments and their pyopencl scalar types, built side by side."""

    def __init__(self, idx_np):
        self.values, self.types, self.idx_np = [], [], idx_np

    def buf(self, *bufs):
        self.values += bufs
        self.types += [None] * len(bufs)

    def idx(self, *ints):
        self.values += ints
        self.types += [self.idx_np] * len(ints)

    def scalar(self, np_type, *values):
        self.values += values
        self.types += [np_type] * len(values)


class Launcher:
    """What the op families of one backend launch through: device lookup and dtype checks, launch geometry, index
    width and argument packing, and the launch caches, all dropped together when the kernels or queues they hold
    go stale (``programs.add_cache_listener``: ``programs.clear()``, the profiler, a replaced queue)."""

    coalesce = staticmethod(coalesce)
    launch_size = staticmethod(launch_size)
    index_type = staticmethod(index_type)

    def __init__(self):
        self._caches: list[dict] = []
        programs.add_cache_listener(self.clear)

    def cache(self, cap: int | None = None) -> dict:
        """A new cache (a dict of at most ``cap`` entries, least recently used dropped first: default
        ``programs.MAX_LAUNCHERS``) that ``clear`` empties."""
        found = programs.LRU(cap or programs.MAX_LAUNCHERS)
        self._caches.append(found)
        return found

    def clear(self) -> None:
        for found in self._caches:
            found.clear()

    @staticmethod
    def dev(t) -> runtime.CLDevice:
        """The OpenCL device of a tensor descriptor (never a complex one: ops compose those from real ops)."""
        if t.dtype.kind == "c":
            raise complex_unsupported(t)
        return runtime.get(t.device.index)

    @staticmethod
    def check_dtype(dev: runtime.CLDevice, dt: D.dtype) -> None:
        if (dt is D.float64 or dt is D.complex128) and not dev.props.fp64:
            raise TypeError(
                f"{dt.name} is not supported on opencl:{dev.index} ({dev.props.name}): the device lacks the "
                "cl_khr_fp64 extension. Use float32, or a device that has cl_khr_fp64."
            )
