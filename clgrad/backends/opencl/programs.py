"""The one kernel cache: render a Mako template, build it once per device, keep the kernel object.

Keys are (template, kernel name, signature, argument types): the signature is the render parameters minus what the
op tables supply at render (``render_params``: an elementwise bundle's kernels, a reduction's C expressions). The
rendered source plus build options plus the device identity also key an on-disk binary cache, so the next process
skips the compiler.
``CLGRAD_NO_CACHE=1`` turns the disk cache off; ``clear()`` empties the in-memory caches.

A kernel listed in a program group (groups.py) is built together with the rest of its group as one program, where
that saves compiler time (PoCL; ``CLGRAD_PROGRAM_GROUPS=0`` or ``1`` turns groups off or on for every device); if
the group's program fails to build, each of its kernels is built alone.

While ``clgrad.profiler`` is recording, ``get_kernel`` returns the kernel wrapped so that each launch reports its
event; code that keeps kernels or queues in its own caches registers ``add_cache_listener`` so it drops them when
that switches (and on ``clear()``).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from mako.lookup import TemplateLookup

from ... import dtypes as D
from ..._version import __version__
from ...registry.elementwise import OPS
from ...registry.reductions import REDUCTIONS
from .. import add_cache_listener, invalidate  # noqa: F401 (re-exported: the OpenCL code registers here)
from . import capture, groups, runtime

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"
_lookup = TemplateLookup(directories=[str(KERNEL_DIR)], strict_undefined=True, input_encoding="utf-8")
# ``-w``: compiler warnings are not user-facing (PoCL's clang printed "127 warnings generated." straight to
# stderr). ``CLGRAD_BUILD_LOG=1`` keeps them and prints every program's build log; a failed build's error always
# carries the log.
BUILD_LOG = os.environ.get("CLGRAD_BUILD_LOG", "0") not in ("", "0")
BUILD_OPTIONS = "" if BUILD_LOG else "-w"
stats = {"builds": 0, "disk_hits": 0, "evicted": 0}
# The in-memory caches are bounded (least recently used entries go first), so a process that keeps meeting new
# shapes or dtypes does not grow without end: kernels per device, programs, and each launcher cache (launch.py).
MAX_KERNELS = 4096
MAX_PROGRAMS = 2048
MAX_LAUNCHERS = 4096


class LRU(dict):
    """A dict of at most ``cap`` entries: storing past the cap drops the least recently used (``get`` or stored)
    entry. Thread-safe for ``get`` and item assignment (a lock of well under a microsecond)."""

    __slots__ = ("cap", "lock")

    def __init__(self, cap: int):
        super().__init__()
        self.cap, self.lock = cap, threading.Lock()

    def get(self, key, default=None):
        with self.lock:
            value = dict.pop(self, key, _MISSING)
            if value is _MISSING:
                return default
            dict.__setitem__(self, key, value)  # now the most recently used
            return value

    def __setitem__(self, key, value) -> None:
        with self.lock:
            dict.pop(self, key, None)
            dict.__setitem__(self, key, value)
            while len(self) > self.cap:
                dict.__delitem__(self, next(iter(self)))
                stats["evicted"] += 1


_MISSING = object()
# programs by (device index, source digest): a template that renders several kernels into one program (a
# bundle) is built once, and each of its kernels is then looked up by name
_programs: LRU = LRU(MAX_PROGRAMS)
_recorder = None  # the active profiler's record(name, dev, event, host_start_ns, host_end_ns), or None
tracing = None  # while clgrad.compile traces a call: its trace (counts every launch and transfer)
# built groups by (device index, group name): member key -> (program, kernel name in it); members missing from it
# (their program failed to build, or they did not render) are built alone
_groups_built: dict = {}
_recording: list | None = None  # while not None, the (template, name, params) of every kernel built are appended


def render(template: str, **params) -> str:
    """Render ``kernels/<template>.cl.mako`` with every variable passed explicitly."""
    return _lookup.get_template(f"{template}.cl.mako").render(**params)


def render_params(template: str, params: dict) -> dict:
    """The parameters ``template`` renders with, from those a kernel is cached and recorded under (its
    signature). An elementwise signature names its op, the compute dtype and whether to build the op's whole
    bundle (``op``, ``op_dtype``, ``bundle``): the (kernel, C expression) list comes from the op table here. A
    reduction's names its op: its C expressions come from the reduction table. So changing or adding an op
    never leaves a recorded program group (group_table.py) stale."""
    if template == "elementwise" and "op" in params:
        params = dict(params)
        op, dt, bundle = params.pop("op"), D.as_dtype(params.pop("op_dtype")), params.pop("bundle")
        integral = dt.kind != "f"
        ops = bundle_of(op, dt) if bundle else (op,)
        params["kernels"] = tuple((f"{o}_{dt.compute_ctype}", OPS[o].c_expr(integral, dt is D.bool)) for o in ops)
        # integer division kernels that flag a zero divisor in the error buffer (pending.py): two more arguments
        params["checked"] = tuple(f"{o}_{dt.compute_ctype}" for o in ops if OPS[o].int_div_check and dt.kind in "iu")
    elif template == "elementwise":  # a fused kernel (clgrad.compile): no checks
        params = dict(params, checked=())
    elif template == "reduce":
        params = dict(params)
        params.update(REDUCTIONS[params.pop("op")].c_exprs(params["acc"], params["vec"]))
    return params


def bundle_of(op: str, compute: D.dtype) -> tuple:
    """The elementwise ops built into one program with ``op`` (a bundle): those taking operands the same way
    (arity, bool operands, bool result) that PyTorch implements for the compute dtype. A PoCL build costs about
    the same for 1 kernel or 40, and code is generated per kernel on first launch, so one build serves all."""
    key = (op, compute)
    ops = _BUNDLES.get(key)
    if ops is None:
        e = OPS[op]
        ops = _BUNDLES[key] = (op,) if not _bundled(op, e) else tuple(o for o, f in OPS.items() if o == op or (
            _bundled(o, f) and f.arity == e.arity and f.bool_args == e.bool_args and f.predicate == e.predicate
            and compute.kind in f.allow and (f.kind != "float" or compute.kind == "f")))
    return ops


_BUNDLES: dict = {}


def _bundled(name: str, entry) -> bool:
    """Whether an op joins bundles (its record's ``bundle``). The recurrent cells' ops (``rnn_*``, ``lstm_*``) serve
    nn.RNN/LSTM only, so compiling them into every bundle of their arity would cost every other op's first build."""
    return entry.bundle


def get_kernel(dev: runtime.CLDevice, template: str, name: str, arg_dtypes: tuple, params: dict):
    """The kernel ``name`` from ``template`` rendered with ``params``, built for ``dev`` once.

    ``arg_dtypes`` are pyopencl's scalar argument types (None for buffers), set once so that
    calls skip argument inspection.
    """
    # the argument types are part of the key: a cached kernel carries the scalar types set on it
    items = tuple(sorted(params.items()))
    key = (template, name, items, tuple(arg_dtypes))
    if type(dev.kernels) is not LRU:  # the device starts with a plain dict (runtime.py)
        dev.kernels = LRU(MAX_KERNELS)
    kernel = dev.kernels.get(key)
    if kernel is None:
        import pyopencl as cl

        if _recording is not None:
            _recording.append((template, name, items))
        program, real_name = _grouped(dev, (template, name, items))
        if program is None:
            program, real_name = _build(dev, render(template, name=name, **render_params(template, params)), name), name
        kernel = cl.Kernel(program, real_name)
        kernel.set_scalar_arg_dtypes(list(arg_dtypes))
        kernel = dev.kernels[key] = LockedKernel(kernel, name, dev, tuple(arg_dtypes), template)
    return kernel if _recorder is None else RecordedKernel(kernel, name, dev)


class LockedKernel:
    """A kernel whose launches are serialized. pyopencl sets a launch's arguments on the shared ``Kernel`` object
    and then enqueues it (``clSetKernelArg`` is the one OpenCL call that is not thread-safe), so two threads
    launching the same kernel at once (DataLoader workers, a user's threads) could enqueue each other's
    arguments. An uncontended lock costs well under a microsecond. Each launch notes its name on the device (a
    wait that takes too long names it); with ``CLGRAD_LAUNCH_BLOCKING=1`` each launch is waited for."""

    __slots__ = ("kernel", "lock", "name", "dev", "arg_dtypes", "template")

    def __init__(self, kernel, name: str, dev: runtime.CLDevice, arg_dtypes: tuple = (), template: str = ""):
        self.kernel, self.lock, self.name, self.dev = kernel, threading.Lock(), name, dev
        self.arg_dtypes, self.template = arg_dtypes, template  # what a graph capture clones the kernel with

    def __call__(self, queue, *args, **kwargs):
        if capture.active is not None:  # a graph capture (capture.py): record the launch instead of running it
            rec = capture.current()
            if rec is not None:
                return rec.launch(self, queue, args[0], args[1], args[2:])
        if tracing is not None:
            tracing.launches += 1
        with self.lock:
            event = self.kernel(queue, *args, **kwargs)
        self.dev.last_kernel = self.name
        if runtime.LAUNCH_BLOCKING:
            with runtime.waiting(self.dev):
                queue.finish()
        return event

    def __getattr__(self, attr):
        return getattr(self.kernel, attr)


class Bound:
    """A private clone of a ``LockedKernel``'s kernel for one launch layout: ``args`` (None where a call fills the
    argument in) are set on it once, and ``enqueue(queue, kernel, gsize, lsize)`` launches whatever is set. Its own lock
    serializes set-then-enqueue, as LockedKernel's does. Only for eager launches: see ``direct_off``."""

    __slots__ = ("kernel", "lock", "enqueue")

    def __init__(self, locked: LockedKernel, args: list):
        import pyopencl as cl

        self.kernel, self.lock = locked.kernel.clone(), threading.Lock()
        for i, value in enumerate(args):
            if value is not None:
                self.kernel.set_arg(i, value)
        self.enqueue = cl.enqueue_nd_range_kernel


def direct_off() -> bool:
    """Whether launches must go through ``LockedKernel.__call__`` (a graph capture, a ``clgrad.compile`` trace or
    the profiler is watching), rather than a ``Bound`` kernel's direct enqueue."""
    return capture.active is not None or tracing is not None or _recorder is not None


class RecordedKernel:
    """A kernel that reports each launch to the profiler: the same call, plus its event and host time."""

    __slots__ = ("kernel", "name", "dev")

    def __init__(self, kernel, name: str, dev: runtime.CLDevice):
        self.kernel, self.name, self.dev = kernel, name, dev

    def __call__(self, queue, *args, **kwargs):
        start = time.perf_counter_ns()
        event = self.kernel(queue, *args, **kwargs)
        record = _recorder  # read at call time: a wrapper kept past the profile records nothing
        if record is not None:
            record(self.name, self.dev, event, start, time.perf_counter_ns())
        return event

    def __getattr__(self, attr):
        return getattr(self.kernel, attr)


def set_recorder(record) -> None:
    """Start (a callable) or stop (None) reporting launches; caches holding unwrapped kernels are dropped."""
    global _recorder
    _recorder = record
    invalidate()


def cache_stats() -> dict:
    """Builds so far, entries evicted from the bounded caches, and their sizes now: kernels per device index and
    programs (all devices)."""
    return dict(stats, programs=len(_programs), kernels={d.index: len(d.kernels) for d in runtime.devices()})


def clear() -> None:
    """Forget every built kernel on every device (the disk cache stays)."""
    for dev in runtime.devices():
        dev.kernels.clear()
    _programs.clear()
    _groups_built.clear()
    invalidate()


def _grouped(dev: runtime.CLDevice, member: tuple) -> tuple:
    """(program, kernel name) of ``member`` = (template, name, sorted params) from its group's program, built on
    first use; (None, None) when it is in no group, groups are off on ``dev``, or its group program failed."""
    listed = groups.groups_of(member)
    if not listed or not _groups_on(dev):
        return None, None
    # a kernel in several groups comes from one already built, else from the smallest: the RNN's first step asks
    # for the shared matmul first and built the MNIST group of 30 kernels for it (0.5 s of its 3 s cold start)
    group = next((g for g in listed if (dev.index, g) in _groups_built), None) or \
        min(listed, key=lambda g: len(groups.members(g)))
    built = _groups_built.get((dev.index, group))
    if built is None:
        built = _groups_built[(dev.index, group)] = build_group(dev, groups.members(group), group)
    return built.get(member, (None, None))


def build_group(dev: runtime.CLDevice, members, label: str = "group") -> dict:
    """Build ``members`` ((template, name, sorted params) each) as few programs as their pragmas allow; returns
    member -> (program, its kernel's name there) for the members built. A member that fails to render (a stale
    table entry) or whose program fails to compile is left out, so the caller builds it alone."""
    sources: dict = {}  # source -> members rendering it (an elementwise bundle is one source for all its ops)
    for member in members:
        template, name, items = member
        try:
            source = render(template, name=name, **render_params(template, dict(items)))
        except Exception:  # a parameter the template no longer takes: the entry is stale, not an error
            continue
        sources.setdefault(source, []).append(member)
    by_pragmas: dict = {}
    for source in sources:
        by_pragmas.setdefault(groups.pragmas(source), []).append(source)
    built = {}
    for part in by_pragmas.values():
        combined, renames = groups.combine(part)
        try:
            program = _build(dev, combined, f"{label} ({len(part)} sources)")
        except RuntimeError:  # one bad member must not take the others down: they are then built alone
            continue
        for source, rename in zip(part, renames):
            for member in sources[source]:
                if member[1] in rename:
                    built[member] = (program, rename[member[1]])
    return built


def _groups_on(dev: runtime.CLDevice) -> bool:
    """Groups pay where a program's build costs much more than its kernels' share: PoCL, which generates code
    per kernel on first launch. A device that compiles every kernel at build time would compile unused ones."""
    flag = os.environ.get("CLGRAD_PROGRAM_GROUPS", "")
    if flag in ("0", "1"):
        return flag == "1"
    return dev.props.platform == "Portable Computing Language"


def cache_dir() -> Path | None:
    if os.environ.get("CLGRAD_NO_CACHE", "") not in ("", "0"):
        return None
    root = os.environ.get("CLGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clgrad"
    )
    return Path(root) / "kernels"


def _build(dev: runtime.CLDevice, source: str, name: str):

    p = dev.props
    ident = "\0".join([source, BUILD_OPTIONS, p.platform, p.platform_version, p.name, p.driver_version, __version__])
    digest = hashlib.sha256(ident.encode()).hexdigest()
    program = _programs.get((dev.index, digest))
    if program is None:
        program = _programs[(dev.index, digest)] = _build_program(dev, source, name, digest)
    return program


def _build_program(dev: runtime.CLDevice, source: str, name: str, digest: str):
    import pyopencl as cl

    folder = cache_dir() if not _caches_itself(dev) else None
    path = folder / f"{digest}.bin" if folder is not None else None
    binary = _load(path) if path is not None else None
    if binary is not None:
        try:
            program = cl.Program(dev.context, [dev.cl_device], [binary]).build(BUILD_OPTIONS)
            stats["disk_hits"] += 1
            return program
        except Exception:  # a binary the driver refuses (whole, yet stale or foreign): rebuild and overwrite it
            pass
    try:
        with warnings.catch_warnings(), runtime.building(dev):
            # compiler remarks (e.g. PoCL's about constant operands in generated code) are not user-facing
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(dev.context, source).build(BUILD_OPTIONS)
        if BUILD_LOG:
            log = program.get_build_info(dev.cl_device, cl.program_build_info.LOG).strip()
            print(f"clgrad: build log of {name} on {dev.describe()}:\n{log or '(empty)'}", file=sys.stderr)
    except cl.RuntimeError as exc:
        raise RuntimeError(
            f"clgrad internal error: building kernel {name} failed on {dev.describe()}:\n{exc}\n--- source ---\n{source}"
        ) from None
    stats["builds"] += 1
    if path is not None:
        _store(path, program)
    return program


def _caches_itself(dev: runtime.CLDevice) -> bool:
    """PoCL keeps its own cache of compiled programs (POCL_KERNEL_CACHE, on by default). Asking it for a
    program's binary makes it generate code for every kernel up front, which more than doubled a cold MNIST
    step (55 s vs 36 s for its 33 programs, measured on PoCL 3.1), while its own cache already brings a warm
    start to about 1 s; so on PoCL clgrad keeps no binaries of its own (``CLGRAD_CACHE_BINARIES=1`` forces them)."""
    if os.environ.get("CLGRAD_CACHE_BINARIES", "") not in ("", "0"):
        return False
    return dev.props.platform == "Portable Computing Language" and os.environ.get("POCL_KERNEL_CACHE", "1") != "0"


# A cached binary is MAGIC, its length and its SHA-256, then the bytes. Drivers trust what they are given: a
# truncated or flipped PoCL binary trips an assertion (SIGABRT) and rusticl panics, both uncatchable, so nothing
# reaches the driver unless it is whole.
MAGIC = b"clgrad-binary-1\n"


def _load(path: Path) -> bytes | None:
    """The binary stored at ``path`` if it is whole (length and checksum match), else None: a miss."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 8 + 32
    if len(data) < head or not data.startswith(MAGIC):
        return None
    size = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    binary = data[head:]
    if size != len(binary) or hashlib.sha256(binary).digest() != data[len(MAGIC) + 8:head]:
        return None
    return binary


def _store(path: Path, program) -> None:
    import pyopencl as cl

    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
        if not binary:
            return
        binary = bytes(binary)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + len(binary).to_bytes(8, "little") + hashlib.sha256(binary).digest() + binary)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except Exception:  # the disk cache is an optimisation; never fail an op because of it
        pass
