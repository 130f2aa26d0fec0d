"""Process-wide switches torch programs set through ``torch.*``: deterministic algorithms, thread counts, float32
matmul precision. They sit here, below every layer, so a backend may consult them.

What they change in clgrad:
- ``use_deterministic_algorithms``: recorded only. clgrad's matmul, convolution, pooling and reduction kernels sum
  in a fixed order, so they give the same bits on every run of the same device; the float accumulations that use
  atomics on OpenCL (``index_put_(accumulate=True)``, ``index_add_``, ``scatter_add_``, the backward of advanced
  indexing and of ``embedding``, weighted ``bincount`` on some devices) are order-dependent, as on CUDA. Where
  torch raises for such an op in deterministic mode, clgrad does not; on cpu every op is deterministic.
- ``set_num_threads``: numpy's BLAS sizes its thread pool at start-up (``OMP_NUM_THREADS``); with ``threadpoolctl``
  installed the new limit is applied to it, otherwise it is recorded only.
- ``set_float32_matmul_precision``: recorded only; float32 products are always computed in float32 (no TF32).
"""
from __future__ import annotations

import os
import warnings

_deterministic = {"enabled": False, "warn_only": False}
_threads = {"intra": None, "interop": None}
_MODES = {"default": 0, "warn": 1, "error": 2}
_precision = ["highest"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record torch's deterministic-algorithms switch (see the module docstring for what clgrad does with it)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _deterministic.update(enabled=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0/'default': off; 1/'warn': warn only; 2/'error': on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2



def _cpu_threads() -> int:
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _positive(n, fn: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{fn}(): argument 'int' (position 1) must be int, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def set_num_threads(n: int) -> None:
    """The cpu backend's thread count: applied to numpy's BLAS through threadpoolctl where it is installed."""
    _threads["intra"] = _positive(n, "set_num_threads")
    try:
        import threadpoolctl  # optional: without it numpy's pool keeps the size it started with
    except ImportError:
        return
    threadpoolctl.threadpool_limits(n)


def get_num_threads() -> int:
    return _threads["intra"] or _cpu_threads()


def set_num_interop_threads(n: int) -> None:
    """Recorded only: clgrad runs no inter-op thread pool."""
    _threads["interop"] = _positive(n, "set_num_interop_threads")


def get_num_interop_threads() -> int:
    return _threads["interop"] or _cpu_threads()


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded only: clgrad's float32 products are always computed in float32."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _precision[0]
