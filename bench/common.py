"""Side-by-side timing: each case is measured for clgrad, numpy, PyTorch-CPU (when installed) and sometimes a raw
pyopencl kernel in the same run, and reported as speed ratios, because absolute times on shared machines mean little.

Every script takes the same flags (``Bench``): ``--device D``, ``--quick`` (smaller, fewer repeats), ``--smoke``
(tiny sizes, one repeat, no torch unless ``--torch``: only checks that the script runs), ``--json out.json``,
``--only SUBSTRING`` (run the cases whose name contains it) and ``--repeats N``.

"speed vs X" is X's time over clgrad's for the same work (throughputs when the work differs): 1.00x is parity,
above 1 clgrad is faster, 0.50x means clgrad takes twice as long.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field

THREADS = os.cpu_count() or 1
# numpy's OpenBLAS reads these when it loads (so they only take effect when this module is imported before numpy);
# torch gets OPENBLAS_NUM_THREADS too: ``OPENBLAS_NUM_THREADS=1 python bench/x.py`` compares single-threaded baselines
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, str(THREADS))
# OMP_WAIT_POLICY: see Bench(own_processes=): scripts that run torch next to clgrad in one process make its OpenMP
# threads wait passively; bench/train.py runs each framework in a child process with its default settings instead.

import numpy as np  # noqa: E402

import clgrad  # noqa: E402
from clgrad.backends.opencl import runtime  # noqa: E402

IMPLS = ("clgrad", "numpy", "torch", "ref")
_SET_HERE: set = set()  # environment variables a Bench set for torch in its own process (not the user's)


def child_env() -> dict:
    """The environment for a child process measuring one framework with its defaults: the user's, without what
    an earlier in-process Bench set (``run_all.py --in-process`` runs several scripts in one process)."""
    return {k: v for k, v in os.environ.items() if k not in _SET_HERE}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Target:
    """What the issue asks of a case: a minimum speed against one implementation, or a maximum clgrad time."""

    text: str
    vs: str | None = None  # implementation the speed is compared with
    min_speed: float | None = None
    max_seconds: float | None = None
    value: bool | None = None  # decided by the script (e.g. memory stayed flat)

    def met(self, case: Case) -> bool | None:
        if self.value is not None:
            return self.value
        if self.max_seconds is not None:
            t = case.times.get("clgrad")
            return None if t is None else t <= self.max_seconds
        speed = case.speed(self.vs)
        return None if speed is None else speed >= self.min_speed


def at_least(speed: float, vs: str) -> Target:
    """clgrad must reach ``speed`` times the throughput of ``vs`` (``at_least(0.5, "numpy")``)."""
    return Target(f">={speed:.2f}x {vs}", vs=vs, min_speed=speed)


def at_most_times(factor: float, vs: str) -> Target:
    """clgrad may take at most ``factor`` times as long as ``vs`` (``at_most_times(1.5, "torch")``)."""
    return Target(f"<={factor:g}x {vs} time", vs=vs, min_speed=1.0 / factor)


def at_most(seconds: float) -> Target:
    return Target(f"<={fmt_time(seconds).strip()}", max_seconds=seconds)


@dataclass
class Case:
    """One measured case. ``times`` are seconds per call (median of repeats) per implementation; ``work`` is
    the bytes or flops of one call (``work_of`` overrides it for an implementation that does different work,
    e.g. a copy kernel used as the bandwidth reference)."""

    name: str
    times: dict
    work: float | None = None
    unit: str = ""  # "GB/s", "GFLOP/s" or "" for times only
    target: Target | None = None
    note: str = ""
    work_of: dict = field(default_factory=dict)
    ref_name: str = ""  # what the "ref" implementation is
    samples: dict = field(default_factory=dict)  # every sample per implementation, where they were kept

    def rate(self, impl: str) -> float | None:
        t, w = self.times.get(impl), self.work_of.get(impl, self.work)
        return None if not t or not w else w / t / 1e9

    def speed(self, impl: str | None) -> float | None:
        """clgrad's speed relative to ``impl`` (1 is parity, >1 faster)."""
        if impl not in self.times or "clgrad" not in self.times or not self.times["clgrad"]:
            return None
        if self.work is not None:
            ours, theirs = self.rate("clgrad"), self.rate(impl)
            return None if not ours or not theirs else ours / theirs
        return self.times[impl] / self.times["clgrad"]

    def status(self) -> str:
        if self.target is None:
            return ""
        met = self.target.met(self)
        return f"{self.target.text}: " + ("-" if met is None else "met" if met else "MISSED")

    def to_json(self) -> dict:
        out = asdict(self)
        out["target"] = None if self.target is None else {**asdict(self.target), "met": self.target.met(self)}
        out["speed"] = {impl: self.speed(impl) for impl in self.times if impl != "clgrad"}
        out["rates"] = {impl: self.rate(impl) for impl in self.times} if self.work else {}
        return out


def fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 1:
        return f"{t:.3f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3f} ms"
    return f"{t * 1e6:.2f} us"


