"""``clgrad.opencl``: device queries and memory statistics, shaped like ``torch.cuda``."""
from __future__ import annotations

import re
from collections import OrderedDict

from . import graphs
from . import random as _random
from .backends.opencl import health, runtime
from .backends.opencl.pending import check_pending
from .backends.opencl.runtime import DeviceProperties
from .device import current_index, set_current_index
from .device import device as _device
from .graphs import (  # noqa: F401
    CLGraph,
    CUDAGraph,
    NotCapturable,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)


def is_available() -> bool:
    """True when at least one OpenCL device is present and passed the health check, like
    ``torch.cuda.is_available()``: a device whose compiler is broken does not count."""
    return any(d.usable for d in sorted(runtime.devices(), key=lambda d: d.preference))


def device_count() -> int:
    """How many OpenCL devices are present (``opencl:0`` .. ``opencl:N-1``, usable or not)."""
    return len(runtime.devices())


def _index(device) -> int:
    """The OpenCL index ``device`` names (None: the default device). A device that failed the health check is
    still named: its properties and verdict can be asked for; only computing on it raises."""
    if device is None:
        return current_index()
    if isinstance(device, int):
        return runtime.get(device).index
    d = _device(device)
    if d.type != "opencl":
        raise ValueError(f"Expected an opencl device, but got: {d}")
    return current_index() if d.index is None else runtime.get(d.index).index


def current_device() -> int:
    """The index a bare ``opencl`` means (``set_device``'s choice, else ``CLGRAD_DEVICE``, else the best device)."""
    return current_index()


def set_device(device) -> None:
    """Make ``opencl`` (no index) mean this device: ``clgrad.opencl.set_device(1)``, like ``torch.cuda.set_device``.
    A negative index or None does nothing, as in torch."""
    if device is None or (isinstance(device, int) and device < 0):
        return
    set_current_index(_index(device))


class device:  # noqa: N801 - torch.cuda.device's name
    """``with clgrad.opencl.device(1):`` makes ``opencl`` mean ``opencl:1`` inside the block; None or a negative
    index changes nothing."""

    def __init__(self, device):
        self.idx = None if device is None or (isinstance(device, int) and device < 0) else _index(device)
        self.prev_idx = None

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = set_current_index(self.idx)

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_current_index(self.prev_idx)


def is_initialized() -> bool:
    """Whether any OpenCL device has a context yet (``torch.cuda.is_initialized``)."""
    return any(d._queue is not None for d in runtime.devices())


def get_device_capability(device=None) -> tuple[int, int]:
    """The OpenCL C version the device reports, as (major, minor): (3, 0) for an OpenCL 3.0 device. torch.cuda's
    is the compute capability; programs compare it with a threshold, and this keeps the comparison meaningful."""
    found = re.search(r"OpenCL (\d+)\.(\d+)", runtime.get(_index(device)).cl_device.version)  # 'OpenCL 3.0 PoCL'
    return (int(found[1]), int(found[2])) if found else (1, 0)


# ---- random numbers: one Philox generator drives every device, so these act on clgrad's default generator
def manual_seed(seed) -> None:
    """Seed the default generator, like ``clgrad.manual_seed``: clgrad has one random stream for every device,
    where torch keeps one generator per CUDA device."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Seed the default generator from the OS entropy pool."""
    _random.seed()


seed_all = seed


def initial_seed() -> int:
    return _random.initial_seed()


def get_device_name(device=None) -> str:
    return runtime.get(_index(device)).props.name


def get_device_properties(device=None) -> DeviceProperties:
    """Platform, vendor, compute units, global memory, fp64/fp16 support and limits of a device."""
    return runtime.get(_index(device)).props


def synchronize(device=None) -> None:
    """Wait for all queued work on ``device`` (every device when None)."""
    graphs.refuse("it waits for the device")
    devs = runtime.devices() if device is None else [runtime.get(_index(device))]
    for d in devs:
        if d._queue is not None:
            with runtime.waiting(d):
                d.queue.finish()
    check_pending()  # device-side bounds checks report here at the latest (an IndexError)


def memory_allocated(device=None) -> int:
    """Bytes currently held by tensors on the device (rounded to the allocator's block sizes)."""
    d = runtime.get(_index(device))
    return d._allocator.allocated if d._allocator is not None else 0


def max_memory_allocated(device=None) -> int:
    d = runtime.get(_index(device))
    return d._allocator.peak if d._allocator is not None else 0


def memory_reserved(device=None) -> int:
    d = runtime.get(_index(device))
    return d._allocator.allocated + d._allocator.cached if d._allocator is not None else 0


def max_memory_reserved(device=None) -> int:
    """The most bytes held by tensors at once: clgrad's allocator keeps no separate peak of its cache, so this is
    ``max_memory_allocated`` plus the bytes cached now, a lower bound of torch's figure."""
    d = runtime.get(_index(device))
    return d._allocator.peak + d._allocator.cached if d._allocator is not None else 0


def memory_stats(device=None) -> OrderedDict:
    """The allocator's counters under torch.cuda.memory_stats's key names (the ``all`` pool only)."""
    d = runtime.get(_index(device))
    a = d._allocator
    allocated, peak, cached = (a.allocated, a.peak, a.cached) if a is not None else (0, 0, 0)
    return OrderedDict([
        ("allocated_bytes.all.current", allocated), ("allocated_bytes.all.peak", peak),
        ("reserved_bytes.all.current", allocated + cached), ("reserved_bytes.all.peak", peak + cached),
        ("inactive_split_bytes.all.current", cached),
        ("segment.all.current", a.live_buffers if a is not None else 0),
    ])


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of global memory as clgrad sees them: the device's total less what clgrad's allocator
    holds (OpenCL cannot report memory used by other processes)."""
    d = runtime.get(_index(device))
    total = d.props.total_memory
    return total - memory_reserved(d.index), total


def reset_accumulated_memory_stats(device=None) -> None:
    """Nothing to reset: clgrad's allocator keeps no accumulated counters (only current and peak)."""
    runtime.get(_index(device))


def reset_peak_memory_stats(device=None) -> None:
    d = runtime.get(_index(device))
    if d._allocator is not None:
        d._allocator.peak = d._allocator.allocated


def empty_cache() -> None:
    """Release cached, unused buffers on every device back to the OpenCL runtime."""
    for d in runtime.devices():
        if d._allocator is not None:
            d._allocator.empty_cache()


def devices() -> list[str]:
    """One line per device present: index, name, platform and version, and its health verdict (running the
    checks still needed, side by side), e.g. ``opencl:1 pthread-AMD EPYC [..., PoCL 3.0-rc2 ...]: unusable:
    crashed (SIGABRT) during 'elementwise': LLVM ERROR: ...``."""
    runtime.check_all()
    return [f"{d.describe()}: {d.health}" for d in runtime.devices()]


def health_check(device=None, force: bool = False) -> str:
    """The health verdict of ``device`` (the default device when None): ``'healthy'`` or ``'unusable: why'``.
    ``force=True`` runs the check again instead of reading the cached verdict."""
    d = runtime.get(_index(device))
    if force or d.health is None:
        if health.enabled():
            health.check([d], force=force)
        else:
            d.usable  # noqa: B018 - the in-process build probe
    return str(d.health)
