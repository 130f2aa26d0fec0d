"""clgrad.profiler: kernel launches are counted and timed on the device, ranges collect their kernels, the table
sorts and limits like torch's, the Chrome trace is valid JSON, and profiling leaves results and caches intact."""
from __future__ import annotations

import json

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import programs, runtime
from clgrad.profiler import profile, record_function


def _work(device, n_adds=3):
    a = clgrad.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    b = clgrad.ones(3, 4, device=device)
    c = a + b  # cached launcher from before the profile: must still be recorded inside it
    with profile() as prof:
        with record_function("step"):
            for _ in range(n_adds):
                c = a + b
            m = a @ b.t()
            s = m.sum()
    return prof, c, s


def test_table_counts_kernels(device):
    prof, c, s = _work(device)
    np.testing.assert_allclose(c.cpu().numpy(), np.arange(12).reshape(3, 4) + 1)
    assert s.item() == pytest.approx(66.0 * 3)  # (a @ ones(4, 3)).sum() is 3 * a.sum()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["## step ##"].count == 1
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=10)
    assert "Name" in table and "# of Calls" in table and "## step ##" in table
    if device == "cpu":
        assert list(rows) == ["## step ##"]  # no kernels on the cpu backend
        return
    adds = [r for k, r in rows.items() if k.startswith("add_")]
    assert len(adds) == 1 and adds[0].count == 3
    assert any(k.startswith("matmul") for k in rows) and any(k.startswith("reduce") for k in rows)
    kernels = [r for k, r in rows.items() if not k.startswith("##")]
    assert all(r.device_time_total > 0 and r.missing_device_times == 0 for r in kernels)
    # the range's device time is that of the kernels launched inside it
    assert rows["## step ##"].device_time_total == pytest.approx(sum(r.device_time_total for r in kernels))
    assert adds[0].key in table


def test_sort_and_row_limit(device):
    prof, _, _ = _work(device)
    averages = prof.key_averages()
    by_count = averages.table(sort_by="count", row_limit=1)
    top = max(averages, key=lambda r: r.count)
    assert top.key in by_count
    assert sum(r.key in by_count for r in averages) == 1
    with pytest.raises(ValueError, match="invalid sort_by"):
        averages.table(sort_by="bogus")


def test_chrome_trace(device, tmp_path):
    prof, _, _ = _work(device, n_adds=2)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert all({"name", "ph", "ts", "dur", "pid", "tid"} <= set(e) for e in events)
    assert [e["name"] for e in events if e["cat"] == "user_annotation"] == ["step"]
    if device != "cpu":
        kernels = [e for e in events if e["cat"] == "kernel"]
        assert sum(e["name"].startswith("add_") for e in kernels) == 2
        assert all(e["pid"] == device and e["dur"] >= 0 for e in kernels)


def test_profiling_switches_queues_and_back(device):
    if device == "cpu":
        pytest.skip("OpenCL only")
    dev = runtime.get(int(device.split(":")[1]))
    x = clgrad.ones(8, device=device)
    y = x * 2
    before = dev.queue
    with profile():
        assert dev._profiling and dev.queue is not before
        y = y * 2 + x
        assert isinstance(programs.get_kernel(dev, "elementwise", *_any_key(dev)), programs.RecordedKernel)
    assert not dev._profiling and programs._recorder is None
    # launchers cached while profiling were dropped: this runs unwrapped on the plain queue
    z = (y * 2 + x).cpu().numpy()
    np.testing.assert_allclose(z, np.full(8, 11.0))


def _any_key(dev):
    template, name, params, arg_dtypes = next(k for k in dev.kernels if k[0] == "elementwise")
    return name, arg_dtypes, dict(params)


def test_not_nested_and_disabled():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            profile().start()
    with profile(enabled=False) as prof:
        with record_function("ignored"):
            pass
    assert len(prof.key_averages()) == 0
    with record_function("outside a profile"):
        pass
