"""Side-by-side timing: each case is measured for clgrad, numpy and (when installed) PyTorch-CPU in the
same run, and reported as ratios, because absolute times on shared machines mean little."""
from __future__ import annotations

import time

import clgrad


def sync(device: str) -> None:
    if device.startswith("opencl"):
        clgrad.opencl.synchronize()


def timeit(fn, *, device: str = "cpu", min_time: float = 0.2, warmup: int = 2) -> float:
    """Median-of-repeats seconds per call of ``fn``; syncs the device around the timed block only."""
    for _ in range(warmup):
        fn()
    sync(device)
    n, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync(device)
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            break
        n *= 2
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync(device)
        samples.append((time.perf_counter() - start) / n)
    return sorted(samples)[1]


def torch_or_none():
    try:
        import torch

        torch.set_num_threads(2)
        return torch
    except ImportError:
        return None


def default_device() -> str:
    if clgrad.opencl.is_available():
        return str(clgrad.device("opencl"))
    return "cpu"


def report(rows, header=("case", "clgrad", "numpy", "torch", "clgrad/numpy", "clgrad/torch")) -> None:
    """rows: (case, t_clgrad, t_numpy or None, t_torch or None, unit_fn) -> prints a table of times and speed ratios
    (>1 means clgrad is faster)."""
    print(f"{header[0]:<34}{header[1]:>12}{header[2]:>12}{header[3]:>12}{header[4]:>14}{header[5]:>14}")
    for case, tc, tn, tt in rows:
        fmt = lambda t: f"{t * 1e3:10.3f}ms" if t is not None else f"{'-':>12}"  # noqa: E731
        rn = f"{tn / tc:13.2f}x" if tn else f"{'-':>14}"
        rt = f"{tt / tc:13.2f}x" if tt else f"{'-':>14}"
        print(f"{case:<34}{fmt(tc)}{fmt(tn)}{fmt(tt)}{rn}{rt}")
