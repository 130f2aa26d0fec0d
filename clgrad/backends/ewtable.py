"""The elementwise math table: one line per op, a C expression for OpenCL and a numpy function for cpu.

C expressions read their inputs as ``a``, ``b``, ``c`` and may use ``T``, the compute type, plus the
helpers defined in ``kernels/elementwise.cl.mako``. The numpy function receives arrays already cast
to the compute dtype and must give the same answer as the C expression (float16 computes in float32).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class EwOp:
    arity: int
    c: str  # C expression for floating compute types
    np: Callable
    c_int: str | None = None  # C expression for integer/bool compute types, when it differs
    kind: str = "any"  # "any"; "float": int inputs promote to float; "int": integers/bool only
    predicate: bool = False  # result is bool
    bool_args: tuple = ()  # argument positions loaded as bool (where's condition)

    def c_expr(self, integral: bool) -> str:
        return self.c_int if integral and self.c_int is not None else self.c


def _np_floor_divide(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # C-style guard for division by zero and INT_MIN / -1, matching the OpenCL helper
        with np.errstate(all="ignore"):
            safe = np.where(b == 0, 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.floor_divide(a, safe))
    return np.floor_divide(a, b)


def _np_trunc_divide(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        q = _np_floor_divide(a, b)
        with np.errstate(all="ignore"):
            inexact = (b != 0) & (a - q * b != 0)
        return np.where(inexact & ((a < 0) != (b < 0)), q + 1, q)
    return np.trunc(a / b)


def _np_remainder(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        with np.errstate(all="ignore"):
            safe = np.where(b == 0, 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.remainder(a, safe))
    return np.remainder(a, b)


def _np_pow(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # integers to negative powers: 1 and -1 stay defined, everything else becomes 0 (as PyTorch on GPU)
        a, b = np.broadcast_arrays(a, b)
        neg = b < 0
        with np.errstate(all="ignore"):
            out = np.power(a, np.where(neg, 0, b))
        odd = (b % 2) != 0
        special = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(out.dtype)
        return np.where(neg, special, out)
    return np.power(a, b)


def _float_only(f):
    """Rounding functions are the identity on integers (numpy would return floats)."""
    return lambda a: a if a.dtype.kind in "iub" else f(a)


def _np_clamp(a, lo, hi):
    return np.minimum(np.maximum(a, lo), hi)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _shift(op):
    def f(a, b):
        bits = a.dtype.itemsize * 8
        out = op(a, np.clip(b, 0, bits - 1).astype(a.dtype))
        return np.where((b < 0) | (b >= bits), 0 if op is np.left_shift else np.where(a < 0, -1, 0), out).astype(a.dtype)

    return f


OPS: dict[str, EwOp] = {
    # copy/cast and fill: the output conversion does the work
    "identity": EwOp(1, "a", lambda a: a),
    # arithmetic
    "add": EwOp(2, "a + b", np.add),
    "sub": EwOp(2, "a - b", np.subtract),
    "mul": EwOp(2, "a * b", np.multiply),
    "div": EwOp(2, "a / b", np.true_divide, kind="float"),
    "floor_divide": EwOp(2, "py_floordiv(a, b)", _np_floor_divide),
    "trunc_divide": EwOp(2, "trunc(a / b)", _np_trunc_divide, c_int="trunc_div(a, b)"),
    "remainder": EwOp(2, "py_remainder(a, b)", _np_remainder),
    "fmod": EwOp(2, "fmod(a, b)", np.fmod, c_int="(b == 0 ? (T)0 : (T)(a % b))"),
    "pow": EwOp(2, "pow(a, b)", _np_pow, c_int="int_pow(a, b)"),
    "maximum": EwOp(2, "nan_max(a, b)", np.maximum, c_int="max(a, b)"),
    "minimum": EwOp(2, "nan_min(a, b)", np.minimum, c_int="min(a, b)"),
    "clamp": EwOp(3, "nan_min(nan_max(a, b), c)", _np_clamp, c_int="min(max(a, b), c)"),
    "where": EwOp(3, "a ? b : c", np.where, bool_args=(0,)),
    "atan2": EwOp(2, "atan2(a, b)", np.arctan2, kind="float"),
    "hypot": EwOp(2, "hypot(a, b)", np.hypot, kind="float"),
    "copysign": EwOp(2, "copysign(a, b)", np.copysign, kind="float"),
    # comparisons
    "eq": EwOp(2, "a == b", np.equal, predicate=True),
    "ne": EwOp(2, "a != b", np.not_equal, predicate=True),
    "lt": EwOp(2, "a < b", np.less, predicate=True),
    "le": EwOp(2, "a <= b", np.less_equal, predicate=True),
    "gt": EwOp(2, "a > b", np.greater, predicate=True),
    "ge": EwOp(2, "a >= b", np.greater_equal, predicate=True),
    # logical and bitwise
    "logical_and": EwOp(2, "(a != 0) && (b != 0)", np.logical_and, predicate=True),
    "logical_or": EwOp(2, "(a != 0) || (b != 0)", np.logical_or, predicate=True),
    "logical_xor": EwOp(2, "(a != 0) != (b != 0)", np.logical_xor, predicate=True),
    "logical_not": EwOp(1, "a == 0", np.logical_not, predicate=True),
    "bitwise_and": EwOp(2, "a & b", np.bitwise_and, kind="int"),
    "bitwise_or": EwOp(2, "a | b", np.bitwise_or, kind="int"),
    "bitwise_xor": EwOp(2, "a ^ b", np.bitwise_xor, kind="int"),
    "bitwise_not": EwOp(1, "~a", np.invert, kind="int"),
    "lshift": EwOp(2, "shift_left(a, b)", _shift(np.left_shift), kind="int"),
    "rshift": EwOp(2, "shift_right(a, b)", _shift(np.right_shift), kind="int"),
    # unary math
    "neg": EwOp(1, "-a", np.negative),
    "abs": EwOp(1, "fabs(a)", np.abs, c_int="(T)(a < 0 ? -a : a)"),
    "sign": EwOp(1, "isnan(a) ? a : (T)((a > 0) - (a < 0))", np.sign, c_int="(T)((a > 0) - (a < 0))"),
    "sqrt": EwOp(1, "sqrt(a)", np.sqrt, kind="float"),
    "rsqrt": EwOp(1, "rsqrt(a)", lambda a: 1 / np.sqrt(a), kind="float"),
    "exp": EwOp(1, "exp(a)", np.exp, kind="float"),
    "exp2": EwOp(1, "exp2(a)", np.exp2, kind="float"),
    "expm1": EwOp(1, "expm1(a)", np.expm1, kind="float"),
    "log": EwOp(1, "log(a)", np.log, kind="float"),
    "log2": EwOp(1, "log2(a)", np.log2, kind="float"),
    "log10": EwOp(1, "log10(a)", np.log10, kind="float"),
    "log1p": EwOp(1, "log1p(a)", np.log1p, kind="float"),
    "sin": EwOp(1, "sin(a)", np.sin, kind="float"),
    "cos": EwOp(1, "cos(a)", np.cos, kind="float"),
    "tan": EwOp(1, "tan(a)", np.tan, kind="float"),
    "asin": EwOp(1, "asin(a)", np.arcsin, kind="float"),
    "acos": EwOp(1, "acos(a)", np.arccos, kind="float"),
    "atan": EwOp(1, "atan(a)", np.arctan, kind="float"),
    "sinh": EwOp(1, "sinh(a)", np.sinh, kind="float"),
    "cosh": EwOp(1, "cosh(a)", np.cosh, kind="float"),
    "tanh": EwOp(1, "tanh(a)", np.tanh, kind="float"),
    "sigmoid": EwOp(1, "(T)1 / ((T)1 + exp(-a))", _sigmoid, kind="float"),
    "relu": EwOp(1, "a < 0 ? (T)0 : a", lambda a: np.where(a < 0, a.dtype.type(0), a)),
    "reciprocal": EwOp(1, "(T)1 / a", np.reciprocal, kind="float"),
    "square": EwOp(1, "a * a", np.square),
    "floor": EwOp(1, "floor(a)", _float_only(np.floor), c_int="a"),
    "ceil": EwOp(1, "ceil(a)", _float_only(np.ceil), c_int="a"),
    "round": EwOp(1, "rint(a)", _float_only(np.rint), c_int="a"),
    "trunc": EwOp(1, "trunc(a)", _float_only(np.trunc), c_int="a"),
    "frac": EwOp(1, "a - trunc(a)", lambda a: a - np.trunc(a), kind="float"),
    "isnan": EwOp(1, "isnan(a)", np.isnan, c_int="0", predicate=True),
    "isinf": EwOp(1, "isinf(a)", np.isinf, c_int="0", predicate=True),
    "isfinite": EwOp(1, "isfinite(a)", np.isfinite, c_int="1", predicate=True),
}
