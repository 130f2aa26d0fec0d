"""Backward rules of the elementwise table, one line per op, written in clgrad ops (so they are
differentiable themselves: ``create_graph=True`` gives higher-order gradients).

Each rule takes (grad, inputs..., out) and returns one gradient per input (None where there is none).
Inputs may be Python scalars; their gradients are dropped by the caller. Subgradient conventions follow
PyTorch: relu'(0) = 0, abs'(0) = 0, clamp passes the gradient at the bounds, maximum splits ties.
"""
from __future__ import annotations

import math


def _pow(g, a, b, out):
    ga = g * b * a ** (b - 1) if not (isinstance(b, (int, float)) and b == 0) else g * 0
    if not hasattr(b, "_storage"):
        return ga, None
    # d/db a**b = a**b * log(a); PyTorch masks a == 0 (with b >= 0) to 0 instead of nan
    gb = (g * out * a.log()) if hasattr(a, "_storage") else g * out * math.log(a)
    if hasattr(a, "_storage"):
        gb = gb.where(~((a == 0) & (b >= 0)), 0.0)
    return ga, gb


def _max_min(pick):
    def rule(g, a, b, out):
        win_a = (a > b) if pick == "max" else (a < b)
        tie = (a == b)
        ga = g * win_a + g * tie * 0.5
        gb = g * (~win_a & ~tie) + g * tie * 0.5 if hasattr(b, "_storage") else None
        return ga, gb

    return rule


def _clamp(g, x, lo, hi, out):
    inside = (x >= lo) & (x <= hi)
    return (g * inside, g * (x < lo) if hasattr(lo, "_storage") else None,
            g * (x > hi) if hasattr(hi, "_storage") else None)


# rules that read the op's output (saved at forward), and rules that need none of its inputs
USES_OUT = {"pow", "hypot", "copysign", "sqrt", "rsqrt", "exp", "exp2", "expm1", "tan", "tanh", "sigmoid", "relu",
            "reciprocal"}
NO_INPUTS = {"identity", "add", "sub", "neg", "sqrt", "rsqrt", "exp", "exp2", "expm1", "tan", "tanh", "sigmoid",
             "relu", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "frac"}

GRADS = {
    "identity": lambda g, a, out: (g,),
    "add": lambda g, a, b, out: (g, g),
    "sub": lambda g, a, b, out: (g, -g),
    "mul": lambda g, a, b, out: (g * b, g * a),
    "div": lambda g, a, b, out: (g / b, -g * a / (b * b)),
    "pow": _pow,
    "maximum": _max_min("max"),
    "minimum": _max_min("min"),
    "clamp": _clamp,
    "where": lambda g, c, a, b, out: (None, g.where(c, 0.0), g.where(~c, 0.0) if hasattr(c, "_storage") else None),
    "atan2": lambda g, a, b, out: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
    "hypot": lambda g, a, b, out: (g * a / out, g * b / out),
    "fmod": lambda g, a, b, out: (g, -g * (a / b).trunc()),
    "remainder": lambda g, a, b, out: (g, -g * (a / b).floor()),
    "copysign": lambda g, a, b, out: (g * (out / a).where(a != 0, 0.0), None),
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
    "relu": lambda g, a, out: (g * (out > 0),),
    "reciprocal": lambda g, a, out: (-g * out * out,),
    "square": lambda g, a, out: (2 * g * a,),
    "sign": lambda g, a, out: (g * 0,),
    "floor": lambda g, a, out: (g * 0,),
    "ceil": lambda g, a, out: (g * 0,),
    "round": lambda g, a, out: (g * 0,),
    "trunc": lambda g, a, out: (g * 0,),
    "frac": lambda g, a, out: (g,),
}
