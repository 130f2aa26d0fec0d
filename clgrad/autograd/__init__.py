"""``clgrad.autograd``: the define-by-run tape, PyTorch's Function API, grad modes and gradcheck."""
from __future__ import annotations

from .engine import run_backward
from .function import ANOMALY, Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "Variable", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck", "gradgradcheck",
    "GradcheckError", "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
]


def _as_tuple(x):
    if x is None:
        return None
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _make_grads(outputs, grad_outputs):
    from ..ops.creation import ones_like

    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None and i < len(grad_outputs) else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = ones_like(out)
        elif not hasattr(g, "_storage"):
            from ..ops.creation import full_like

            g = full_like(out, g)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape!r} and output[{i}] has a shape of "
                f"{out.shape!r}."
            )
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    tensors = _as_tuple(tensors)
    grads = _make_grads(tensors, _as_tuple(grad_tensors))
    retain = create_graph if retain_graph is None else retain_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grads, retain, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is left alone)."""
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, _as_tuple(grad_outputs))
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outputs, grads, retain, create_graph, inputs=inputs, accumulate=False)
    out = []
    for i, (x, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                from ..ops.creation import zeros_like

                g = zeros_like(x)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior."
                )
        out.append(g)
    return tuple(out)


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802 - the old API's name
    """Deprecated alias kept so old tutorials run: returns ``data`` as a Tensor."""
    from ..ops.creation import tensor

    t = data if hasattr(data, "_storage") else tensor(data)
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
