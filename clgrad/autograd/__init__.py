"""``clgrad.autograd``: the define-by-run tape, PyTorch's Function API, grad modes and gradcheck."""
from __future__ import annotations

from ..tensor import is_tensor
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .nodes import ANOMALY, FunctionCtx

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "Variable", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck", "gradgradcheck",
    "GradcheckError", "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
]


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802 - the old API's name
    """Deprecated alias kept so old tutorials run: returns ``data``, a Tensor, as it is."""
    if not is_tensor(data):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    t = data
    if requires_grad:
        t.requires_grad_(True)
    return t


class set_detect_anomaly:
    """``set_detect_anomaly(True)``: forward calls record their traceback, and a backward that returns NaN
    raises naming its node (``Function 'SqrtBackward0' returned nan values in its 0th output.``).
    Works called plainly (switches the mode now) and as a context manager (restores it on exit)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = dict(ANOMALY)
        ANOMALY["enabled"], ANOMALY["check_nan"] = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        ANOMALY.update(self._prev)
        return False


class detect_anomaly(set_detect_anomaly):  # noqa: N801 - PyTorch's name
    """``with detect_anomaly():`` is ``with set_detect_anomaly(True):``."""

    def __init__(self, check_nan: bool = True):
        super().__init__(True, check_nan)


def is_anomaly_enabled() -> bool:
    return ANOMALY["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    return ANOMALY["check_nan"]
