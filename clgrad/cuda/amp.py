"""``torch.cuda.amp``'s deprecated names: ``autocast(...)`` is ``clgrad.autocast("cuda", ...)`` and ``GradScaler(...)``
is ``clgrad.amp.GradScaler("cuda", ...)``: as in a CPU-only PyTorch, both warn that CUDA is not available and run
disabled (a program's AMP code runs unchanged; use ``clgrad.autocast("opencl")`` for mixed precision on OpenCL)."""
from __future__ import annotations

from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):  # noqa: N801 - torch.cuda.amp.autocast
    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return _autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")
