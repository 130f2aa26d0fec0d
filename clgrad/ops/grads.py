"""Backward rules of the elementwise table, one line per op, written in clgrad ops (so they are
differentiable themselves: ``create_graph=True`` gives higher-order gradients).

Each rule takes (grad, inputs..., out) and returns one gradient per input (None where there is none).
Inputs may be Python scalars (an op's parameters, or a number operand); their gradients are dropped by the
caller. Subgradient conventions follow PyTorch's derivatives.yaml: relu'(0) = 0, abs'(0) = 0, clamp passes
the gradient at its bounds while hardtanh (and relu6) stops it there, maximum splits ties, fmax gives them to
the first input, leaky_relu and elu take the negative branch at 0. Masks select with ``where`` rather than
multiply, so an infinite incoming gradient gives 0 (not NaN) where the op is flat, as PyTorch's do.
"""
from __future__ import annotations

import math

from . import math as M
from .pointwise import is_tensor

_2_SQRTPI = 2 / math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2 / math.pi)
_GELU_KAPPA = 0.044715


def _masked(g, keep):
    """``g`` where ``keep`` holds, else 0."""
    return M.where(keep, g, 0.0)


def _cond(c):
    """A where-condition as bool (a deprecated uint8 one warned at forward already)."""
    return c if c.dtype.kind == "b" else c != 0


def _zero(g):
    from .creation import zeros_like

    return zeros_like(g)


def _isnan(x):
    return x.isnan() if is_tensor(x) else math.isnan(x)


def _log(x):
    if is_tensor(x):
        return x.log()
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _pow(g, a, b, out):
    # d/da: exponent 0 gives 0 even at a == 0 (where b * a**(b-1) would be 0 * inf)
    if not is_tensor(a):
        ga = None
    elif is_tensor(b):
        ga = M.where(b == 0, 0.0, g * b * a ** (b - 1))
    else:
        ga = _zero(g) if b == 0 else g * b * a ** (b - 1)
    if not is_tensor(b):
        return ga, None
    # d/db a**b = a**b * log(a); PyTorch masks a == 0 (with b >= 0) to 0 instead of nan
    gb = g * out * _log(a)
    zero_base = (a == 0) if is_tensor(a) else a == 0
    if is_tensor(a) or zero_base:
        gb = M.where(zero_base & (b >= 0), 0.0, gb)
    return ga, gb


def _max_min(pick):
    def rule(g, a, b, out):
        lose_a, lose_b = (a < b, a > b) if pick == "max" else (a > b, a < b)
        shared = M.where(a == b, g / 2, g)  # NaN goes to both, as in PyTorch
        return M.where(lose_a, 0.0, shared), M.where(lose_b, 0.0, shared) if is_tensor(b) else None

    return rule


def _fmax_fmin(pick):
    def rule(g, a, b, out):
        # the first input wins ties, and wins over a NaN second input
        take_a = ((a >= b) if pick == "max" else (a <= b)) | _isnan(b)
        return M.where(take_a, g, 0.0), M.where(take_a, 0.0, g) if is_tensor(b) else None

    return rule


def _clamp(g, x, lo, hi, out):
    # PyTorch's clamp_backward_min_max: when lo > hi the result is hi, and its gradient goes to hi
    gx = _masked(g, (x >= lo) & (x <= hi))
    glo = _masked(g, (x < lo) & (lo < hi)) if is_tensor(lo) else None
    ghi = _masked(g, (x > hi) | (hi < lo)) if is_tensor(hi) else None
    return gx, glo, ghi


def _elu(g, x, scale, negcoef, input_scale, out):
    # PyTorch's elu_backward on the input: the negative branch includes 0
    return M.where(x <= 0, g * (x * input_scale).exp() * (negcoef * input_scale), g * scale), None, None, None


def _gelu(g, x, out):
    cdf = 0.5 * (1 + (x * _SQRT1_2).erf())
    pdf = (-0.5 * x * x).exp() * (_2_SQRTPI * _SQRT1_2 * 0.5)
    return (g * (cdf + x * pdf),)


def _gelu_tanh(g, x, out):
    t = ((x + _GELU_KAPPA * x * x * x) * _GELU_BETA).tanh()
    inner_grad = _GELU_BETA * (1 + 3 * _GELU_KAPPA * x * x)
    return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner_grad),)


def _softplus(g, x, beta, threshold, out):
    z = x * beta
    return M.where(z > threshold, g, g * z.sigmoid()), None, None


def _hardtanh(g, x, lo, hi, out):
    return M.where((x <= lo) | (x >= hi), 0.0, g), None, None


def _hardswish(g, x, out):
    # PyTorch's hardswish_backward: flat from -3 down, linear from 3 up (both kinks take the outer side)
    return (M.where(x <= -3, 0.0, M.where(x < 3, g * (x / 3 + 0.5), g)),)


