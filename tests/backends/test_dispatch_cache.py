"""The elementwise dispatch cache: a repeated op reuses the promotion, broadcasting and launch worked out
the first time. Every case runs an op twice, so the second call takes the cached plan, and checks it against
numpy: the cache must never change an answer."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.ops import pointwise
from tests.helpers import assert_close


def test_views_at_other_offsets(device):
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    t = clgrad.tensor(base, device=device)
    for start in range(4):  # same shape and strides, a new offset each time
        assert_close(t[:, start:start + 5] * 2 + t[:, 5:], base[:, start:start + 5] * 2 + base[:, 5:])
    for row in range(4):  # broadcasting a row against the matrix
        assert_close(t - t[row], base - base[row])


def test_scalars_keep_their_values(device):
    t = clgrad.tensor([1.0, 2.0], device=device)
    for k in (2, 3, -7):
        assert_close(t * k, np.array([1.0, 2.0], np.float32) * k)
    assert_close(t + 0.5, np.array([1.5, 2.5], np.float32))
    assert_close(t + True, np.array([2.0, 3.0], np.float32))  # bool scalar: a different plan


def test_out_overlapping_its_input_after_a_plan(device):
    a = clgrad.arange(8.0, device=device)
    b = clgrad.zeros(8, device=device)
    clgrad.add(a[:-1], 1, out=b[1:])  # no overlap: the plan is made here
    clgrad.add(a[:-1], 1, out=a[1:])  # the same layout, but out overlaps the input: read a snapshot
    expect = np.arange(8.0, dtype=np.float32)
    expect[1:] = expect[:-1] + 1
    assert_close(a, expect)


def test_out_bumps_the_version(device):
    a, b = clgrad.ones(3, device=device), clgrad.ones(3, device=device)
    start, versions = a._version, []
    for _ in range(3):
        a.add_(b)
        versions.append(a._version - start)
    assert versions == [1, 2, 3]
    assert_close(a, np.full(3, 4.0, np.float32))


def test_default_dtype_is_part_of_the_plan(device):
    ints = clgrad.tensor([1, 2], device=device)
    assert (ints / 2).dtype is clgrad.float32
    if device == "cpu" or clgrad.opencl.get_device_properties(device).fp64:
        clgrad.set_default_dtype(clgrad.float64)
        try:
            assert (ints / 2).dtype is clgrad.float64
        finally:
            clgrad.set_default_dtype(clgrad.float32)
    assert (ints / 2).dtype is clgrad.float32


def test_requires_grad_takes_the_tracked_path(device):
    x = clgrad.ones(3, device=device)
    y = x * 2  # plan for untracked operands of this layout
    w = clgrad.ones(3, device=device, requires_grad=True)
    z = w * 2
    assert y.grad_fn is None and z.grad_fn is not None
    z.sum().backward()
    assert_close(w.grad, np.full(3, 2.0, np.float32))


def test_cpu_scalar_tensor_next_to_a_device_tensor(device):
    t = clgrad.tensor([1.0, 2.0], device=device)
    for v in (3.0, 4.0):
        assert_close(t * clgrad.tensor(v), np.array([1.0, 2.0], np.float32) * v)


def test_errors_are_not_cached(device):
    b = clgrad.tensor([True, False], device=device)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="Subtraction"):
            b - b
    i = clgrad.tensor([2, 3], device=device)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="negative integer powers"):
            i ** -1


def test_the_cache_is_bounded(device, monkeypatch):
    monkeypatch.setattr(pointwise, "_MAX_PLANS", 4)
    t = clgrad.ones(1, device=device)
    for n in range(1, 12):
        assert_close(clgrad.ones(n, device=device) + t, np.full(n, 2.0, np.float32))
    assert len(pointwise._PLANS) <= 4


def test_threads_launching_the_same_kernel(device):
    """Several threads run the same ops (so the same cached kernels and launchers) on their own tensors at once:
    launches are serialized per kernel, so no thread enqueues another's arguments."""
    import threading

    errors = []

    def work(k: int) -> None:
        try:
            x = clgrad.full((257,), float(k), device=device)
            for _ in range(100):
                y = (x * 2 + 1).sum()
                if y.item() != 257 * (2 * k + 1):
                    errors.append((k, y.item()))
                    return
        except Exception as exc:  # reported below: an exception in a thread would otherwise vanish
            errors.append((k, repr(exc)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---- the direct launch path (backends/opencl/elementwise.py ``_direct_launch``): a cached launch sets on its own
# kernel clone only the arguments that changed since its last call, so each case changes one of them between calls

def test_scalar_changes_between_calls_reach_the_kernel(device):
    t = clgrad.tensor([1.0, -2.0, 3.0], device=device)
    host = np.array([1.0, -2.0, 3.0], np.float32)
    for k in (0.0, -0.0, 0.0, 2.5, 2.5, float("inf"), -1e300, 7.0):  # -0.0 == 0.0, yet the product's sign differs
        got = (t * k).cpu().numpy()
        with np.errstate(all="ignore"):
            want = host * np.float32(k)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    for k in (np.float64(0.0), np.float64(-0.0), np.float32(-0.0), np.float32(0.0)):  # numpy zeros too
        np.testing.assert_array_equal(np.signbit((t * k).cpu().numpy()), np.signbit(host * np.float32(k)))


def test_int_scalars_wrap_as_before(device):
    t = clgrad.tensor([1, 2, 3], dtype=clgrad.int32, device=device)
    for k in (3, 3, -4, 2**31 - 1, 5):
        assert_close(t + k, (np.array([1, 2, 3], np.int64) + k).astype(np.int32))


def test_offsets_change_and_return(device):
    host = np.arange(12, dtype=np.float32)
    t = clgrad.tensor(host, device=device)
    for start in (0, 4, 4, 8, 0):  # one plan: each call's out and input offsets follow the view
        assert_close(t[start:start + 4] + t[8 - start:12 - start], host[start:start + 4] + host[8 - start:12 - start])
        out = clgrad.zeros(12, device=device)
        clgrad.mul(t[start:start + 4], 2.0, out=out[start:start + 4])
        want = np.zeros(12, np.float32)
        want[start:start + 4] = host[start:start + 4] * 2
        assert_close(out, want)


def test_threads_share_a_cached_launch(device):
    """Threads running the same plan with their own scalars and buffers each get their own answer (the clone's
    set-arguments-then-enqueue is serialized)."""
    import threading

    host = np.arange(64, dtype=np.float32)
    t = clgrad.tensor(host, device=device)
    t + 1.0  # the plan exists before the threads start
    errors = []

    def work(k):
        try:
            for i in range(50):
                got = (t + float(k * 100 + i)).cpu().numpy()
                np.testing.assert_array_equal(got, host + np.float32(k * 100 + i))
        except AssertionError as exc:  # pragma: no cover - a failure is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]


def test_plan_results_count_in_the_allocator(device):
    if not device.startswith("opencl"):
        pytest.skip("the OpenCL allocator")
    a = clgrad.ones(16, device=device)
    a + a  # the plan (and its maker) exist now
    before = clgrad.opencl.memory_allocated(device)
    results = [a + a for _ in range(3)]
    assert clgrad.opencl.memory_allocated(device) == before + 3 * 512  # 64 bytes each, rounded to 512
    assert len({id(r._storage.data) for r in results}) == 3
    del results
    assert clgrad.opencl.memory_allocated(device) == before
    assert_close(a + a, np.full(16, 2.0, np.float32))


def test_profiler_still_sees_cached_launches(device):
    if not device.startswith("opencl"):
        pytest.skip("OpenCL kernel events")
    a = clgrad.ones(16, device=device)
    a + a
    with clgrad.profiler.profile() as prof:
        r = a + a
    assert_close(r, np.full(16, 2.0, np.float32))
    assert any("add" in e.name for e in prof.events())
