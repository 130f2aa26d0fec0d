"""``clgrad.accelerator``: torch.accelerator's device-agnostic API, with OpenCL as the accelerator.

The idiom ``device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"``
gives ``device(type='opencl')`` where an OpenCL device passed clgrad's health check, and a bare ``opencl`` then
means the current device index (``set_device_index``; by default ``CLGRAD_DEVICE`` or the best healthy device).
The current index is one per process (torch keeps one per thread).
"""
from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

from . import cuda, opencl
from . import dtypes as D
from .backends.opencl import runtime
from .device import current_index, device, set_current_index

__all__ = [
    "current_accelerator", "current_device_idx", "current_device_index", "device_count", "device_index",
    "empty_cache", "empty_host_cache", "get_device_capability", "get_memory_info", "is_available",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
    "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
    "synchronize", "memory",
]

_OPENCL = device("opencl")
_MODULES = {"opencl": opencl, "cuda": cuda}
device_type = device  # the class, under a name device_index's parameter does not shadow


def is_available() -> bool:
    """True when an OpenCL device passed clgrad's health check (``clgrad.opencl.is_available()``)."""
    return opencl.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device(type='opencl')`` when OpenCL devices are present (and, with ``check_available``, one is healthy);
    None otherwise, as torch returns None where no accelerator exists."""
    if not runtime.devices() or (check_available and not is_available()):
        return None
    return _OPENCL


def device_count() -> int:
    """How many OpenCL devices are present (0 where there is no accelerator)."""
    return opencl.device_count()


def _index(dev, optional: bool) -> int:
    """torch.accelerator's reading of a device argument: an int is an index; a device must be an opencl one; a
    device without an index is the current one only where ``optional``."""
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    if isinstance(dev, str):
        dev = device(dev)
    index = None
    if isinstance(dev, device):
        if current_accelerator() is None:
            raise RuntimeError("Accelerator expected")
        if dev.type != "opencl":
            raise ValueError(f"{dev.type} doesn't match the current accelerator {_OPENCL}.")
        index = dev.index
    elif dev is not None:
        raise TypeError(f"Expected a device, a string or an int, but got {type(dev).__name__}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{dev}")
        return current_device_index()
    return index


def current_device_index() -> int:
    """The index of the current OpenCL device (what ``device("opencl")`` resolves to)."""
    if not runtime.devices():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return current_index()


def set_device_index(device, /) -> None:  # noqa: A002 - torch's name
    """Make ``opencl`` (no index) mean this device: ``clgrad.accelerator.set_device_index(1)``."""
    set_current_index(_index(device, optional=False))


current_device_idx = current_device_index
set_device_idx = set_device_index


class device_index:  # noqa: N801 - torch's name
    """``with clgrad.accelerator.device_index(1):`` switches the current device inside the block and restores it
    after; ``device_index(None)`` changes nothing."""

    def __init__(self, device: int | None, /):  # noqa: A002
        self.idx = device
        self.prev_idx = None

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = set_current_index(_index(self.idx, optional=False))

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_current_index(self.prev_idx)


def synchronize(device=None, /) -> None:  # noqa: A002
    """Wait for the work queued on ``device`` (the current device when None)."""
    opencl.synchronize(_index(device, optional=True))


def get_device_capability(device=None, /) -> dict:  # noqa: A002
    """What the device computes in: ``{"supported_dtypes": [...]}`` (float64 only with ``cl_khr_fp64``)."""
    props = runtime.get(_index(device, optional=True)).props
    dtypes = [D.bool, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.float32]
    return {"supported_dtypes": dtypes + ([D.float64] if props.fp64 else [])}


# ---- memory (torch.accelerator.memory): the OpenCL allocator's counters ------------------------------------------
def empty_cache() -> None:
    """Release cached, unused buffers of every OpenCL device."""
    opencl.empty_cache()


def empty_host_cache() -> None:
    """Nothing to release: clgrad caches no pinned host memory."""


def memory_allocated(device_index=None, /) -> int:
    return opencl.memory_allocated(_index(device_index, optional=True))


def max_memory_allocated(device_index=None, /) -> int:
    return opencl.max_memory_allocated(_index(device_index, optional=True))


def memory_reserved(device_index=None, /) -> int:
    return opencl.memory_reserved(_index(device_index, optional=True))


def max_memory_reserved(device_index=None, /) -> int:
    return opencl.max_memory_reserved(_index(device_index, optional=True))


def memory_stats(device_index=None, /) -> OrderedDict:
    return opencl.memory_stats(_index(device_index, optional=True))


def reset_peak_memory_stats(device_index=None, /) -> None:
    opencl.reset_peak_memory_stats(_index(device_index, optional=True))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    opencl.reset_accumulated_memory_stats(_index(device_index, optional=True))


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """(free, total) bytes, as ``clgrad.opencl.mem_get_info``."""
    return opencl.mem_get_info(_index(device_index, optional=True))


# torch.accelerator.memory holds the memory functions under the same names
memory = SimpleNamespace(**{name: globals()[name] for name in (
    "empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats")})


def get_device_module(device=None):  # noqa: A002 - torch's name
    """``clgrad.get_device_module("opencl")`` is ``clgrad.opencl`` (torch.get_device_module); ``"cuda"`` gives
    ``clgrad.cuda``, which reports no devices. None: the current accelerator's module."""
    name = device.type if isinstance(device, device_type) else device
    if name is None:
        return opencl
    if isinstance(name, str):
        name = name.partition(":")[0]
        if name in _MODULES:
            return _MODULES[name]
    raise RuntimeError(f"Device '{device}' does not have a corresponding module registered as 'clgrad.{device}'.")
