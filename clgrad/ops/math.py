"""Public elementwise functions: ``clgrad.add``, ``clgrad.exp``, ``clgrad.where`` … built on ``pointwise.apply``."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..registry.elementwise import OPS
from ..tensor import is_tensor
from . import pointwise as P

# ops whose record asks for generated bindings: clgrad.<name>(input[, other], *, out=None), plus (ops/methods.py)
# Tensor.<name> and Tensor.<name>_; the others have a hand-written front end below or are internal kernels
GENERATED = [name for name, e in OPS.items() if e.public == "auto"]


def _generated(name):
    if OPS[name].arity == 1:
        def fn(input, *, out=None):
            return P.apply(name, input, out=out)

        fn.__doc__ = f"Elementwise ``{name}``: ``clgrad.{name}(x)``."
    else:
        def fn(input, other, *, out=None):
            return P.apply(name, input, other, out=out)

        fn.__doc__ = f"Elementwise ``{name}`` with broadcasting: ``clgrad.{name}(x, y)``."
    fn.__name__ = name
    return fn


FUNCS = {name: _generated(name) for name in GENERATED}
FUNCS |= {alias: FUNCS[name] for name in GENERATED for alias in OPS[name].aliases}  # PyTorch's longer names


def _scaled(input, other, alpha, op: str):
    """``alpha * other`` in the dtype ``input op other`` computes in, after PyTorch's alpha checks."""
    P.check_operands(op, (input, other))
    rt = D.result_type(input, other)
    if isinstance(alpha, bool) and rt is not D.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if rt.kind != "f" and not isinstance(alpha, (int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if is_tensor(other):
        other = P.apply("mul", other, alpha, compute=rt)
    else:
        other = other * alpha
    return other, rt


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting and type promotion: ``clgrad.add(x, y, alpha=2)``."""
    if type(alpha) is int and alpha == 1:
        return P.apply("add", input, other, out=out)
    other, rt = _scaled(input, other, alpha, "add")
    return P.apply("add", input, other, out=out, compute=rt)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other`` with broadcasting and type promotion: ``clgrad.sub(x, 1)``."""
    if type(alpha) is int and alpha == 1:
        return P.apply("sub", input, other, out=out)
    other, rt = _scaled(input, other, alpha, "sub")
    return P.apply("sub", input, other, out=out, compute=rt)


def div(input, other, *, rounding_mode=None, out=None):
    """True division (ints give floats); ``rounding_mode`` 'trunc' or 'floor' keeps the dtype."""
    if rounding_mode is None:
        return P.apply("div", input, other, out=out)
    if rounding_mode == "floor":
        return P.apply("floor_divide", input, other, out=out)
    if rounding_mode == "trunc":
        return P.apply("trunc_divide", input, other, out=out)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: ``clgrad.rsub(x, 1)`` is ``1 - x``."""
    return sub(other, input, alpha=alpha)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or scalars, broadcast)."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) (nonzero) is not implemented yet")
    return P.apply("where", condition, input, other)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - PyTorch's names
    """Limit values to [min, max]; either bound may be None, a number or a tensor: ``x.clamp(min=0)``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [b for b in (min, max) if b is not None]
    P.check_operands("clamp", (input, *bounds))
    compute = D.result_type(input, *bounds)
    if compute is D.bool and not (len(bounds) == 1 and is_tensor(bounds[0])):
        # PyTorch has bool kernels only for a one-sided tensor bound (maximum/minimum)
        raise P.unsupported("clamp", compute, input.device if is_tensor(input) else "cpu")
    # one-sided clamps are the maximum/minimum kernels, but with clamp's gradient (ties go to the input)
    if max is None:
        return P.apply("clamp_min", input, min, out=out, compute=compute)
    if min is None:
        return P.apply("clamp_max", input, max, out=out, compute=compute)
    return P.apply("clamp", input, min, max, out=out, compute=compute)


def clamp_min(input, min, *, out=None):  # noqa: A002 - PyTorch's names
    """``clamp(input, min=min)``: ``clgrad.clamp_min(x, 0)``."""
    return clamp(input, min=min, out=out)


def clamp_max(input, max, *, out=None):  # noqa: A002
    """``clamp(input, max=max)``: ``clgrad.clamp_max(x, 1)``."""
    return clamp(input, max=max, out=out)


# ---- ops with parameters ---------------------------------------------------------------------------
def _in_dtype(op, input, *params, out=None, check=None):
    """``op`` computed in ``input``'s dtype (or its float type, for float-valued ops): the scalar parameters
    take no part in promotion, so an activation of an integer tensor raises as PyTorch's does."""
    P.check_operands(check or op, (input,))
    compute = P.compute_dtype(check or op, [input], input.device)
    return P.apply(op, input, *params, out=out, compute=compute)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced (by default with 0 and the dtype's largest and lowest finite values)."""
    P.check_operands("nan_to_num", (input,))
    if input.dtype.kind == "f":
        info = np.finfo(input.dtype.np)
        nan = 0.0 if nan is None else nan
        posinf = float(info.max) if posinf is None else posinf
        neginf = float(info.min) if neginf is None else neginf
    else:  # integers are finite: a copy
        nan = posinf = neginf = 0
    return P.apply("nan_to_num", input, nan, posinf, neginf, out=out, compute=input.dtype)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``, with ``p`` clamped to [eps, 1 - eps] when ``eps`` is given: ``clgrad.logit(p, 1e-6)``."""
    return _in_dtype("logit", input, -1.0 if eps is None else eps, out=out)  # eps < 0: no clamping


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``, weight a number or a tensor (broadcast): ``clgrad.lerp(a, b, 0.25)``."""
    if not is_tensor(end):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not {type(end).__name__}")
    P.check_operands("lerp", (input,))
    for name, x in (("end", end), ("weight", weight)):
        # PyTorch doesn't promote here; only a 0-dim weight may have another dtype
        if is_tensor(x) and x.dtype is not input.dtype and not (name == "weight" and x.dim() == 0):
            raise RuntimeError(f"expected dtype {input.dtype.cpp_name} for `{name}` but got dtype {x.dtype.cpp_name}")
    compute = P.compute_dtype("lerp", [input], input.device)
    return P.apply("lerp", input, end, weight, out=out, compute=compute)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2`` with broadcasting: ``clgrad.addcmul(x, g, g, value=-0.5)``."""
    P.check_operands("addcmul", (input, tensor1, tensor2))
    compute = P.compute_dtype("addcmul", [input, tensor1, tensor2], input.device)
    return P.apply("addcmul", input, tensor1, tensor2, value, out=out, compute=compute)


_ADDCDIV_INT = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes."
)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2`` with broadcasting: ``clgrad.addcdiv(p, m, v.sqrt() + eps, value=-lr)``."""
    P.check_operands("addcdiv", (input, tensor1, tensor2))
    if all(not is_tensor(t) or t.dtype.kind != "f" for t in (tensor1, tensor2)):
        raise RuntimeError(_ADDCDIV_INT)
    compute = P.compute_dtype("addcdiv", [input, tensor1, tensor2], input.device)
    return P.apply("addcdiv", input, tensor1, tensor2, value, out=out, compute=compute)


# ---- closeness -------------------------------------------------------------------------------------
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (bool), as ``torch.isclose``."""
    for pos, (name, x) in enumerate((("input", input), ("other", other)), 1):
        if not is_tensor(x):
            raise TypeError(f"isclose(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.scalar_name} did not match {other.dtype.scalar_name}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tol}")
    if input.dtype.kind != "f":
        if rtol == 0 and atol == 0:
            return P.apply("eq", input, other)
        # PyTorch measures integer and bool differences in the default float dtype
        input, other = input.to(D.get_default_dtype()), other.to(D.get_default_dtype())
    return P.apply("isclose_nan" if equal_nan else "isclose", input, other, rtol, atol, compute=input.dtype)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (``isclose``): ``clgrad.allclose(a, b)``."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and equal elements (NaN is never equal)."""
    if input.shape != other.shape:
        return False
    return bool(P.apply("eq", input, other).all().item())


# ---- activations: clgrad.nn.functional's names -----------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _target(input, inplace):
    return input if inplace else None


def gelu(input, approximate="none"):
    """Gaussian error linear unit, exact (erf) or ``approximate='tanh'``: ``F.gelu(x)``."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _in_dtype("gelu" if approximate == "none" else "gelu_tanh", input, check="gelu")


def silu(input, inplace=False):
    """``x * sigmoid(x)``: ``F.silu(x)``."""
    return _in_dtype("silu", input, out=_target(input, inplace))


def elu(input, alpha=1.0, inplace=False):
    """``x`` for x > 0, else ``alpha * (exp(x) - 1)``: ``F.elu(x, alpha=0.5)``."""
    return _in_dtype("elu", input, 1.0, alpha, 1.0, out=_target(input, inplace))


def selu(input, inplace=False):
    """Scaled ELU with the self-normalizing constants: ``F.selu(x)``."""
    return _in_dtype("elu", input, _SELU_SCALE, _SELU_ALPHA * _SELU_SCALE, 1.0, out=_target(input, inplace))


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``: ``F.celu(x, alpha=2.0)``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _in_dtype("elu", input, 1.0, alpha, 1.0 / alpha, out=_target(input, inplace))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` for x > 0, else ``negative_slope * x``: ``F.leaky_relu(x, 0.2)``."""
    return _in_dtype("leaky_relu", input, negative_slope, out=_target(input, inplace))


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``: ``F.softplus(x)``."""
    return _in_dtype("softplus", input, beta, threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to [min_val, max_val] (no gradient at the bounds): ``F.hardtanh(x)``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if is_tensor(input) and input.dtype is D.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if is_tensor(input) and input.dtype is D.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _in_dtype("hardtanh", input, min_val, max_val, out=_target(input, inplace))


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``: ``F.relu6(x)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """``clamp(x / 6 + 1 / 2, 0, 1)``: ``F.hardsigmoid(x)``."""
    return _in_dtype("hardsigmoid", input, out=_target(input, inplace))


def hardswish(input, inplace=False):
    """``x * hardsigmoid(x)``: ``F.hardswish(x)``."""
    return _in_dtype("hardswish", input, out=_target(input, inplace))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``: ``F.mish(x)``."""
    return _in_dtype("mish", input, out=_target(input, inplace))


def logsigmoid(input):
    """``log(sigmoid(x))``, computed without overflow for large ``|x|``: ``F.logsigmoid(x)``."""
    return _in_dtype("logsigmoid", input)


def relu(input, inplace=False):
    """``max(x, 0)``: ``F.relu(x)``."""
    return FUNCS["relu"](input, out=_target(input, inplace))


FUNCS |= {"clamp_min": clamp_min, "clamp_max": clamp_max, "nan_to_num": nan_to_num, "logit": logit, "lerp": lerp,
          "addcmul": addcmul, "addcdiv": addcdiv}
# clgrad.X functions that are Tensor methods without an in-place form
NO_INPLACE_FUNCS = {"isclose": isclose, "allclose": allclose, "equal": equal}
# clgrad.X functions that are not Tensor methods
TORCH_FUNCS = {"selu": selu, "celu": celu, "selu_": lambda input: selu(input, True),
               "celu_": lambda input, alpha=1.0: celu(input, alpha, True), "relu_": lambda input: relu(input, True)}
# clgrad.nn.functional names
FUNCTIONAL_ACTIVATIONS = {
    "gelu": gelu, "silu": silu, "elu": elu, "selu": selu, "celu": celu, "leaky_relu": leaky_relu,
    "softplus": softplus, "hardtanh": hardtanh, "relu6": relu6, "hardsigmoid": hardsigmoid, "hardswish": hardswish,
    "mish": mish, "logsigmoid": logsigmoid, "relu": relu, "sigmoid": FUNCS["sigmoid"], "tanh": FUNCS["tanh"],
    "elu_": lambda input, alpha=1.0: elu(input, alpha, True), "selu_": TORCH_FUNCS["selu_"],
    "celu_": TORCH_FUNCS["celu_"], "relu_": TORCH_FUNCS["relu_"],
    "leaky_relu_": lambda input, negative_slope=0.01: leaky_relu(input, negative_slope, True),
    "hardtanh_": lambda input, min_val=-1.0, max_val=1.0: hardtanh(input, min_val, max_val, True),
}
