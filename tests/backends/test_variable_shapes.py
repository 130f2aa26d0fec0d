"""Issue 19 item 12: variable shapes must not compile again and again, nor grow the caches without end.

CPU devices launch in one of two work-group sizes with a guarded tail (PoCL generates code per local size: left to
choose, it picked a new one for nearly every batch size, about 0.2-0.6 s each), and the kernel, program and launcher
caches are LRU-bounded (programs.py).
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.backends.opencl import launch, programs, runtime


@pytest.mark.parametrize("rank,wg", [(2, 4096), (2, 256), (0, 1024)])
def test_launch_geometry_is_bucketed(rank, wg):
    dev = SimpleNamespace(rank=rank, props=SimpleNamespace(max_work_group_size=wg))
    locals_seen = set()
    for n in list(range(1, 300, 7)) + list(range(60_000, 2_000_000, 37_777)):
        (gsize,), local = launch.launch_size(dev, n)
        assert local is not None and gsize >= n and gsize % local[0] == 0 and gsize - n < local[0]
        assert local[0] <= wg
        locals_seen.add(local[0])
    assert len(locals_seen) <= 2


def test_lru_drops_the_least_recently_used():
    cache = programs.LRU(3)
    for k in "abc":
        cache[k] = k.upper()
    assert cache.get("a") == "A"  # a is now the most recent: b goes first
    cache["d"] = "D"
    assert sorted(cache) == ["a", "c", "d"] and cache.get("b") is None
    cache["c"] = "C2"
    cache["e"] = "E"
    assert sorted(cache) == ["c", "d", "e"] and len(cache) == 3


def test_new_batch_sizes_build_nothing_new(device):
    """A small MLP step over many batch sizes (both launch regimes): after a warm-up, new sizes build a bounded
    number of kernels (none here), and the caches stay under their caps."""
    if device == "cpu":
        pytest.skip("an OpenCL matter")
    dev = runtime.get(clgrad.device(device).index)
    clgrad.manual_seed(0)
    model = clgrad.nn.Sequential(clgrad.nn.Linear(8, 256), clgrad.nn.ReLU(), clgrad.nn.Linear(256, 3)).to(device)
    opt = clgrad.optim.Adam(model.parameters(), lr=1e-3)

    def step(bs):
        x = clgrad.randn(bs, 8).to(device)
        loss = F.cross_entropy(model(x), clgrad.randint(0, 3, (bs,)).to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for bs in (3, 64, 256, 301):  # warm-up: small and large launches, tails and none
        step(bs)
    builds, kernels = programs.stats["builds"], len(dev.kernels)
    sizes = list(range(5, 60, 3)) + list(range(262, 700, 23))  # 19 + 20 new batch sizes
    start = time.perf_counter()
    for bs in sizes:
        step(bs)
    per_shape = (time.perf_counter() - start) / len(sizes)
    stats = programs.cache_stats()
    assert stats["builds"] - builds <= 2 and len(dev.kernels) - kernels <= 4, (stats, kernels)
    assert stats["programs"] <= programs.MAX_PROGRAMS and stats["kernels"][dev.index] <= programs.MAX_KERNELS
    if "pocl" in dev.props.platform_version.lower():  # 0.16 s per new size before (PoCL 3.1), now about 0.01 s
        assert per_shape < 0.1, per_shape
