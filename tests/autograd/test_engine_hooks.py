"""The engine hooks that DistributedDataParallel builds on: post-accumulate-grad hooks and queue_callback."""
from __future__ import annotations

import pytest

import clgrad


def test_post_accumulate_grad_hook_and_queue_callback(device):
    """The hooks DistributedDataParallel's reducer builds on, as in PyTorch: a leaf's post-accumulate hook sees
    its finished ``.grad``; a queued callback runs once after the whole backward pass, and only during one."""
    from clgrad.autograd import engine

    w = clgrad.ones(3, device=device, requires_grad=True)
    events = []
    handle = w.register_post_accumulate_grad_hook(lambda t: events.append(("hook", t.grad.tolist())))
    for _ in range(2):
        (w * 2).sum().backward(retain_graph=False)
        engine_ran = [e for e in events if e[0] == "hook"]
        assert engine_ran[-1] == ("hook", [2.0 * len(engine_ran)] * 3)
    handle.remove()
    (w * 2).sum().backward()
    assert len(events) == 2

    def queue(t):
        engine.queue_callback(lambda: events.append(("done", t.grad.tolist())))
        engine.queue_callback(lambda: engine.queue_callback(lambda: events.append("nested")))

    w.grad = None
    w.register_post_accumulate_grad_hook(queue)
    (w * 3).sum().backward()
    assert events[2:] == [("done", [3.0] * 3), "nested"]
    with pytest.raises(RuntimeError, match="only be installed during backward"):
        engine.queue_callback(lambda: None)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
