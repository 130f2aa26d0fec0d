"""``clgrad.autocast`` / ``clgrad.amp.autocast``: PyTorch's automatic mixed precision regions.

Device types: ``"opencl"`` (clgrad's accelerator, like ``"cuda"`` in PyTorch: float16 by default) and ``"cpu"``
(bfloat16 by default where clgrad has it, as PyTorch's). ``"cuda"`` answers as a CPU-only PyTorch does: a warning,
and the region is disabled. The ops that change dtype are marked in the ops modules (``clgrad.amp.policy``).
"""
from __future__ import annotations

import functools
import warnings

from .. import dtypes as D
from .._amp_state import STATE

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]

_DEVICE_TYPES = ("cpu", "opencl")


def _defaults() -> dict:
    bf16 = getattr(D, "bfloat16", None)
    return {"cpu": bf16 if bf16 is not None else D.float16, "opencl": D.float16}


_DTYPES = {}  # per device type, set_autocast_dtype's value


def is_autocast_available(device_type: str) -> bool:
    return device_type in _DEVICE_TYPES


def get_autocast_dtype(device_type: str):
    if device_type == "cuda":
        return D.float16
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return _DTYPES.get(device_type) or _defaults()[device_type]


def set_autocast_dtype(device_type: str, dtype) -> None:
    _DTYPES[device_type] = D.as_dtype(dtype)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast region is open for ``device_type`` (PyTorch's no-argument form means CUDA: False)."""
    return (device_type or "cuda") in (getattr(STATE, "regions", None) or {})


def set_autocast_enabled(device_type, enabled=None) -> None:
    if enabled is None:  # the old one-argument form: the CUDA flag, which clgrad does not have
        return
    regions = dict(getattr(STATE, "regions", None) or {})
    if enabled:
        regions[device_type] = get_autocast_dtype(device_type)
    else:
        regions.pop(device_type, None)
    STATE.regions = regions


def clear_autocast_cache() -> None:
    STATE.__dict__.pop("cache", None)


def is_autocast_cache_enabled() -> bool:
    return getattr(STATE, "cache_enabled", True)


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


class autocast:  # noqa: N801 - torch.autocast
    """``with clgrad.autocast("opencl"):`` runs matmuls and convolutions in float16 (``dtype=``), losses and
    softmax in float32; also a decorator. Outputs of a region can be float16: cast them back before using them
    outside when that matters (as with PyTorch)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = None
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if device_type == "cuda":
            if self._enabled:
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
            self.fast_dtype = D.float16
            return
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else D.as_dtype(dtype)
        allowed = (D.float16,) + tuple(d for d in D.ALL if d.name == "bfloat16")
        if self._enabled and self.fast_dtype not in allowed:
            kind = "CPU" if device_type == "cpu" else "OpenCL"
            warnings.warn(f"In {kind} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{kind} Autocast only supports dtype of {', '.join(str(d) for d in allowed)} currently.",
                          stacklevel=2)
            self._enabled = False

    def __enter__(self):
        self._prev = (getattr(STATE, "regions", None), getattr(STATE, "cache_enabled", True),
                      getattr(STATE, "depth", 0))
        regions = dict(self._prev[0] or {})
        if self._enabled:
            regions[self.device] = self.fast_dtype
        else:
            regions.pop(self.device, None)
        STATE.regions, STATE.cache_enabled, STATE.depth = regions, self._cache_enabled, self._prev[2] + 1
        return self

    def __exit__(self, *exc):
        STATE.regions, STATE.cache_enabled, STATE.depth = self._prev
        if STATE.depth == 0:
            clear_autocast_cache()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorated


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom ``Function.forward``: with ``cast_inputs``, floating inputs are cast to it and the
    forward runs with autocast off for ``device_type``; without, the forward runs in the caller's autocast state."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        regions = getattr(STATE, "regions", None) or {}
        args[0]._fwd_autocast = (regions.get(device_type), is_autocast_cache_enabled())
        if cast_inputs is None or device_type not in regions:
            return fwd(*args, **kwargs)
        target = D.as_dtype(cast_inputs)

        def cast(v):
            if hasattr(v, "_storage") and v.dtype.is_floating_point and v.device.type == device_type:
                return v.to(target)
            if isinstance(v, (list, tuple)):
                return type(v)(cast(x) for x in v)
            return v

        with autocast(device_type, enabled=False):
            return fwd(*cast(args), **{k: cast(v) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom ``Function.backward``: it runs in the autocast state its forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        dtype, cache = getattr(args[0], "_fwd_autocast", (None, True))
        inside, STATE.inside = getattr(STATE, "inside", 0), 0  # the engine's suspension does not apply here
        try:
            with autocast(device_type, dtype=dtype, enabled=dtype is not None, cache_enabled=cache):
                return bwd(*args, **kwargs)
        finally:
            STATE.inside = inside

    return decorate_bwd
