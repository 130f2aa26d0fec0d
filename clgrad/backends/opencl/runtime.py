"""OpenCL device discovery and per-device state: one context, one in-order queue, one allocator each.

Devices are numbered over all platforms in a stable order (sorted by platform name, platform version,
then the platform's own device order), so ``opencl:N`` names the same device in every process.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import threading
import time
from dataclasses import dataclass

from . import health
from .allocator import CachingAllocator

# CLGRAD_LAUNCH_BLOCKING=1 waits for every kernel as it is launched (CUDA_LAUNCH_BLOCKING's twin), so a kernel
# error or a failed device-side bounds check is raised by the op that caused it
LAUNCH_BLOCKING = os.environ.get("CLGRAD_LAUNCH_BLOCKING", "0") not in ("", "0")

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
        cl = pyopencl()
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
        self.health: health.Verdict | None = None  # the health check's verdict, read or run on first use
        self.last_kernel = ""  # the name of the kernel launched last (named when a wait takes too long)
        self._wait_since = 0.0  # when the host started waiting for this device (0: not waiting)
        self._building_since = 0.0  # when the current kernel build started (0: not building)

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
        cl = pyopencl()
        with _lock:
            if self._queue is not None:
                return
            ctx = cl.Context([self.cl_device])
            self._allocator = CachingAllocator(ctx, self)
            self._context = ctx
            self._queue = self._new_queue(ctx)

    def _new_queue(self, ctx):
        cl = pyopencl()
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
        """Whether the device passed the health check (health.py): clgrad's own kernels, run in a child process,
        built, finished in time and matched numpy. With ``CLGRAD_HEALTH_CHECK=0``, whether it builds a trivial
        kernel in-process; inside the check's own child, trusted (its cases are the test)."""
        if self.health is None:
            if health.enabled():
                health.check([self])
            elif health.in_child():
                self.health = health.Verdict(True, checked="skipped")
            else:
                self.health = self._build_probe()
        return self.health.ok

    def _build_probe(self) -> health.Verdict:
        cl = pyopencl()
        try:
            cl.Program(self.context, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
            return health.Verdict(True, checked="skipped")
        except Exception as exc:  # the compiler itself is broken here; remember why
            return health.Verdict(False, _build_error(exc), checked="skipped")

    @property
    def unusable_reason(self) -> str:
        return "" if self.usable else self.health.reason

    @property
    def driver(self) -> tuple:
        """The driver version as numbers, for preferring the newer of two builds of one implementation
        ('3.1+debian' -> (3, 1, 0); a pre-release '3.0-rc2' -> (3, 0, -1), older than 3.0 itself)."""
        text = self.props.driver_version
        m = re.match(r"\s*(\d+(?:\.\d+)*)(.*)", text)
        if not m:
            return ()
        numbers = tuple(int(n) for n in m.group(1).split("."))
        return numbers + (-1 if re.match(r"[-~.]?(rc|alpha|beta|pre)", m.group(2), re.I) else 0,)

    @property
    def preference(self) -> tuple:
        """Sort key, best first: GPUs, then accelerators, then CPUs, simulators last; within one implementation
        (platform), the newer driver; then the index."""
        return (self.rank, self.props.platform, tuple(-n for n in self.driver), self.index)

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


def pyopencl():
    """The pyopencl module, imported on first use: its import takes ~0.2 s, which programs that stay on the cpu
    never pay (raises ImportError where it is not installed)."""
    import pyopencl

    return pyopencl


def _discover() -> list[CLDevice]:
    try:
        cl = pyopencl()
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
        return ("no OpenCL device is present (install one: Debian's pocl-opencl-icd, or pip install "
                "pocl-binary-distribution)")
    return "devices present: " + "; ".join(d.describe() for d in devs)


def get(index: int) -> CLDevice:
    devs = devices()
    if not isinstance(index, int) or not 0 <= index < len(devs):
        raise RuntimeError(f"invalid OpenCL device index {index}: {listing()}")
    return devs[index]


def check_all(devs: list[CLDevice] | None = None) -> None:
    """Give every device in ``devs`` (all when None) its verdict, running the checks still needed side by side."""
    todo = [d for d in (devices() if devs is None else devs) if d.health is None]
    if todo and health.enabled():
        health.check(todo)
    for d in todo:
        d.usable  # noqa: B018 - fills in the verdict when the check is off


def healthy() -> list[CLDevice]:
    """The usable devices, best first (see ``CLDevice.preference``)."""
    check_all()
    return sorted((d for d in devices() if d.usable), key=lambda d: d.preference)


def require(dev: CLDevice) -> CLDevice:
    """``dev`` if it is usable; else a RuntimeError that quotes why and names the healthy alternatives."""
    if dev.usable:
        return dev
    others = [f"opencl:{d.index} ({d.props.name}, {d.props.platform_version})" for d in healthy()] + ["cpu"]
    raise RuntimeError(
        f"OpenCL device {dev.describe()} failed clgrad's health check: {dev.health.reason}. "
        f"Use a healthy device instead: {', '.join(others)} (device=... or CLGRAD_DEVICE=...); "
        "clgrad.opencl.devices() lists every device with its verdict"
    )


def select(spec: str) -> int:
    """Index of the device named by ``spec``: an index (``2`` or ``opencl:2``), or a case-insensitive
    substring of the platform name, vendor or version, or the device name (``pocl``, ``oclgrind``).

    Among several matches the best healthy one wins; a device named by index, or a name whose every match failed
    the health check, raises the reason."""
    devs = devices()
    spec = spec.strip()
    if spec.lower().startswith("opencl:"):
        spec = spec[len("opencl:"):]
    if spec.isdigit():
        return require(get(int(spec))).index
    needle = spec.lower()
    matches = [
        d for d in sorted(devs, key=lambda d: d.preference)
        if any(needle in s.lower() for s in (d.props.platform, d.props.vendor, d.props.platform_version, d.props.name))
    ]
    if not matches:
        raise RuntimeError(f"CLGRAD_DEVICE={spec!r} matches no OpenCL device; {listing()}")
    check_all(matches)
    # several devices may match ('pocl' names two PoCL builds): the best healthy one
    found = next((d for d in matches if d.usable), None)
    return (found or require(matches[0])).index


def default_index() -> int:
    """``CLGRAD_DEVICE`` if set, else the best healthy device (checking the devices of each rank side by side,
    best rank first, until one passes)."""
    devs = devices()
    if not devs:
        raise RuntimeError(f"OpenCL is not available: {listing()}")
    spec = os.environ.get("CLGRAD_DEVICE", "").strip()
    if spec:
        return select(spec)
    for rank in sorted({d.rank for d in devs}):
        tier = sorted((d for d in devs if d.rank == rank), key=lambda d: d.preference)
        check_all(tier)
        found = next((d for d in tier if d.usable), None)
        if found is not None:
            return found.index
    verdicts = "; ".join(f"{d.describe()}: {d.health.reason}" for d in devs)
    raise RuntimeError(f"no OpenCL device passed clgrad's health check ({verdicts}); use device='cpu'")


SLOW_WAIT = float(os.environ.get("CLGRAD_SLOW_WAIT", "60"))  # seconds of waiting before clgrad says so
BUILD_NOTICE = 1.0  # seconds a program build may take before clgrad says it is building kernels (a cold cache)
_watchdog: list = []


@contextlib.contextmanager
def waiting(dev: CLDevice):
    """Mark the host as waiting for ``dev`` (a finish, a blocking read); a wait longer than ``SLOW_WAIT`` seconds
    is reported once on stderr, naming the device and the last kernel launched, by a watchdog thread started on
    first use. Costs two attribute stores per wait."""
    if not _watchdog:
        _start_watchdog()
    dev._wait_since = time.monotonic()
    try:
        yield
    finally:
        dev._wait_since = 0.0


@contextlib.contextmanager
def building(dev: CLDevice):
    """Mark ``dev``'s compiler as busy: a build that takes over ``BUILD_NOTICE`` seconds (the compiler really
    ran: a cold cache) makes the watchdog say once per process and device that kernels are being built."""
    if not _watchdog:
        _start_watchdog()
    dev._building_since = time.monotonic()
    try:
        yield
    finally:
        dev._building_since = 0.0


def _start_watchdog() -> None:
    with _lock:
        if _watchdog:
            return
        thread = threading.Thread(target=_watch, name="clgrad-watchdog", daemon=True)
        _watchdog.append(thread)
        thread.start()


def _say(text: str) -> None:
    print(f"clgrad: {text}", file=sys.stderr, flush=True)


def _watch() -> None:
    """Wake four times a second and report long waits and cold builds (daemon thread; never raises)."""
    told: set = set()  # (what, device index, since) already reported
    while True:
        time.sleep(0.25)
        now = time.monotonic()
        for dev in list(_devices or ()):
            if not isinstance(dev, CLDevice):  # a stand-in device (tests) carries no timestamps
                continue
            since = dev._wait_since
            if since and now - since >= SLOW_WAIT and ("wait", dev.index, since) not in told:
                told.add(("wait", dev.index, since))
                _say(f"still waiting for {dev.describe()} after {now - since:.0f} s (last kernel launched: "
                     f"{dev.last_kernel or 'none yet'}). A kernel that never finishes means a broken driver: try "
                     "another device (CLGRAD_DEVICE; clgrad.opencl.devices() lists them with their health verdicts)")
            since = dev._building_since
            if since and now - since >= BUILD_NOTICE and ("build", dev.index) not in told:
                told.add(("build", dev.index))
                _say(f"building OpenCL kernels for {dev.describe()} (first run; cached afterwards)")
