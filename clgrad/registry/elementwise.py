"""The elementwise math table: one line per op, a C expression for OpenCL and a numpy function for cpu.

C expressions read their inputs as ``a``, ``b``, ``c``, ``d`` and may use ``T``, the compute type, ``K(x)``
for a floating constant in the compute type (no double literal in a float kernel), plus the helpers defined
in ``kernels/elementwise.cl.mako``. The numpy function receives arrays already cast to the compute dtype and
must give the same answer as the C expression (float16 computes in float32). An op's parameters (elu's alpha,
softplus's beta...) are trailing operands passed as Python scalars, so they reach the kernel as scalar
arguments of the compute type and one kernel serves every parameter value.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EwOp:
    arity: int
    c: str  # C expression for floating compute types
    np: Callable
    c_int: str | None = None  # C expression for integer/bool compute types, when it differs
    kind: str = "any"  # "any", or "float": integer/bool inputs promote to the default float dtype
    predicate: bool = False  # result is bool
    bool_args: tuple = ()  # argument positions loaded as bool (where's condition)
    allow: str = "buif"  # compute-dtype kinds PyTorch implements the op for; others raise NotImplementedError
    c_bool: str | None = None  # C expression for a bool compute type, when it differs from c_int

    def c_expr(self, integral: bool, is_bool: bool = False) -> str:
        if is_bool and self.c_bool is not None:
            return self.c_bool
        return self.c_int if integral and self.c_int is not None else self.c


_INT = "bui"  # integer and bool kinds
_NUM = "uif"  # numbers, not bool


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
    # PyTorch's formula: a zero remainder keeps fmod's sign (that of a) where numpy gives copysign(0, b)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def _np_fmod(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # x % -1 is 0 (and INT_MIN % -1 would trap); x % 0 gives 0, as the OpenCL guard does
        with np.errstate(all="ignore"):
            safe = np.where((b == 0) | (b == -1), 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.fmod(a, safe))
    return np.fmod(a, b)


def _np_sign(a):
    # PyTorch's sign is (0 < a) - (a < 0): NaN gives 0, bool is the identity
    if a.dtype.kind == "b":
        return a
    return ((a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)).astype(a.dtype)


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


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _np_erf(a):
    # no scipy at run time: libm's erf per element, which is what the OpenCL builtin approximates
    return np.asarray(_erf(a)).astype(a.dtype)


def _np_erfc(a):
    return np.asarray(_erfc(a)).astype(a.dtype)


def _np_gelu(a):
    return 0.5 * a * (1 + _np_erf(a * a.dtype.type(math.sqrt(0.5))))


def _np_gelu_tanh(a):
    k = a.dtype.type(-2 * math.sqrt(2 / math.pi))
    return a / (1 + np.exp(k * (a + a.dtype.type(0.044715) * a * a * a)))


def _np_hardsigmoid(a):
    return np.minimum(np.maximum(a + 3, 0), 6) / a.dtype.type(6)


def _np_hardtanh(a, lo, hi):
    return np.where(a < lo, lo, np.where(a > hi, hi, a))


def _np_nan_to_num(a, nan, posinf, neginf):
    if a.dtype.kind != "f":
        return a
    return np.where(np.isnan(a), nan, np.where(np.isinf(a), np.where(a > 0, posinf, neginf), a))


def _np_logit(a, eps):
    # eps < 0 means no clamping (torch.logit's eps=None)
    lo, hi = eps, 1 - eps
    a = np.where(eps >= 0, np.where(a < lo, lo, np.where(a > hi, hi, a)), a)
    return np.log(a / (1 - a))


def _np_xlogy(a, b):
    return np.where(np.isnan(b), b, np.where(a == 0, a.dtype.type(0), a * np.log(b)))


def _np_lerp(a, b, w):
    # PyTorch's two-sided formula (as its vectorized CPU kernel: signed zeros agree): exact at both ends
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b + (w - 1) * (b - a))


def _np_isclose(equal_nan):
    def f(a, b, rtol, atol):
        err = np.abs(a - b)
        close = (a == b) | (np.isfinite(err) & (err <= atol + np.abs(rtol * b)))
        return close | (np.isnan(a) & np.isnan(b)) if equal_nan else close

    return f


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
    "floor_divide": EwOp(2, "py_floordiv(a, b)", _np_floor_divide, allow=_NUM),
    "trunc_divide": EwOp(2, "trunc(a / b)", _np_trunc_divide, c_int="trunc_div(a, b)", allow=_NUM),
    "remainder": EwOp(2, "py_remainder(a, b)", _np_remainder, allow=_NUM),
    "fmod": EwOp(2, "fmod(a, b)", _np_fmod, c_int="int_fmod(a, b)", allow=_NUM),
    "pow": EwOp(2, "pow(a, b)", _np_pow, c_int="int_pow(a, b)", allow=_NUM),
    "maximum": EwOp(2, "nan_max(a, b)", np.maximum, c_int="max(a, b)"),
    "minimum": EwOp(2, "nan_min(a, b)", np.minimum, c_int="min(a, b)"),
    "clamp": EwOp(3, "nan_min(nan_max(a, b), c)", _np_clamp, c_int="min(max(a, b), c)"),
    "where": EwOp(3, "a ? b : c", np.where, bool_args=(0,)),
    "atan2": EwOp(2, "atan2(a, b)", np.arctan2, kind="float"),
    "hypot": EwOp(2, "hypot(a, b)", np.hypot, kind="float", allow="f"),
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
    "bitwise_and": EwOp(2, "a & b", np.bitwise_and, allow=_INT),
    "bitwise_or": EwOp(2, "a | b", np.bitwise_or, allow=_INT),
    "bitwise_xor": EwOp(2, "a ^ b", np.bitwise_xor, allow=_INT),
    "bitwise_not": EwOp(1, "~a", np.invert, allow=_INT, c_bool="!a"),
    "lshift": EwOp(2, "shift_left(a, b)", _shift(np.left_shift), allow="ui"),
    "rshift": EwOp(2, "shift_right(a, b)", _shift(np.right_shift), allow="ui"),
    # unary math
    "neg": EwOp(1, "-a", np.negative, allow=_NUM),
    # the builtin abs (unsigned result, so abs(INT_MIN) wraps back to INT_MIN as in PyTorch); a hand-written
    # a < 0 ? -a : a becomes the llvm.abs intrinsic, which Oclgrind cannot run
    "abs": EwOp(1, "fabs(a)", np.abs, c_int="(T)abs(a)", allow=_NUM),
    "sign": EwOp(1, "(T)((a > 0) - (a < 0))", _np_sign, c_bool="a"),
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
    # integers: max(), not a select: Mesa 22.3's llvmpipe (rusticl) crashes running `a < 0 ? 0 : a` on char
    "relu": EwOp(1, "a < 0 ? (T)0 : a", lambda a: np.where(a < 0, a.dtype.type(0), a), c_int="max(a, (T)0)",
                 allow=_NUM),
    "reciprocal": EwOp(1, "(T)1 / a", np.reciprocal, kind="float"),
    "square": EwOp(1, "a * a", np.square),
    "floor": EwOp(1, "floor(a)", _float_only(np.floor), c_int="a", allow=_NUM),
    "ceil": EwOp(1, "ceil(a)", _float_only(np.ceil), c_int="a", allow=_NUM),
    "round": EwOp(1, "rint(a)", _float_only(np.rint), c_int="a", allow=_NUM),
    "trunc": EwOp(1, "trunc(a)", _float_only(np.trunc), c_int="a", allow=_NUM),
    "frac": EwOp(1, "a - trunc(a)", lambda a: a - np.trunc(a), allow="f"),
    "isnan": EwOp(1, "isnan(a)", np.isnan, c_int="0", predicate=True),
    "isinf": EwOp(1, "isinf(a)", np.isinf, c_int="0", predicate=True),
    "isfinite": EwOp(1, "isfinite(a)", np.isfinite, c_int="1", predicate=True),
    # activations; parameters are scalar operands (elu: scale, alpha * scale, input scale, as PyTorch's elu)
    "erf": EwOp(1, "erf(a)", _np_erf, kind="float"),
    "erfc": EwOp(1, "erfc(a)", _np_erfc, kind="float"),
    "gelu": EwOp(1, "K(0.5) * a * ((T)1 + erf(a * K(0.70710678118654752440)))", _np_gelu, allow="f"),
    # 0.5 * (1 + tanh(z)) written as sigmoid(2 z): exactly 0 far left (1 + tanh(z) cancels to an ulp of tanh)
    "gelu_tanh": EwOp(1, "a / ((T)1 + exp(K(-1.59576912160573071176) * (a + K(0.044715) * a * a * a)))",
                      _np_gelu_tanh, allow="f"),
    "silu": EwOp(1, "a / ((T)1 + exp(-a))", lambda a: a / (1 + np.exp(-a)), allow="f"),
    "elu": EwOp(4, "a <= 0 ? expm1(a * d) * c : a * b", lambda a, b, c, d: np.where(a <= 0, np.expm1(a * d) * c, a * b),
                allow="f"),
    "leaky_relu": EwOp(2, "a > 0 ? a : a * b", lambda a, b: np.where(a > 0, a, a * b), allow="f"),
    "softplus": EwOp(3, "a * b > c ? a : log1p(exp(a * b)) / b",
                     lambda a, b, c: np.where(a * b > c, a, np.log1p(np.exp(a * b)) / b), allow="f"),
    # a tie with a bound keeps the input (relu6(-0.0) is -0.0, as in PyTorch); NaN falls through
    "hardtanh": EwOp(3, "a < b ? b : (a > c ? c : a)", _np_hardtanh, allow=_NUM),
    "hardsigmoid": EwOp(1, "nan_min(nan_max(a + (T)3, (T)0), (T)6) / (T)6", _np_hardsigmoid, allow="f"),
    "hardswish": EwOp(1, "a * nan_min(nan_max(a + (T)3, (T)0), (T)6) / (T)6", lambda a: a * _np_hardsigmoid(a),
                      allow="f"),
    "mish": EwOp(1, "a * tanh(log1p(exp(a)))", lambda a: a * np.tanh(np.log1p(np.exp(a))), allow="f"),
    # min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|
    "logsigmoid": EwOp(1, "fmin(a, (T)0) - log1p(exp(-fabs(a)))",
                       lambda a: np.fmin(a, 0) - np.log1p(np.exp(-np.abs(a))), allow="f"),
    "nan_to_num": EwOp(4, "isnan(a) ? b : (isinf(a) ? (a > 0 ? c : d) : a)", _np_nan_to_num, c_int="a"),
    "logit": EwOp(2, "logit_eps(a, b)", _np_logit, kind="float"),
    "xlogy": EwOp(2, "isnan(b) ? b : (a == 0 ? (T)0 : a * log(b))", _np_xlogy, kind="float"),
    # NaN-ignoring max/min, and the one-sided clamps (the maximum/minimum kernels with clamp's gradient)
    "fmax": EwOp(2, "fmax(a, b)", np.fmax, c_int="max(a, b)"),
    "fmin": EwOp(2, "fmin(a, b)", np.fmin, c_int="min(a, b)"),
    "clamp_min": EwOp(2, "nan_max(a, b)", np.maximum, c_int="max(a, b)"),
    "clamp_max": EwOp(2, "nan_min(a, b)", np.minimum, c_int="min(a, b)"),
    # blends; addcmul/addcdiv's value is the scalar d
    "lerp": EwOp(3, "fabs(c) < K(0.5) ? a + c * (b - a) : b + (c - (T)1) * (b - a)", _np_lerp, allow="f"),
    "addcmul": EwOp(4, "a + d * b * c", lambda a, b, c, d: a + d * b * c, allow=_NUM),
    "addcdiv": EwOp(4, "a + d * b / c", lambda a, b, c, d: a + d * b / c, allow="f"),
    # a recurrent layer's step (nn.RNN): act(x_gates + (h @ W_hh^T + b_hh)), rounding like the composed ops, and
    # its backward: (grad from the output + grad from the next step) * act'(h)
    "rnn_tanh": EwOp(3, "tanh(a + (b + c))", lambda a, b, c: np.tanh(a + (b + c)), allow="f"),
    "rnn_relu": EwOp(3, "(a + (b + c)) < 0 ? (T)0 : a + (b + c)",
                     lambda a, b, c: np.maximum(a + (b + c), a.dtype.type(0)), allow="f"),
    "rnn_tanh_backward": EwOp(3, "(a + b) * ((T)1 - c * c)", lambda a, b, c: (a + b) * (1 - c * c), allow="f"),
    "rnn_relu_backward": EwOp(3, "c <= 0 ? (T)0 : a + b", lambda a, b, c: np.where(c <= 0, a.dtype.type(0), a + b),
                              allow="f"),
    # nn.LSTM's step on pre-activations i, f, g, o (sig = the sigmoid above): c' = sig(f) c + sig(i) tanh(g),
    # h' = sig(o) tanh(c'), rounding like the composed ops; and the backward of each gate (dc: c's total gradient)
    "rnn_pre": EwOp(3, "a + (b + c)", lambda a, b, c: a + (b + c), allow="f"),
    "lstm_c": EwOp(4, "(T)1 / ((T)1 + exp(-b)) * d + (T)1 / ((T)1 + exp(-a)) * tanh(c)",
                   lambda a, b, c, d: _sigmoid(b) * d + _sigmoid(a) * np.tanh(c), allow="f"),
    "lstm_h": EwOp(2, "(T)1 / ((T)1 + exp(-a)) * tanh(b)", lambda a, b: _sigmoid(a) * np.tanh(b), allow="f"),
    # do = dh tanh(c') sig'(o); dc = (dc_in) + dh sig(o) (1 - tanh(c')^2); di, df, dg; dc_prev = dc sig(f)
    "lstm_do": EwOp(3, "a * tanh(b) * ((T)1 / ((T)1 + exp(-c))) * ((T)1 - (T)1 / ((T)1 + exp(-c)))",
                    lambda a, b, c: a * np.tanh(b) * _sigmoid(c) * (1 - _sigmoid(c)), allow="f"),
    "lstm_dc": EwOp(4, "a + b * ((T)1 / ((T)1 + exp(-c))) * ((T)1 - tanh(d) * tanh(d))",
                    lambda a, b, c, d: a + b * _sigmoid(c) * (1 - np.tanh(d) ** 2), allow="f"),
    "lstm_di": EwOp(3, "a * tanh(b) * ((T)1 / ((T)1 + exp(-c))) * ((T)1 - (T)1 / ((T)1 + exp(-c)))",
                    lambda a, b, c: a * np.tanh(b) * _sigmoid(c) * (1 - _sigmoid(c)), allow="f"),
    "lstm_df": EwOp(3, "a * b * ((T)1 / ((T)1 + exp(-c))) * ((T)1 - (T)1 / ((T)1 + exp(-c)))",
                    lambda a, b, c: a * b * _sigmoid(c) * (1 - _sigmoid(c)), allow="f"),
    "lstm_dg": EwOp(3, "a * ((T)1 / ((T)1 + exp(-b))) * ((T)1 - tanh(c) * tanh(c))",
                    lambda a, b, c: a * _sigmoid(b) * (1 - np.tanh(c) ** 2), allow="f"),
    "lstm_dcprev": EwOp(2, "a * ((T)1 / ((T)1 + exp(-b)))", lambda a, b: a * _sigmoid(b), allow="f"),
    # rtol, atol are c, d
    "isclose": EwOp(4, "close_to(a, b, c, d)", _np_isclose(False), predicate=True, allow="f"),
    "isclose_nan": EwOp(4, "close_to(a, b, c, d) || (isnan(a) && isnan(b))", _np_isclose(True), predicate=True,
                        allow="f"),
}
