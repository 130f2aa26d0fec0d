"""OpenCL device discovery and per-device state: one context, one in-order queue, one allocator each.

Devices are numbered over all platforms in a stable order (sorted by platform name, platform version,
then the platform's own device order), so ``opencl:N`` names the same device in every process.
"""
from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass

from .allocator import CachingAllocator

_lock = threading.Lock()
_devices: list[CLDevice] | None = None


@dataclass(frozen=True)
class DeviceProperties:
    """What ``clgrad.opencl.get_device_properties`` reports."""

    name: str
    platform: str
    platform_version: str
    vendor: str
    driver_version: str
    type: str
    compute_units: int
    total_memory: int
    max_alloc: int
    max_work_group_size: int
    local_memory: int
    fp64: bool
    fp16: bool
    is_simulator: bool


class CLDevice:
    """One OpenCL device. The context, queue and allocator are created on first use."""

    def __init__(self, index: int, cl_device):
        import pyopencl as cl

        self.index = index
        self.cl_device = cl_device
        plat = cl_device.platform
        ext = cl_device.extensions.split()
        dtype_name = cl.device_type.to_string(cl_device.type)
        simulator = "oclgrind" in (plat.name + cl_device.name).lower()
        self.props = DeviceProperties(
            name=cl_device.name.strip(),
            platform=plat.name.strip(),
            platform_version=plat.version.strip(),
            vendor=plat.vendor.strip(),
            driver_version=cl_device.driver_version.strip(),
            type="SIMULATOR" if simulator else dtype_name,
            compute_units=cl_device.max_compute_units,
            total_memory=cl_device.global_mem_size,
            max_alloc=cl_device.max_mem_alloc_size,
            max_work_group_size=cl_device.max_work_group_size,
            local_memory=cl_device.local_mem_size,
            fp64="cl_khr_fp64" in ext,
            fp16="cl_khr_fp16" in ext,
            is_simulator=simulator,
        )
        self._context = None
        self._queue = None
        self._allocator = None
        self._profiling = False  # whether the queue records event timestamps (only while profiling)
        self.kernels: dict = {}  # in-memory kernel cache, see programs.py
        self._probe: str | None = None

    @property
    def context(self):
        if self._context is None:
            self._init()
        return self._context

    @property
    def queue(self):
        if self._queue is None:
            self._init()
        return self._queue

    @property
    def allocator(self) -> CachingAllocator:
        if self._allocator is None:
            self._init()
        return self._allocator

    def _init(self) -> None:
        import pyopencl as cl

        with _lock:
            if self._queue is not None:
                return
            ctx = cl.Context([self.cl_device])
            self._allocator = CachingAllocator(ctx, self)
            self._context = ctx
            self._queue = self._new_queue(ctx)

    def _new_queue(self, ctx):
        import pyopencl as cl

        props = cl.command_queue_properties.PROFILING_ENABLE if self._profiling else 0
        return cl.CommandQueue(ctx, self.cl_device, properties=props)

    def set_profiling(self, enabled: bool) -> bool:
        """Give the device a queue whose events carry timestamps, or a plain one again (timestamps cost a little
        per launch). The old queue is drained first so commands stay in order; whoever cached the old queue must
        drop it (``programs.add_cache_listener``). Returns whether the queue was replaced."""
        with _lock:
            if enabled == self._profiling:
                return False
            self._profiling = enabled
            if self._queue is None:
                return False
            self._queue.finish()
            self._queue = self._new_queue(self._context)
            return True

    @property
    def usable(self) -> bool:
        """Whether the device can build a trivial kernel (some PoCL builds can't on unknown CPUs)."""
        if self._probe is None:
            import pyopencl as cl

            try:
                cl.Program(self.context, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
                self._probe = ""
            except Exception as exc:  # the compiler itself is broken here; remember why
                self._probe = _build_error(exc)
        return self._probe == ""

    @property
    def unusable_reason(self) -> str:
        return "" if self.usable else self._probe

    def describe(self) -> str:
        p = self.props
        return f"opencl:{self.index} {p.name} [{p.platform}, {p.platform_version}]"

    def __repr__(self) -> str:
        return f"<CLDevice {self.describe()}>"

    @property
    def rank(self) -> int:
        """Lower is more capable: GPUs, then accelerators, then CPUs, simulators last."""
        if self.props.is_simulator:
            return 3
        t = self.props.type
        return 0 if "GPU" in t else 1 if "ACCELERATOR" in t else 2


def _build_error(exc: Exception) -> str:
    """The telling line of a failed build ("error: unknown target CPU 'generic'"), not pyopencl's banner."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return next((ln for ln in lines if ln.lower().startswith("error")), lines[0] if lines else type(exc).__name__)


@atexit.register
def _shutdown() -> None:
    """Drain every queue and release cached buffers and kernels while the contexts are surely alive, so
    interpreter teardown never races the OpenCL runtime's own cleanup."""
    for dev in _devices or ():
        try:
            if dev._queue is not None:
                dev._queue.finish()
            dev.kernels.clear()
            if dev._allocator is not None:
                dev._allocator.empty_cache()
        except Exception:  # best effort at exit: never turn a clean exit into an error
            pass


def devices() -> list[CLDevice]:
    """Every OpenCL device of every platform, in the stable order. Empty when OpenCL is unusable."""
    global _devices
    if _devices is None:
        with _lock:
            if _devices is None:
                _devices = _discover()
    return _devices


def _discover() -> list[CLDevice]:
    try:
        import pyopencl as cl

        platforms = cl.get_platforms()
    except Exception:  # no ICD loader, no platform: OpenCL is simply not available
        return []
    found = []
    for plat in sorted(platforms, key=lambda p: (p.name, p.version, p.vendor)):
        try:
            found.extend(plat.get_devices())
        except Exception:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
    return [CLDevice(i, d) for i, d in enumerate(found)]


def listing() -> str:
    devs = devices()
    if not devs:
        return "no OpenCL device is present (install one, e.g. pip install pocl-binary-distribution)"
    return "devices present: " + "; ".join(d.describe() for d in devs)


def get(index: int) -> CLDevice:
    devs = devices()
    if not isinstance(index, int) or not 0 <= index < len(devs):
        raise RuntimeError(f"invalid OpenCL device index {index}: {listing()}")
    return devs[index]


def select(spec: str) -> int:
    """Index of the device named by ``spec``: an index (``2`` or ``opencl:2``), or a case-insensitive
    substring of the platform name, vendor or version, or the device name (``pocl``, ``oclgrind``).

    Among several matches the most capable one whose compiler works wins."""
    devs = devices()
    spec = spec.strip()
    if spec.lower().startswith("opencl:"):
        spec = spec[len("opencl:"):]
    if spec.isdigit():
        return get(int(spec)).index
    needle = spec.lower()
    matches = [
        d for d in sorted(devs, key=lambda d: (d.rank, d.index))
        if any(needle in s.lower() for s in (d.props.platform, d.props.vendor, d.props.platform_version, d.props.name))
    ]
    if matches:
        # several devices may match ('pocl' names two PoCL builds): take the first whose compiler works
        return next((d.index for d in matches if d.usable), matches[0].index)
    raise RuntimeError(f"CLGRAD_DEVICE={spec!r} matches no OpenCL device; {listing()}")


def default_index() -> int:
    """``CLGRAD_DEVICE`` if set, else the most capable device."""
    devs = devices()
    if not devs:
        raise RuntimeError(f"OpenCL is not available: {listing()}")
    spec = os.environ.get("CLGRAD_DEVICE", "").strip()
    if spec:
        return select(spec)
    ranked = sorted(devs, key=lambda d: (d.rank, d.index))
    return next((d.index for d in ranked if d.usable), ranked[0].index)
