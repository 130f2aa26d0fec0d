"""PyTorch's TypeError for a non-tensor where a public function wants a tensor.

Ops read their input's attributes (``input.dim()``, ``input._shape``) without checking its type first, so
``clgrad.cumsum([1, 2], 0)`` would fail with an AttributeError from deep inside the op. ``tensor_first`` wraps a
module's public functions so that such a failure becomes PyTorch's
``TypeError: cumsum(): argument 'input' (position 1) must be Tensor, not list``. The check runs only after an
AttributeError, so a valid call pays one extra Python frame and nothing else, and functions that accept numbers
for their first argument keep doing so. That extra frame is why warnings in wrapped modules take their
``stacklevel`` from ``user_stacklevel()`` rather than counting frames.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys

from ..tensor import is_tensor

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../clgrad/


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that points at the first caller outside clgrad, however many
    clgrad frames (wrappers, helpers, Tensor methods) lie between it and the function that warns."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def tensor_first(namespace: dict, names) -> None:
    """Wrap each function ``namespace[name]`` whose first parameter is positional (``input``, ``self``, ...)."""
    for name in dict.fromkeys(names):
        fn = namespace.get(name)
        if not inspect.isfunction(fn) or getattr(fn, "_tensor_first", False):
            continue  # (other wrappers, e.g. autocast's policies, are wrapped too)
        params = list(inspect.signature(fn).parameters.values())
        if params and params[0].kind in _POSITIONAL:
            namespace[name] = _checked(fn, params[0].name)


def _checked(fn, arg: str):
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError:
            if not args and arg not in kwargs:
                raise
            x = args[0] if args else kwargs[arg]
            if is_tensor(x):
                raise  # a tensor: the AttributeError is a bug of its own, not the caller's mistake
            raise TypeError(
                f"{fn.__name__}(): argument '{arg}' (position 1) must be Tensor, not {type(x).__name__}"
            ) from None

    checked._tensor_first = True
    return checked
