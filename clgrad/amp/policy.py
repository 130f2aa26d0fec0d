"""Autocast's op policies as decorators on the ops themselves (PyTorch's ``autocast`` op lists).

``@autocast_lower``: matmul, linear, convolutions and RNN cells run in the region's dtype (float16 or bfloat16);
``@autocast_float32``: reductions of many terms and losses that need range run in float32. Only floating tensors that are not
float64, on a device type with an open autocast region, are cast. Casting happens once, at the outermost op: the ops an
autocast op calls run in the dtypes they are given (as below PyTorch's Autocast dispatch key), and so does backward.
A leaf that requires grad (a weight) is cast once per region and the cast reused, as PyTorch's cast cache does.
"""
from __future__ import annotations

import functools

from .. import dtypes as D
from .._amp_state import STATE, active, suspended


def _cast_one(t, regions, to_lower: bool):
    if not (hasattr(t, "_storage") and t.dtype.is_floating_point and t.dtype is not D.float64):
        return t
    target = regions.get(t.device.type)  # regions: only the device types this op's policy covers
    if target is None:
        return t
    if not to_lower:
        target = D.float32 if t.dtype in (D.float16,) or t.dtype.name == "bfloat16" else None
    if target is None or t.dtype is target:
        return t
    if not (t.is_leaf and t.requires_grad) or not getattr(STATE, "cache_enabled", True):
        return t.to(target)
    cache = STATE.__dict__.setdefault("cache", {})
    key = (id(t), target)
    hit = cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._storage.version:
        return hit[2]
    cast = t.to(target)
    cache[key] = (t, t._storage.version, cast)
    return cast


def _cast(value, regions, to_lower: bool):
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_cast(v, regions, to_lower) for v in value)
    return _cast_one(value, regions, to_lower)


def _policy(to_lower: bool, device_types=("cpu", "opencl")):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            regions = active()
            if regions is not None:
                regions = {k: v for k, v in regions.items() if k in device_types}
            if not regions:
                return fn(*args, **kwargs)
            args = _cast(args, regions, to_lower)
            kwargs = {k: _cast(v, regions, to_lower) for k, v in kwargs.items()}
            with suspended():
                return fn(*args, **kwargs)

        wrapper.__wrapped_autocast__ = "lower_precision" if to_lower else "float32"
        return wrapper

    return decorate


autocast_lower = _policy(True)
autocast_float32 = _policy(False)
# PyTorch's CUDA lists (clgrad's "opencl" regions follow them) have these ops; its CPU lists do not
autocast_lower_gpu = _policy(True, ("opencl",))
autocast_float32_gpu = _policy(False, ("opencl",))
