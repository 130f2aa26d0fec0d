"""Storage: a flat, typed block of device memory that tensors view through shape, strides and offset.

A cpu storage can move into memory that other processes map (``share_memory_``), for ``clgrad.multiprocessing``:
a ``SharedBlock``, which a forked child inherits and which pickles by handle through multiprocessing queues and
spawn arguments. Its two kinds are torch's two sharing strategies: ``file_descriptor`` (Linux: an anonymous
``memfd``, passed to the other process as a duplicated descriptor; the kernel frees it when the last process
unmaps it) and ``file_system`` (a named ``multiprocessing.shared_memory`` block, unlinked when the storage that
created it is freed, or, once it has been sent by name, when the creating process exits).
"""
from __future__ import annotations

import itertools
import mmap
import os
import weakref
from multiprocessing import shared_memory

import numpy as np

from .device import device
from .dtypes import dtype

STRATEGIES = ("file_descriptor", "file_system") if hasattr(os, "memfd_create") else ("file_system",)
sharing = {"strategy": STRATEGIES[0]}  # clgrad.multiprocessing.set_sharing_strategy changes it
_ids = itertools.count()
blocks: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # SharedBlock.key -> this process's Storage


class SharedBlock:
    """``nbytes`` of memory several processes map. ``key`` names it across processes (creator pid and a counter),
    so a process that receives the same block twice builds one Storage (``clgrad.multiprocessing``)."""

    __slots__ = ("nbytes", "key", "fd", "shm", "buffer", "__weakref__")

    def __init__(self, nbytes: int, key: str, fd: int = -1, shm=None):
        self.nbytes, self.key, self.fd, self.shm = nbytes, key, fd, shm
        if shm is None:
            self.buffer = mmap.mmap(fd, max(nbytes, 1))  # MAP_SHARED: a forked child writes into the same pages
        else:
            self.buffer = shm.buf
            # SharedMemory.close() fails while a numpy array still views the buffer; the mapping goes with the
            # last view instead
            shm.close = lambda: None

    @classmethod
    def create(cls, nbytes: int) -> SharedBlock:
        key = f"clgrad_{os.getpid()}_{next(_ids)}"
        if sharing["strategy"] == "file_descriptor":
            fd = os.memfd_create(key, os.MFD_CLOEXEC)
            os.ftruncate(fd, max(nbytes, 1))
            return cls(nbytes, key, fd=fd)
        shm = shared_memory.SharedMemory(name=key, create=True, size=max(nbytes, 1))
        weakref.finalize(shm, _unlink, shm.name, os.getpid())
        return cls(nbytes, key, shm=shm)

    @classmethod
    def attach(cls, nbytes: int, key: str, fd: int = -1, name: str | None = None) -> SharedBlock:
        """The block another process created, by its descriptor (already duplicated into this process) or name."""
        return cls(nbytes, key, fd=fd) if name is None else cls(nbytes, key, shm=shared_memory.SharedMemory(name))

    def array(self, dt: dtype, size: int) -> np.ndarray:
        return np.frombuffer(self.buffer, dt.np, count=size)

    def __del__(self):
        if self.fd >= 0:
            os.close(self.fd)


def _unlink(name: str, creator: int) -> None:
    """Remove a file_system block's name once its creator frees it (mappings stay valid where they exist)."""
    if os.getpid() == creator:
        try:
            shared_memory.SharedMemory(name).unlink()
        except FileNotFoundError:
            pass


class Storage:
    """``data`` is a 1-D numpy array on cpu, a ``pyopencl.Buffer`` (None when empty) on OpenCL."""

    __slots__ = ("device", "dtype", "size", "data", "version", "_free", "shared", "__weakref__")

    def __init__(self, dev: device, dt: dtype, size: int, data, free=None):
        self.device = dev
        self.dtype = dt
        self.size = size  # in elements
        self.data = data
        self.version = 0  # bumped by in-place writes; autograd compares it for saved tensors
        self._free = free  # returns an OpenCL buffer to its allocator
        self.shared: SharedBlock | None = None  # set by share_memory_ (cpu)

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

    def share_memory_(self) -> Storage:
        """Move a cpu storage's values into a SharedBlock (once; tensors viewing it see the same values). OpenCL
        memory cannot be shared between processes: that raises a RuntimeError naming the fix."""
        if self.device.type != "cpu":
            raise RuntimeError(
                f"share_memory_(): {self.device} memory cannot be shared between processes (OpenCL has no "
                "inter-process buffers, unlike CUDA IPC); keep the tensors or model on 'cpu' for Hogwild-style "
                "training (model.to('cpu').share_memory())")
        if self.shared is None:
            block = SharedBlock.create(self.nbytes)
            data = block.array(self.dtype, self.size)
            data[...] = self.data
            self.data, self.shared = data, block
            blocks[block.key] = self
        return self

    def is_shared(self) -> bool:
        return self.shared is not None