def measure(fns: dict, *, warmup: int = 2, repeats: int = 5, min_time: float = 0.1, host_only: bool = False) -> dict:
    """Median seconds per call of each ``fns[name] = (fn, sync or None)``. After ``warmup`` calls each (two, so
    kernels that only a second call needs, like an optimizer's state updates, are built before timing), the
    implementations take turns: ``repeats`` rounds of one sample each, so load from other processes hits them
    alike. A sample is enough calls to fill ``min_time`` and ends with ``sync()`` (queued device work counts), or
    with ``host_only`` the clock stops before that ``sync()``: the host's cost of issuing the calls."""
    counts, samples = {}, {name: [] for name in fns}
    for name, (fn, sync) in fns.items():
        sync = sync or _nothing
        for _ in range(warmup):
            fn()
        sync()
        counts[name] = 1
        if min_time > 0:
            start = time.perf_counter()
            fn()
            sync()
            counts[name] = max(1, min(100_000, int(min_time / max(time.perf_counter() - start, 1e-7))))
    for _ in range(repeats):
        for name, (fn, sync) in fns.items():
            sync, n = sync or _nothing, counts[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if host_only:
                samples[name].append((time.perf_counter() - start) / n)
            sync()
            if not host_only:
                samples[name].append((time.perf_counter() - start) / n)
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()}


def _nothing() -> None:
    pass


def default_device() -> str:
    return f"opencl:{runtime.default_index()}" if clgrad.opencl.is_available() else "cpu"


def resolve_device(device: str | None) -> str:
    """``opencl:N`` or ``cpu``: a bare ``opencl`` (as ``clgrad.device("opencl")`` means) is the default OpenCL
    device, ``opencl:N`` must exist."""
    if device is None:
        return default_device()
    dev = clgrad.device(device)
    if dev.type != "opencl":
        return dev.type
    index = runtime.default_index() if dev.index is None else dev.index
    runtime.get(index)  # an unknown index fails here, with the devices there are
    return f"opencl:{index}"


def describe_device(device: str) -> str:
    device = resolve_device(device)
    if device.startswith("opencl"):
        return runtime.get(int(device.split(":")[1])).describe()
    return "cpu (clgrad's numpy backend)"


def load() -> float:
    """The 1-minute load average: above the core count, every number in the run is suspect."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


class Bench:
    """One script's run: its flags, the implementations available, the cases measured, the table and JSON."""

    def __init__(self, doc: str, script: str, argv=None, add_args=None, own_processes: bool = False):
        ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
        ap.add_argument("--device", default=None, help="clgrad device (default: the most capable OpenCL one)")
        ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
        ap.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat: only checks the script runs")
        ap.add_argument("--torch", action=argparse.BooleanOptionalAction, default=None,
                        help="compare with PyTorch-CPU (default: when installed; off in --smoke)")
        ap.add_argument("--json", default=None, help="write the results to this file")
        ap.add_argument("--only", default=None, help="run only the cases whose name contains this")
        ap.add_argument("--repeats", type=int, default=None)
        ap.add_argument("--profile", action="store_true", help="also print clgrad.profiler's table for each case")
        if add_args is not None:
            add_args(ap)
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.args = args = ap.parse_args(self.argv)
        self.device = resolve_device(args.device)
        self.smoke, self.quick = args.smoke, args.quick or args.smoke
        self.repeats = args.repeats or (1 if args.smoke else 3 if args.quick else 5)
        self.min_time = 0.0 if args.smoke else 0.03 if args.quick else 0.1
        self.own_processes = own_processes
        if not own_processes:
            # torch in clgrad's process: OpenMP threads spinning while they wait take the cores from PoCL's (Adam on
            # 1M params: 108 ms spinning, 7.6 ms passive, under load 6 on 2 cores); passive waiting slows torch on
            # an idle machine though (MNIST step 6.1 -> 9.0 ms), so the training steps measure each framework in
            # its own process with its defaults (bench/_child.py). Set before torch loads OpenMP.
            if "OMP_WAIT_POLICY" not in os.environ:
                os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
                _SET_HERE.add("OMP_WAIT_POLICY")
        self.torch = _torch() if (args.torch if args.torch is not None else not args.smoke) else None
        self.cases: list[Case] = []
        self.load_before = load()
        self.script = os.path.relpath(os.path.abspath(script), ROOT)
        print(self.header(), flush=True)

    @property
    def on_cl(self) -> bool:
        return self.device.startswith("opencl")

    def pick(self, smoke, quick, full):
        return smoke if self.smoke else quick if self.quick else full

    def wants(self, name: str) -> bool:
        return self.args.only is None or self.args.only in name

    def sync(self) -> None:
        if self.on_cl:
            clgrad.opencl.synchronize(self.device)

    def measure(self, clgrad=None, numpy=None, torch=None, ref=None, ref_sync=None, warmup: int = 2,
                host_only: bool = False) -> dict:
        """Times per call of each given implementation, measured in turns in this run. clgrad's samples end
        with a device synchronize, ``ref``'s (a raw pyopencl kernel) with ``ref_sync``."""
        fns = {"clgrad": (clgrad, self.sync), "numpy": (numpy, None), "torch": (torch, None), "ref": (ref, ref_sync)}
        if self.torch is None:
            del fns["torch"]
        fns = {k: v for k, v in fns.items() if v[0] is not None}
        times = measure(fns, warmup=warmup, repeats=self.repeats, min_time=self.min_time, host_only=host_only)
        if self.args.profile and clgrad is not None:
            self.print_profile(clgrad)
        return times

    def print_profile(self, fn) -> None:
        """One more call of ``fn`` under clgrad.profiler: which kernels it launches and their device time."""
        from clgrad.profiler import profile

        with profile() as prof:
            fn()
        print(prof.key_averages().table(sort_by="device_time_total", row_limit=15))

    def add(self, name: str, times: dict, **kw) -> Case:
        if self.smoke:
            kw["target"] = None  # tiny sizes say nothing about the targets
        case = Case(name, times, **kw)
        self.cases.append(case)
        print(self.row(case), flush=True)
        return case

    def header(self) -> str:
        t = self.torch
        omp = ("each framework in its own processes with its default settings" if self.own_processes
               else f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
        lines = [f"device: {describe_device(self.device)}",
                 f"host: {cpu_name()}, {THREADS} threads; numpy {np.__version__} "
                 f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, {omp}); "
                 f"torch: {f'{t.__version__} ({t.get_num_threads()} threads)' if t else 'not compared'}; "
                 f"load average {load():.1f}",
                 "speed = other's time / clgrad's (work-normalized); >1.00x: clgrad faster",
                 f"{'case':<48}{'clgrad':>14}{'numpy':>14}{'torch':>14}{'ref':>14}"
                 f"{'vs numpy':>10}{'vs torch':>10}{'vs ref':>9}  target"]
        return "\n".join(lines)

    def row(self, case: Case) -> str:
        name = case.name + (f" [{case.unit}]" if case.unit else "")
        cells = []
        for impl in IMPLS:
            t = case.times.get(impl)
            cell = f"{case.rate(impl):.1f}" if t and case.unit else fmt_time(t)  # throughput when there's a unit
            cells.append(f"{cell:>14}")
        speeds = [case.speed(impl) for impl in ("numpy", "torch", "ref")]
        ratio = "".join(f"{'-' if s is None else f'{s:.2f}x':>{w}}" for s, w in zip(speeds, (10, 10, 9)))
        return f"{name:<48}" + "".join(cells) + ratio + "  " + "; ".join(filter(None, [case.status(), case.note]))

    def finish(self) -> list[Case]:
        """Print the table's footer and write the JSON (``--json``)."""
        missed = [c.name for c in self.cases if c.target is not None and c.target.met(c) is False]
        print(f"{len(self.cases)} cases; targets missed: {len(missed)}" + (f" ({', '.join(missed)})" if missed else ""))
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(self.to_json(), f, indent=1)
        return self.cases

    def to_json(self) -> dict:
        t = self.torch
        return {
            "script": self.script, "command": "python " + " ".join([self.script, *map(shlex.quote, self._argv_public())]),
            "device": self.device, "device_name": describe_device(self.device), "host": cpu_name(),
            "threads": int(os.environ["OPENBLAS_NUM_THREADS"]), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "own_processes": self.own_processes,
            "numpy": np.__version__, "torch": t.__version__ if t else None,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "load_before": self.load_before, "load_after": load(),
            "smoke": self.smoke, "quick": self.quick, "cases": [c.to_json() for c in self.cases],
        }

    def _argv_public(self) -> list[str]:
        """The flags that reproduce these numbers (without where the JSON went)."""
        out, skip = [], False
        for a in self.argv:
            if skip:
                skip = False
            elif a == "--json":
                skip = True
            elif not a.startswith("--json="):
                out.append(a)
        if "--device" not in out and not any(a.startswith("--device=") for a in out):
            out += ["--device", self.device]
        return out


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))  # the same threads as numpy's BLAS
    return torch


class RawCL:
    """Raw pyopencl kernels on clgrad's own context and queue: the hardware reference the issue measures
    clgrad against (one work-item per element, no framework in between)."""

    def __init__(self, device: str):
        import pyopencl as cl

        self.cl = cl
        self.dev = runtime.get(int(device.split(":")[1]))
        self.queue = self.dev.queue

    def kernel(self, source: str, name: str, scalar_types=None):
        prg = self.cl.Program(self.dev.context, source).build()
        k = self.cl.Kernel(prg, name)
        if scalar_types is not None:
            k.set_scalar_arg_dtypes(scalar_types)
        return k

    def buffer(self, array: np.ndarray):
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.dev.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=array)

    def empty(self, nbytes: int):
        return self.cl.Buffer(self.dev.context, self.cl.mem_flags.READ_WRITE, nbytes)

    def sync(self) -> None:
        self.queue.finish()


def count(n: int) -> str:
    """16M, 4K, 10K or 100: an element count for case names (binary or decimal prefix, whichever is exact)."""
    for unit, prefix in ((2**20, "M"), (10**6, "M"), (2**10, "K"), (10**3, "K")):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{prefix}"
    return str(n)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def rand(shape, seed: int = 0, dtype=np.float32) -> np.ndarray:
    return rng(seed).standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)
