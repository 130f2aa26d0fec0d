"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``; thread-local,
each usable as a context manager and as a decorator."""
from __future__ import annotations

import functools
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set_enabled(flag: bool) -> None:
    _state.enabled = bool(flag)


def is_inference_mode_enabled() -> bool:
    return getattr(_state, "inference", False)


class _Mode:
    """Base: subclasses say what ``_enter`` sets; the previous state comes back on exit."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args: tuple = ()

    def __enter__(self):
        self._prev = (is_grad_enabled(), is_inference_mode_enabled())
        self._enter()
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False


class no_grad(_Mode):
    """Disable gradient tracking: ``with clgrad.no_grad(): w -= lr * w.grad``."""

    def _enter(self):
        _set_enabled(False)


class enable_grad(_Mode):
    def _enter(self):
        _set_enabled(True)


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` switches tracking off now (as a function) or inside a ``with`` block."""

    def __init__(self, mode: bool):
        self._args = (mode,)
        self._prev = (is_grad_enabled(), is_inference_mode_enabled())
        _set_enabled(mode)

    def _enter(self):
        _set_enabled(self._args[0])

    def __enter__(self):
        self._enter()  # the previous state was captured at construction, as in PyTorch
        return self


class inference_mode(_Mode):
    """Like ``no_grad``; tensors made inside are never tracked. ``inference_mode(False)`` is a no-op."""

    def __init__(self, mode: bool = True):
        self._args = (mode,)

    def _enter(self):
        if self._args[0]:
            _set_enabled(False)
            _state.inference = True
