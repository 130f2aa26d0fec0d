"""Per-device GEMM tile tuning: opt-in measurement, results cached on disk, the tables' defaults when untuned.

``autotune(device)`` times every candidate tiling of each tiling table that applies to the device (the tables in
``matmul.TILINGS`` plus a few variants) on a representative product, checks each candidate's result against numpy,
and keeps the fastest. Results are stored in ``<CLGRAD_CACHE_DIR>/tuning.json``, keyed like the kernel cache by
platform, device, driver and clgrad version, so they apply to that device only and a driver or clgrad upgrade
starts untuned. Tuning builds one kernel per candidate (a few seconds each on PoCL), which is why it is opt-in:

    python -c "import clgrad.backends.opencl.autotune as a; print(a.autotune('opencl'))"
"""
from __future__ import annotations

import json
import os
import tempfile
import time

import numpy as np

from ... import backends
from ... import dtypes as D
from ..._version import __version__
from ...device import device as as_device
from ..common import Desc
from . import programs, runtime
from .tilings import TILINGS, Tiling

# a representative product (M, K, N) per table, in the sizes the table serves
SIZES = {"cpu": (512, 512, 512), "gpu": (512, 512, 512), "cpu_skinny": (1, 1024, 1024), "gpu_skinny": (1, 1024, 1024),
         "cpu_short": (16, 512, 2048)}
# candidates beyond the tables' own entries
EXTRA = {"cpu": (Tiling(64, 64, 32, 8, 2, 16), Tiling(64, 32, 64, 8, 1, 16), Tiling(32, 64, 64, 8, 2, 16)),
         "gpu": (Tiling(64, 64, 8, 4, 4, 1), Tiling(32, 64, 16, 2, 4, 1)),
         "cpu_short": (Tiling(8, 128, 32, 8, 4, 16), Tiling(8, 64, 64, 8, 2, 16))}

_override: dict = {}  # (device index, table) -> Tiling, while autotune measures a candidate
_tuned: dict | None = None  # device identity -> {table/acc: [tm, tn, tk, wm, wn, vw]}, loaded lazily


def _path():
    folder = programs.cache_dir()
    return None if folder is None else folder.parent / "tuning.json"


def identity(dev: runtime.CLDevice) -> str:
    ident = _IDENTITY.get(dev.index)
    if ident is None:
        p = dev.props
        ident = _IDENTITY[dev.index] = " | ".join([p.platform, p.platform_version, p.name, p.driver_version,
                                                   __version__])
    return ident


_IDENTITY: dict = {}


def _load() -> dict:
    global _tuned
    if _tuned is None:
        _tuned = {}
        path = _path()
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text())
                _tuned = data if isinstance(data, dict) else {}
            except (OSError, ValueError):  # a damaged file is only a lost optimisation
                _tuned = {}
    return _tuned


def tuned(dev: runtime.CLDevice, table: str, acc: str) -> Tiling | None:
    """The tiling autotune chose for ``table`` on ``dev`` (or the candidate being measured), else None."""
    forced = _override.get((dev.index, table))
    if forced is not None:
        return forced
    entry = _load().get(identity(dev), {}).get(f"{table}/{acc}")
    if isinstance(entry, list) and len(entry) == 6 and all(isinstance(v, int) and v > 0 for v in entry):
        return Tiling(*entry)
    return None


def _save(results: dict, dev: runtime.CLDevice) -> None:
    data = _load()
    data.setdefault(identity(dev), {}).update(results)
    path = _path()
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one


def _fits(dev: runtime.CLDevice, t: Tiling, acc: str) -> bool:
    lx, ly, _ = t.local_size
    return (t.tn % (t.wn * t.vw) == 0 and t.tm % t.wm == 0 and lx * ly <= dev.props.max_work_group_size
            and t.local_bytes(acc) <= dev.props.local_memory)


def _product(backend, a, b, out) -> np.ndarray:
    """``a @ b`` through the matmul primitive (a, b, out: [1, M, K], [1, K, N], [1, M, N] descriptors)."""
    backend.matmul(out, a, b)
    return backend.read(out)[0]


def _time(backend, a, b, out, repeats: int) -> float:
    _product(backend, a, b, out)  # build and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        backend.matmul(out, a, b)
        backend.synchronize(out.device)
        best = min(best, time.perf_counter() - start)
    return best


def _upload(backend, d, host: np.ndarray) -> Desc:
    t = Desc(backend.empty(d, D.float32, host.size), (1, *host.shape))
    backend.write(t._storage, host)
    return t


def autotune(device="opencl", tables=None, repeats: int = 3, sizes: dict | None = None) -> dict:
    """Measure the candidate tilings of each table on ``device`` (float32), keep and store the fastest correct
    one per table. Returns {table: (Tiling, seconds)}."""
    d = as_device(device)
    dev = runtime.get(d.index)
    backend = backends.get(d)
    kind = "gpu" if dev.rank < 2 else "cpu"
    names = tables or [t for t in TILINGS if t.split("_")[0] == kind]
    rng = np.random.default_rng(0)
    chosen, results = {}, {}
    for table in names:
        m, k, n = (sizes or SIZES)[table]
        a_np = rng.standard_normal((m, k)).astype(np.float32)
        b_np = rng.standard_normal((k, n)).astype(np.float32)
        a, b = _upload(backend, d, a_np), _upload(backend, d, b_np)
        out = Desc(backend.empty(d, D.float32, m * n), (1, m, n))
        expect = a_np.astype(np.float64) @ b_np.astype(np.float64)
        best = None
        for t in dict.fromkeys(TILINGS[table] + EXTRA.get(table, ())):
            if not _fits(dev, t, "float"):
                continue
            _override[(dev.index, table)] = t
            programs.invalidate()  # cached matmul launchers hold the tiling they were built with
            try:
                if not np.allclose(_product(backend, a, b, out), expect, rtol=1e-3, atol=1e-3 * np.sqrt(k)):
                    continue  # a candidate that computes wrongly here is never chosen
                seconds = _time(backend, a, b, out, repeats)
            finally:
                del _override[(dev.index, table)]
                programs.invalidate()
            if best is None or seconds < best[1]:
                best = (t, seconds)
        if best is not None:
            chosen[table] = best
            results[f"{table}/float"] = list(best[0])
    _save(results, dev)
    programs.invalidate()
    return chosen
