"""Storage: a flat, typed block of device memory that tensors view through shape, strides and offset."""
from __future__ import annotations

from .device import device
from .dtypes import dtype


class Storage:
    """``data`` is a 1-D numpy array on cpu, a ``pyopencl.Buffer`` (None when empty) on OpenCL."""

    __slots__ = ("device", "dtype", "size", "data", "version", "_free", "__weakref__")

    def __init__(self, dev: device, dt: dtype, size: int, data, free=None):
        self.device = dev
        self.dtype = dt
        self.size = size  # in elements
        self.data = data
        self.version = 0  # bumped by in-place writes; autograd compares it for saved tensors
        self._free = free  # returns an OpenCL buffer to its allocator

    def __del__(self):
        free, self._free = self._free, None
        if free is not None:
            try:
                free()
            except Exception:  # interpreter shutdown: the allocator may already be gone
                pass

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize
