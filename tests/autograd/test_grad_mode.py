"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode as context managers and decorators,
thread-local as in PyTorch."""
from __future__ import annotations

import threading

import pytest

import clgrad
from clgrad.autograd.grad_mode import is_inference_mode_enabled


def leaf(device):
    return clgrad.ones(3, device=device, requires_grad=True)


@pytest.mark.parametrize("mode, tracks", [
    (clgrad.no_grad, False), (clgrad.enable_grad, True), (lambda: clgrad.set_grad_enabled(False), False),
    (lambda: clgrad.set_grad_enabled(True), True), (clgrad.inference_mode, False),
    (lambda: clgrad.inference_mode(False), True),
])
def test_context_manager(device, mode, tracks):
    x = leaf(device)
    with mode() as entered:
        y = x * 2
        assert clgrad.is_grad_enabled() is tracks
    assert entered is None  # PyTorch's managers enter as None
    assert y.requires_grad is tracks and (y.grad_fn is not None) is tracks
    assert clgrad.is_grad_enabled()


def test_nesting_restores_each_level(device):
    x = leaf(device)
    with clgrad.no_grad():
        with clgrad.enable_grad():
            assert (x * 2).requires_grad
            with clgrad.set_grad_enabled(False):
                assert not (x * 2).requires_grad
            assert clgrad.is_grad_enabled()
        assert not clgrad.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert clgrad.is_grad_enabled()


def test_restored_after_an_exception(device):
    with pytest.raises(ValueError), clgrad.no_grad():
        raise ValueError
    assert clgrad.is_grad_enabled()


@pytest.mark.parametrize("decorate, tracks", [
    (clgrad.no_grad(), False), (clgrad.no_grad, False), (clgrad.enable_grad(), True), (clgrad.enable_grad, True),
    (clgrad.inference_mode(), False), (clgrad.inference_mode, False),
])
def test_decorator(device, decorate, tracks):
    @decorate
    def f(x):
        """doc"""
        return x * 2, clgrad.is_grad_enabled()

    assert f.__doc__ == "doc" and f.__name__ == "f"
    with clgrad.set_grad_enabled(not tracks):
        y, enabled = f(leaf(device))
        assert clgrad.is_grad_enabled() is not tracks
    assert enabled is tracks and y.requires_grad is tracks


def test_set_grad_enabled_as_function_and_decorator(device):
    x = leaf(device)
    clgrad.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        clgrad.set_grad_enabled(True)
    assert (x * 2).requires_grad

    @clgrad.set_grad_enabled(False)
    def f():
        return (x * 2).requires_grad

    assert clgrad.is_grad_enabled()  # decorating doesn't switch the mode
    assert f() is False and clgrad.is_grad_enabled()


def test_decorated_method_and_recursion(device):
    seen = []

    class Model:
        @clgrad.no_grad()
        def run(self, x, depth):
            if depth:
                self.run(x, depth - 1)
            seen.append((x * 2).requires_grad)

    Model().run(leaf(device), 3)
    assert seen == [False] * 4 and clgrad.is_grad_enabled()


def test_decorated_generator_applies_only_while_it_runs():
    @clgrad.no_grad()
    def gen():
        yield clgrad.is_grad_enabled()
        yield clgrad.is_grad_enabled()

    g = gen()
    assert next(g) is False
    assert clgrad.is_grad_enabled()  # the caller keeps its own mode between steps
    assert next(g) is False
    with pytest.raises(StopIteration):
        next(g)


def test_inference_mode_flag():
    assert not is_inference_mode_enabled()
    with clgrad.inference_mode():
        assert is_inference_mode_enabled() and not clgrad.is_grad_enabled()
    assert not is_inference_mode_enabled()
    assert clgrad.autograd.is_inference_mode_enabled is is_inference_mode_enabled


def test_modes_are_thread_local(device):
    x = leaf(device)
    seen = {}

    def worker():
        seen["start"] = clgrad.is_grad_enabled()  # a new thread starts with gradients on
        with clgrad.no_grad():
            seen["inside"] = clgrad.is_grad_enabled()
            barrier.wait()  # the main thread checks its own mode while this one is in no_grad
            barrier.wait()
        seen["tracked"] = (x * 2).requires_grad

    barrier = threading.Barrier(2)
    with clgrad.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        barrier.wait()
        assert not clgrad.is_grad_enabled()
        barrier.wait()
        t.join()
    assert seen == {"start": True, "inside": False, "tracked": True}
    assert clgrad.is_grad_enabled()

    other = {}
    with clgrad.no_grad():
        barrier = threading.Barrier(1)
        t = threading.Thread(target=lambda: other.setdefault("tracked", (x * 2).requires_grad))
        t.start()
        t.join()
    assert other["tracked"] is True


def test_in_place_updates_under_no_grad(device):
    w = leaf(device)
    (w * w).sum().backward()
    with clgrad.no_grad():
        w -= 0.5 * w.grad  # a leaf that requires grad may be updated in place here
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"^a leaf Variable that requires grad is being used in an in-place"):
        w -= 1


def test_function_apply_under_no_grad_records_nothing(device):
    class Double(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            assert not clgrad.is_grad_enabled()  # forward always runs untracked
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = leaf(device)
    assert Double.apply(x).requires_grad
    with clgrad.no_grad():
        y = Double.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert clgrad.is_grad_enabled()
