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
