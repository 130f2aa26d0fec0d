"""Memory over time and out-of-memory recovery on OpenCL devices.

- A 2,000-step training loop holds device memory and the number of live OpenCL buffers constant after warm-up, and
  gives everything back when the model and optimizer are dropped (the allocator's statistics prove it).
- An allocation beyond what the device can give empties the allocator's cache, retries, and then raises
  ``clgrad.OutOfMemoryError`` (a RuntimeError) naming the device, the size and what is in use; the process, the
  allocator's books and the device stay usable. OOM is provoked through ``max_alloc`` (PoCL reports a huge global
  memory, so a real exhaustion would take the machine's RAM with it) or by making the OpenCL call fail.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.backends.opencl import runtime
from clgrad.backends.opencl.allocator import round_size


@pytest.fixture
def cl_device(device):
    if device == "cpu":
        pytest.skip("allocator statistics are per OpenCL device")
    return runtime.get(int(device.split(":")[1]))


def _books(dev) -> tuple[int, int]:
    """(bytes held by tensors, OpenCL buffer objects in existence: held by tensors or cached)."""
    return dev.allocator.allocated, dev.allocator.live_buffers


def _buffers_in_use(dev) -> int:
    alloc = dev.allocator
    return alloc.live_buffers - sum(len(bucket) for bucket in alloc.pool.values())


def test_training_holds_memory_and_buffers_constant(device, cl_device):
    steps, warmup, every = 2000, 50, 100
    gc.collect()
    before = _books(cl_device)
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4)).to(device)
    opt = clgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = clgrad.randn(256, 8, device=device)
    labels = (data[:, :4].argmax(1) + 1) % 4
    loss_fn = nn.CrossEntropyLoss()
    seen = {}
    for step in range(steps):
        start = (step * 32) % 256
        x = data[start:start + 32] + 0.01 * clgrad.randn(32, 8, device=device)  # fresh tensors every step
        opt.zero_grad()
        loss = loss_fn(model(x), labels[start:start + 32])
        loss.backward()
        opt.step()
        if step >= warmup and step % every == 0:
            clgrad.opencl.synchronize(device)  # deferred bounds checks hold a flag each until they are looked at
            seen[step] = (*_books(cl_device), _buffers_in_use(cl_device))
    final_loss = loss.item()
    assert np.isfinite(final_loss) and final_loss < 1.0, f"the model did not train (loss {final_loss})"
    first = seen[min(seen)]
    # the pool may keep a few more buffers once the host has run further ahead of the device: the flags of deferred
    # bounds checks (cross-entropy's), at most nn.MAX_PENDING of them; bytes and buffers in use must not move
    from clgrad.backends.opencl.nn import MAX_PENDING

    drift = {s: b for s, b in seen.items() if (b[0], b[2]) != (first[0], first[2]) or not 0 <= b[1] - first[1]
             <= MAX_PENDING}
    assert not drift, f"(bytes, buffers, buffers in use) changed from {first} at step {min(seen)}: {drift}"
    del model, opt, data, labels, x, loss
    gc.collect()
    allocated, _ = _books(cl_device)
    assert allocated == before[0], f"{allocated - before[0]} bytes still held after the training objects were dropped"


def test_oom_beyond_max_alloc_names_device_size_and_use(device, cl_device):
    keep = clgrad.ones(1000, device=device)  # something in use, to be named in the message
    one = clgrad.ones(1, device=device)
    held, live = _books(cl_device)
    too_big = cl_device.props.max_alloc // 4 + 1024
    with pytest.raises(clgrad.OutOfMemoryError) as info:
        one.expand(too_big).contiguous()  # an op's output, not just empty()
    err = info.value
    assert isinstance(err, RuntimeError)
    msg = str(err)
    assert f"opencl:{cl_device.index}" in msg and cl_device.props.name in msg
    assert f"{round_size(too_big * 4)} bytes" in msg, msg
    assert f"{held} bytes are in use" in msg, msg
    assert _books(cl_device) == (held, live), "a failed allocation changed the allocator's books"
    assert keep.sum().item() == 1000
    np.testing.assert_array_equal(np.asarray((clgrad.arange(4, device=device) * 2).cpu().numpy()), [0, 2, 4, 6])


class _FailingBuffer:
    """Stands in for pyopencl.Buffer: raises pyopencl's MemoryError the first ``fail`` times it is called."""

    def __init__(self, real, fail: int):
        self.real, self.fail, self.calls = real, fail, 0

    def __call__(self, *args, **kwargs):
        import pyopencl as cl

        self.calls += 1
        if self.calls <= self.fail:
            raise cl.MemoryError("clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                                 "simulated exhaustion")
        return self.real(*args, **kwargs)


def _fill_cache(device, cl_device):
    """Leave a few freed buffers, and only those, in the allocator's cache (earlier tests in this worker may have
    left a freed buffer big enough for the allocation under test)."""
    clgrad.opencl.empty_cache()
    ts = [clgrad.empty(3000 + 700 * i, device=device) for i in range(3)]
    del ts
    gc.collect()
    assert cl_device.allocator.cached > 0


def test_oom_empties_the_cache_and_retries(device, cl_device, monkeypatch):
    import pyopencl as cl

    _fill_cache(device, cl_device)
    failing = _FailingBuffer(cl.Buffer, fail=1)
    monkeypatch.setattr(cl, "Buffer", failing)
    x = clgrad.full((123457,), 2.0, device=device)  # a size no cached buffer fits: the allocator must create one
    assert failing.calls == 2, "the allocator did not retry after the first failure"
    assert cl_device.allocator.cached == 0, "the cache was not emptied before the retry"
    monkeypatch.undo()
    assert x.sum().item() == 2.0 * 123457


def test_oom_after_retry_raises_and_recovers(device, cl_device, monkeypatch):
    import pyopencl as cl

    _fill_cache(device, cl_device)
    keep = clgrad.ones(10, device=device)
    held = cl_device.allocator.allocated
    failing = _FailingBuffer(cl.Buffer, fail=10**9)
    monkeypatch.setattr(cl, "Buffer", failing)
    with pytest.raises(clgrad.OutOfMemoryError) as info:
        clgrad.zeros(200_003, device=device)
    assert failing.calls == 2  # the first try and one retry after emptying the cache
    msg = str(info.value)
    assert f"opencl:{cl_device.index}" in msg and f"{round_size(200_003 * 4)} bytes" in msg, msg
    assert f"{held} bytes are in use" in msg, msg
    assert "empty_cache" in msg
    monkeypatch.undo()
    assert cl_device.allocator.allocated == held
    y = clgrad.zeros(200_003, device=device) + keep.sum()
    assert y.sum().item() == 10 * 200_003