def _mish(g, x, out):
    t = M.softplus(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


def _logit(g, x, eps, out):
    grad = g / (x * (1 - x))
    if eps < 0:  # no clamping: outside [0, 1] the result is NaN, and so is its gradient
        return M.where((x < 0) | (x > 1), math.nan, grad), None
    return M.where((x < eps) | (x > 1 - eps), 0.0, grad), None


def _xlogy(g, x, y, out):
    gx = None
    if is_tensor(x):
        gx = M.where((x == 0) & (y <= 0), 0.0, M.FUNCS["xlogy"](g, y))
    return gx, g * x / y if is_tensor(y) else None


def _lerp(g, a, b, w, out):
    gw = g * (b - a) if is_tensor(w) else None
    return g * (1 - w), g * w, gw


# rules that read the op's output (saved at forward), and rules that need none of its inputs
USES_OUT = {"pow", "hypot", "copysign", "sqrt", "rsqrt", "exp", "exp2", "expm1", "tan", "tanh", "sigmoid", "relu",
            "reciprocal"}
NO_INPUTS = {"identity", "add", "sub", "neg", "sqrt", "rsqrt", "exp", "exp2", "expm1", "tan", "tanh", "sigmoid",
             "relu", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "frac"}

GRADS = {
    "identity": lambda g, a, out: (g,),
    "add": lambda g, a, b, out: (g, g),
    "sub": lambda g, a, b, out: (g, -g),
    "mul": lambda g, a, b, out: (g * b if is_tensor(a) else None, g * a if is_tensor(b) else None),
    "div": lambda g, a, b, out: (g / b if is_tensor(a) else None, -g * a / (b * b) if is_tensor(b) else None),
    "pow": _pow,
    "maximum": _max_min("max"),
    "minimum": _max_min("min"),
    "fmax": _fmax_fmin("max"),
    "fmin": _fmax_fmin("min"),
    "clamp": _clamp,
    "clamp_min": lambda g, x, lo, out: (_masked(g, x >= lo), _masked(g, x < lo) if is_tensor(lo) else None),
    "clamp_max": lambda g, x, hi, out: (_masked(g, x <= hi), _masked(g, x > hi) if is_tensor(hi) else None),
    "where": lambda g, c, a, b, out: (None, M.where(_cond(c), g, 0.0), M.where(_cond(c), 0.0, g)),
    "atan2": lambda g, a, b, out: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
    "hypot": lambda g, a, b, out: (g * a / out, g * b / out),
    "fmod": lambda g, a, b, out: (g, -g * (a / b).trunc()),
    "remainder": lambda g, a, b, out: (g, -g * (a / b).floor()),
    "copysign": lambda g, a, b, out: (g * (out / a).where(a != 0, 0.0), None),
    "xlogy": _xlogy,
    "lerp": _lerp,
    "addcmul": lambda g, a, t1, t2, v, out: (g, g * t2 * v, g * t1 * v, None),
    "addcdiv": lambda g, a, t1, t2, v, out: (g, g * v / t2, -g * v * t1 / (t2 * t2), None),
    "neg": lambda g, a, out: (-g,),
    "abs": lambda g, a, out: (g * a.sign(),),
    "sqrt": lambda g, a, out: (g / (2 * out),),
    "rsqrt": lambda g, a, out: (-0.5 * g * out * out * out,),
    "exp": lambda g, a, out: (g * out,),
    "exp2": lambda g, a, out: (g * out * math.log(2.0),),
    "expm1": lambda g, a, out: (g * (out + 1),),
    "log": lambda g, a, out: (g / a,),
    "log2": lambda g, a, out: (g / (a * math.log(2.0)),),
    "log10": lambda g, a, out: (g / (a * math.log(10.0)),),
    "log1p": lambda g, a, out: (g / (a + 1),),
    "sin": lambda g, a, out: (g * a.cos(),),
    "cos": lambda g, a, out: (-g * a.sin(),),
    "tan": lambda g, a, out: (g * (1 + out * out),),
    "asin": lambda g, a, out: (g * (1 - a * a).rsqrt(),),
    "acos": lambda g, a, out: (-g * (1 - a * a).rsqrt(),),
    "atan": lambda g, a, out: (g / (1 + a * a),),
    "sinh": lambda g, a, out: (g * a.cosh(),),
    "cosh": lambda g, a, out: (g * a.sinh(),),
    "tanh": lambda g, a, out: (g * (1 - out * out),),
    "sigmoid": lambda g, a, out: (g * out * (1 - out),),
    "relu": lambda g, a, out: (M.where(out <= 0, 0.0, g),),  # threshold_backward: NaN passes the gradient
    "reciprocal": lambda g, a, out: (-g * out * out,),
    "square": lambda g, a, out: (2 * g * a,),
    "sign": lambda g, a, out: (_zero(g),),
    "floor": lambda g, a, out: (_zero(g),),
    "ceil": lambda g, a, out: (_zero(g),),
    "round": lambda g, a, out: (_zero(g),),
    "trunc": lambda g, a, out: (_zero(g),),
    "frac": lambda g, a, out: (g,),
    "erf": lambda g, a, out: (g * (-a * a).exp() * _2_SQRTPI,),
    "erfc": lambda g, a, out: (g * (-a * a).exp() * -_2_SQRTPI,),
    "nan_to_num": lambda g, a, nan, posinf, neginf, out: (_masked(g, a.isfinite()), None, None, None),
    "logit": _logit,
    # activations
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": lambda g, a, out: (g * a.sigmoid() * (1 + a * (1 - a.sigmoid())),),
    "elu": _elu,
    "leaky_relu": lambda g, a, slope, out: (M.where(a > 0, g, g * slope), None),
    "softplus": _softplus,
    "hardtanh": _hardtanh,
    "hardsigmoid": lambda g, a, out: (M.where((a > -3) & (a < 3), g / 6, 0.0),),
    "hardswish": _hardswish,
    "mish": _mish,
    "logsigmoid": lambda g, a, out: (g * (-a).sigmoid(),),
}
