"""``clgrad.opencl``: device queries and memory statistics, shaped like ``torch.cuda``."""
from __future__ import annotations

from .backends.opencl import health, runtime
from .backends.opencl.pending import check_pending
from .backends.opencl.runtime import DeviceProperties
from .device import device as _device


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
        return runtime.default_index()
    if isinstance(device, int):
        return runtime.get(device).index
    d = _device(device)
    if d.type != "opencl":
        raise ValueError(f"Expected an opencl device, but got: {d}")
    return runtime.default_index() if d.index is None else runtime.get(d.index).index


def current_device() -> int:
    return runtime.default_index()


def get_device_name(device=None) -> str:
    return runtime.get(_index(device)).props.name


def get_device_properties(device=None) -> DeviceProperties:
    """Platform, vendor, compute units, global memory, fp64/fp16 support and limits of a device."""
    return runtime.get(_index(device)).props


def synchronize(device=None) -> None:
    """Wait for all queued work on ``device`` (every device when None)."""
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
