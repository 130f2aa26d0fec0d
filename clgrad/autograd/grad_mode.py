"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The state is thread-local (a new thread starts with gradients enabled, as in PyTorch). Each mode is a
context manager and a decorator (``@no_grad()`` or ``@no_grad``); a decorated generator function gets the
mode only while its body runs, not while the caller holds the generator.
"""
from __future__ import annotations

import functools
import inspect
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def set_enabled(flag: bool) -> bool:
    """Switch gradient recording on or off for this thread; returns the previous setting."""
    prev = getattr(_state, "enabled", True)
    _state.enabled = bool(flag)
    return prev


def is_inference_mode_enabled() -> bool:
    return getattr(_state, "inference", False)


def _get() -> tuple:
    return is_grad_enabled(), is_inference_mode_enabled()


def _restore(state: tuple) -> None:
    _state.enabled, _state.inference = state


class _Mode:
    """Base: subclasses say in ``_enter`` what they set; the previous state comes back on exit.
    ``_clone`` gives a fresh manager with the same arguments, so a decorated function is reentrant."""

    def _clone(self):
        return self.__class__()

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            to_send = None
            while True:
                with self._clone():
                    try:
                        value = gen.send(to_send)
                    except StopIteration as stop:
                        return stop.value
                try:
                    to_send = yield value
                except GeneratorExit:
                    gen.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 - thrown into the generator, as PyTorch does
                    with self._clone():
                        to_send = gen.throw(exc)

        return wrapper

    def __enter__(self) -> None:
        self._prev = _get()
        self._enter()

    def __exit__(self, *exc) -> bool:
        _restore(self._prev)
        return False


class _NoParamMode(_Mode):
    """A mode without arguments: ``@no_grad`` (no parentheses) decorates directly, as in PyTorch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamMode):  # noqa: N801 - PyTorch's name
    """Disable gradient tracking: ``with clgrad.no_grad(): w -= lr * w.grad``."""

    def _enter(self):
        set_enabled(False)


class enable_grad(_NoParamMode):  # noqa: N801 - PyTorch's name
    """Enable gradient tracking inside a ``no_grad`` block (or a function decorated with it)."""

    def _enter(self):
        set_enabled(True)


class set_grad_enabled(_Mode):  # noqa: N801 - PyTorch's name
    """``set_grad_enabled(False)`` switches tracking off now (called as a function) or inside a ``with`` block."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = _get()  # PyTorch sets the mode at construction, so a bare call switches it
        set_enabled(self.mode)

    def _clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        _restore(self._prev)  # used as a decorator: the construction must not change the caller's mode
        return super().__call__(fn)

    def __enter__(self) -> None:
        set_enabled(self.mode)


class inference_mode(_Mode):  # noqa: N801 - PyTorch's name
    """Like ``no_grad`` (tensors made inside are never tracked). ``inference_mode(False)`` changes nothing."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _clone(self):
        return self.__class__(self.mode)

    def _enter(self):
        if self.mode:
            set_enabled(False)
            _state.inference = True
