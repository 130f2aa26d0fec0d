"""The elementwise ops: one record per op holds everything about it.

A record (``EwOp``) gives
- the kernel: a C expression for the OpenCL template (``c``, and ``c_int``/``c_bool`` where integers or bools
  differ) and its numpy reference for the cpu backend (``np``), which must give the same answer;
- the dtype rules: ``kind`` ("float": integer inputs promote to the default float dtype), ``allow`` (the compute
  dtype kinds PyTorch implements the op for; others raise NotImplementedError), ``predicate`` (bool result),
  ``bool_args`` (operands loaded as bool);
- the gradient: ``grad(g, *inputs, out) -> one gradient per input`` written with Tensor methods (so it is
  differentiable itself and this leaf module imports no layer above it), or ``NONDIFF``; ``saves`` says what the
  rule reads, so autograd keeps only that; ``reads`` (per input, which inputs its gradient reads) lets the forward
  save only what the needed gradients use, as PyTorch's mul and div do;
- the bindings: ``public`` ("auto": ``clgrad.<name>``, ``Tensor.<name>`` and ``Tensor.<name>_`` are generated;
  "custom": ``ops/math.py`` writes the front end, for parameters and PyTorch's argument checks; "internal": a
  kernel for the layers only), ``aliases`` (PyTorch's other names), ``node`` (the autograd node's name, or a
  function of the operands picking one of PyTorch's overload names);
- ``bundle``: whether the kernel is compiled together with the other ops of its arity (program bundles);
- ``sample``: the inputs the generated tests (``tests/ops/test_registry.py``) draw: forward against ``np``,
  gradcheck of ``grad``, on every device.

Building the table fails when a float op has neither a gradient rule nor ``NONDIFF``.

C expressions read their inputs as ``a``, ``b``, ``c``, ``d`` and may use ``T``, the compute type, ``K(x)`` for a
floating constant in the compute type (no double literal in a float kernel), plus the helpers defined in
``kernels/elementwise.cl.mako``. The numpy function receives arrays already cast to the compute dtype (float16
computes in float32). An op's parameters (elu's alpha, softplus's beta...) are trailing operands passed as Python
scalars, so they reach the kernel as scalar arguments of the compute type and one kernel serves every value.

Subgradient conventions follow PyTorch's derivatives.yaml: relu'(0) = 0, abs'(0) = 0, clamp passes the gradient at
its bounds while hardtanh (and relu6) stops it there, maximum splits ties, fmax gives them to the first input,
leaky_relu and elu take the negative branch at 0. Masks select (``where``, ``masked_fill``: one kernel each) rather than
multiply, so an infinite incoming gradient gives 0 (not NaN) where the op is flat, as PyTorch's do.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import numpy_ref as R
from . import special as S
from . import special_cephes as SC
from . import special_fns as F
from .pow import POW_BITS as _POW_BITS
from .pow import np_pow_bits as _np_pow_bits
from .pow import pow_scalar_kernel  # noqa: F401 - ops/pointwise picks pow's kernel through the registry

NONDIFF = "nondiff"  # the op has no gradient (piecewise-constant, or an internal kernel differentiated elsewhere)
_NUMBERS = (int, float, bool, np.number, np.bool_)


class RegistryError(Exception):
    """A record that breaks the registry's rules (a float op without a gradient rule...)."""


@dataclass(frozen=True)
class Sample:
    """Test inputs of an op: each tensor operand uniform in its ``domain`` (one (low, high) pair for all, or one
    per operand), followed by the scalar ``params``. ``grad=False`` skips the gradient check (e.g. where finite
    differences cross a discontinuity everywhere)."""

    domain: tuple = (-2.0, 2.0)
    params: tuple = ()
    grad: bool = True

    def domains(self, n: int) -> tuple:
        return self.domain if isinstance(self.domain[0], tuple) else (self.domain,) * n


@dataclass(frozen=True)
class EwOp:
    arity: int  # operands, parameters included
    c: str  # C expression for floating compute types
    np: Callable
    grad: Callable | str | None = None
    c_int: str | None = None  # C expression for integer/bool compute types, when it differs
    kind: str = "any"  # "any", or "float": integer/bool inputs promote to the default float dtype
    predicate: bool = False  # result is bool
    bool_args: tuple = ()  # argument positions loaded as bool (where's condition)
    allow: str = "buif"  # compute-dtype kinds PyTorch implements the op for; others raise NotImplementedError
    c_bool: str | None = None  # C expression for a bool compute type, when it differs from c_int
    saves: str = "inputs"  # what ``grad`` reads: "inputs", "out", "both" or "none"
    reads: tuple | None = None  # per input, the inputs its gradient reads (None: all)
    public: str = "auto"  # "auto", "custom" or "internal" (see the module docstring)
    aliases: tuple = ()
    node: str | Callable | None = None  # None: f"{Camel}Backward0"
    bundle: bool = True
    int_div_check: bool = False  # integer kernels flag a zero divisor (b): RuntimeError('ZeroDivisionError') later
    sample: Sample = field(default_factory=Sample)

    def c_expr(self, integral: bool, is_bool: bool = False) -> str:
        if is_bool and self.c_bool is not None:
            return self.c_bool
        return self.c_int if integral and self.c_int is not None else self.c

    @property
    def differentiable(self) -> bool:
        return self.grad is not None and self.grad is not NONDIFF


def _t(x) -> bool:
    """Whether an operand is a tensor (operands are tensors or Python numbers)."""
    return x is not None and not isinstance(x, _NUMBERS)


# ---- gradient rules longer than a line (written with Tensor methods) ----------------------------------------
_2_SQRTPI = 2 / math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2 / math.pi)
_GELU_KAPPA = 0.044715


def _masked(g, keep):
    """``g`` where ``keep`` holds, else 0."""
    return g.where(keep, 0.0)


def _zero(g):
    return g.new_zeros(g.shape)


def _cond(c):
    """A where-condition as bool (a deprecated uint8 one warned at forward already)."""
    return c if c.dtype.kind == "b" else c != 0


def _log(x):
    if _t(x):
        return x.log()
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _pow(g, a, b, out):
    # d/da: exponent 0 gives 0 even at a == 0 (where b * a**(b-1) would be 0 * inf)
    if not _t(a):
        ga = None
    elif _t(b):
        ga = (g * b * a ** (b - 1)).masked_fill(b == 0, 0.0)
    else:
        ga = _zero(g) if b == 0 else g * b * a ** (b - 1)
    if not _t(b):
        return ga, None
    # d/db a**b = a**b * log(a); PyTorch masks a == 0 (with b >= 0) to 0 instead of nan
    gb = g * out * _log(a)
    zero_base = a == 0
    if _t(a) or zero_base:
        gb = gb.masked_fill(zero_base & (b >= 0), 0.0)
    return ga, gb


def _max_min(pick):
    def rule(g, a, b, out):
        lose_a, lose_b = (a < b, a > b) if pick == "max" else (a > b, a < b)
        shared = (g / 2).where(a == b, g)  # NaN goes to both, as in PyTorch
        return shared.masked_fill(lose_a, 0.0), shared.masked_fill(lose_b, 0.0) if _t(b) else None

    return rule


def _fmax_fmin(pick):
    def rule(g, a, b, out):
        # the first input wins ties, and wins over a NaN second input
        take_a = ((a >= b) if pick == "max" else (a <= b)) | (b.isnan() if _t(b) else math.isnan(b))
        return g.where(take_a, 0.0), g.masked_fill(take_a, 0.0) if _t(b) else None

    return rule


def _clamp(g, x, lo, hi, out):
    # PyTorch's clamp_backward_min_max: when lo > hi the result is hi, and its gradient goes to hi
    gx = _masked(g, (x >= lo) & (x <= hi))
    glo = _masked(g, (x < lo) & (lo < hi)) if _t(lo) else None
    ghi = _masked(g, (x > hi) | (hi < lo)) if _t(hi) else None
    return gx, glo, ghi


def _elu(g, x, scale, negcoef, input_scale, out):
    # PyTorch's elu_backward on the input: the negative branch includes 0
    return (g * (x * input_scale).exp() * (negcoef * input_scale)).where(x <= 0, g * scale), None, None, None


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
    return g.where(z > threshold, g * z.sigmoid()), None, None


def _hardswish(g, x, out):
    # PyTorch's hardswish_backward: flat from -3 down, linear from 3 up (both kinks take the outer side)
    return ((g * (x / 3 + 0.5)).where(x < 3, g).masked_fill(x <= -3, 0.0),)


def _mish(g, x, out):
    t = x.logaddexp(0.0).tanh()  # tanh(softplus(x)), softplus as log(e^x + e^0) without overflow
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


def _logit(g, x, eps, out):
    grad = g / (x * (1 - x))
    if eps < 0:  # no clamping: outside [0, 1] the result is NaN, and so is its gradient
        return grad.masked_fill((x < 0) | (x > 1), math.nan), None
    return grad.masked_fill((x < eps) | (x > 1 - eps), 0.0), None


def _xlogy(g, x, y, out):
    gx = g.xlogy(y).masked_fill((x == 0) & (y <= 0), 0.0) if _t(x) else None
    return gx, g * x / y if _t(y) else None


def _logaddexp(g, a, b, out):
    # d/da log(e^a + e^b) = e^(a - out): exact where one term dominates; ties split the gradient in half
    return g * (a - out).exp() if _t(a) else None, g * (b - out).exp() if _t(b) else None


def _pow_node(base, exponent):
    if not _t(base):
        return "PowBackward2"
    return "PowBackward1" if _t(exponent) else None


def _clamp_node(x, *bounds):
    # clamp(min=, max=) with number bounds is PyTorch's ClampBackward1, with tensor bounds ClampBackward0;
    # clamp(min=...) alone runs the clamp_min kernel here but is the same PyTorch node
    return "ClampBackward0" if any(_t(b) for b in bounds) else "ClampBackward1"


def _sub_node(a, b):
    return "RsubBackward1" if not _t(a) else None


def _zero_grad(g, *_):
    return (_zero(g),) + (None,) * (len(_) - 2)


_INT = "bui"  # integer and bool kinds
_NUM = "uif"  # numbers, not bool
_POS = Sample(domain=(0.2, 3.0))
_UNIT = Sample(domain=(-0.9, 0.9))
_NO_A = Sample(domain=((0.5, 3.0), (0.2, 4.0)), grad=False)  # no gradient in a: tests/ops/test_special_extra.py
_FLAT = Sample(grad=False)  # gradient 0 almost everywhere (checked by the zero-gradient test instead)
_POLY = {False: Sample(domain=((-1.2, 1.2), (0.0, 9.0))), True: Sample(domain=((-0.1, 1.1), (0.0, 9.0)))}  # x, degree
_SIG = "(T)1 / ((T)1 + exp(-{0}))"  # sigmoid in C, as the LSTM kernels spell it
_LSTM_DSIG = EwOp(3, f"a * tanh(b) * {_SIG.format('c')} * ((T)1 - {_SIG.format('c')})",
                  lambda a, b, c: a * np.tanh(b) * R.sigmoid(c) * (1 - R.sigmoid(c)), allow="f", grad=NONDIFF,
                  public="internal", bundle=False)


def _internal(arity, c, fn):
    """A recurrent layer's fused step: a kernel nn.RNN/LSTM call inside their own Functions."""
    return EwOp(arity, c, fn, allow="f", grad=NONDIFF, public="internal", bundle=False)


OPS: dict[str, EwOp] = {
    # copy/cast and fill: the output conversion does the work
    "identity": EwOp(1, "a", lambda a: a, grad=lambda g, a, out: (g,), saves="none", public="internal"),
    # arithmetic
    "add": EwOp(2, "a + b", np.add, grad=lambda g, a, b, out: (g, g), saves="none", public="custom"),
    "sub": EwOp(2, "a - b", np.subtract, grad=lambda g, a, b, out: (g, -g), saves="none", public="custom",
                node=_sub_node),
    "mul": EwOp(2, "a * b", np.multiply, reads=((1,), (0,)),
                grad=lambda g, a, b, out: (g * b if b is not None else None, g * a if a is not None else None)),
    "div": EwOp(2, "a / b", np.true_divide, kind="float", public="custom", reads=((1,), (0, 1)),
                grad=lambda g, a, b, out: (g / b if b is not None else None,
                                           -g * a / (b * b) if a is not None and b is not None else None)),
    "floor_divide": EwOp(2, "py_floordiv(a, b)", R.np_floor_divide, allow=_NUM, grad=NONDIFF, int_div_check=True),
    "trunc_divide": EwOp(2, "trunc(a / b)", R.np_trunc_divide, c_int="trunc_div(a, b)", allow=_NUM, grad=NONDIFF,
                         public="custom", int_div_check=True),
    "remainder": EwOp(2, "py_remainder(a, b)", R.np_remainder, allow=_NUM, int_div_check=True,
                      grad=lambda g, a, b, out: (g, -g * (a / b).floor()),
                      sample=Sample(domain=((0.1, 0.9), (1.0, 2.0)))),
    "fmod": EwOp(2, "fmod(a, b)", R.np_fmod, c_int="int_fmod(a, b)", allow=_NUM, int_div_check=True,
                 grad=lambda g, a, b, out: (g, -g * (a / b).trunc()), sample=Sample(domain=((0.1, 0.9), (1.0, 2.0)))),
    "pow": EwOp(2, "pow_f(a, b)", R.np_pow, c_int="int_pow(a, b)", allow=_NUM, grad=_pow, saves="both", node=_pow_node,
                sample=Sample(domain=((0.5, 2.0), (-2.0, 2.0)))),
    # pow's constant-exponent kernels (pow_scalar_kernel picks them; gradients are pow's)
    "pow_cube": EwOp(1, "a * a * a", lambda a: a * a * a, allow="f", grad=NONDIFF, public="internal", bundle=False),
    "pow_inv_square": EwOp(1, "K(1.0) / (a * a)", lambda a: 1 / (a * a), allow="f", grad=NONDIFF,
                           public="internal", bundle=False),
    "pow_bits": EwOp(2, _POW_BITS, _np_pow_bits, allow="f", grad=NONDIFF, public="internal", bundle=False,
                     sample=Sample(domain=((-2.0, 2.0), (0.0, 15.9)))),
    "pow_inv_bits": EwOp(2, f"K(1.0) / ({_POW_BITS})", lambda a, b: 1 / _np_pow_bits(a, b), allow="f", grad=NONDIFF,
                         public="internal", bundle=False, sample=Sample(domain=((0.5, 2.0), (0.0, 15.9)))),
    "maximum": EwOp(2, "nan_max(a, b)", np.maximum, c_int="max(a, b)", grad=_max_min("max")),
    "minimum": EwOp(2, "nan_min(a, b)", np.minimum, c_int="min(a, b)", grad=_max_min("min")),
    "clamp": EwOp(3, "nan_min(nan_max(a, b), c)", R.np_clamp, c_int="min(max(a, b), c)", grad=_clamp,
                  public="custom", node=_clamp_node, sample=Sample(domain=((-2.0, 2.0), (-3.0, -1.0), (1.0, 3.0)))),
    "where": EwOp(3, "a ? b : c", np.where, bool_args=(0,), public="custom",
                  grad=lambda g, c, a, b, out: (None, g.where(_cond(c), 0.0), g.masked_fill(_cond(c), 0.0))),
    "atan2": EwOp(2, "atan2(a, b)", np.arctan2, kind="float",
                  grad=lambda g, a, b, out: (g * b / (a * a + b * b), -g * a / (a * a + b * b))),
    "hypot": EwOp(2, "hypot(a, b)", np.hypot, kind="float", allow="f", saves="both",
                  grad=lambda g, a, b, out: (g * a / out, g * b / out)),
    "copysign": EwOp(2, "copysign(a, b)", np.copysign, kind="float", saves="both",
                     grad=lambda g, a, b, out: ((g * (out / a)).where(a != 0, 0.0), None)),
    "logaddexp": EwOp(2, "(isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp(-fabs(a - b)))", F.np_logaddexp,
                      kind="float", allow="f",
                      grad=_logaddexp, saves="both"),
    # comparisons
    "eq": EwOp(2, "a == b", np.equal, predicate=True),
    "ne": EwOp(2, "a != b", np.not_equal, predicate=True),
    "lt": EwOp(2, "a < b", np.less, predicate=True),
    "le": EwOp(2, "a <= b", np.less_equal, predicate=True, aliases=("less_equal",)),
    "gt": EwOp(2, "a > b", np.greater, predicate=True),
    "ge": EwOp(2, "a >= b", np.greater_equal, predicate=True, aliases=("greater_equal",)),
    # logical and bitwise
    "logical_and": EwOp(2, "(a != 0) && (b != 0)", np.logical_and, predicate=True),
    "logical_or": EwOp(2, "(a != 0) || (b != 0)", np.logical_or, predicate=True),
    "logical_xor": EwOp(2, "(a != 0) != (b != 0)", np.logical_xor, predicate=True),
    "logical_not": EwOp(1, "a == 0", np.logical_not, predicate=True),
    "bitwise_and": EwOp(2, "a & b", np.bitwise_and, allow=_INT),
    "bitwise_or": EwOp(2, "a | b", np.bitwise_or, allow=_INT),
    "bitwise_xor": EwOp(2, "a ^ b", np.bitwise_xor, allow=_INT),
    "bitwise_not": EwOp(1, "~a", np.invert, allow=_INT, c_bool="!a"),
    "lshift": EwOp(2, "shift_left(a, b)", R.shift(np.left_shift), allow="ui", aliases=("bitwise_left_shift",)),
    "rshift": EwOp(2, "shift_right(a, b)", R.shift(np.right_shift), allow="ui", aliases=("bitwise_right_shift",)),
    # unary math
    "neg": EwOp(1, "-a", np.negative, allow=_NUM, grad=lambda g, a, out: (-g,), saves="none"),
    # the builtin abs (unsigned result, so abs(INT_MIN) wraps back to INT_MIN as in PyTorch); a hand-written
    # a < 0 ? -a : a becomes the llvm.abs intrinsic, which Oclgrind cannot run
    "abs": EwOp(1, "fabs(a)", np.abs, c_int="(T)abs(a)", allow=_NUM, grad=lambda g, a, out: (g * a.sign(),)),
    "sign": EwOp(1, "(T)((a > 0) - (a < 0))", R.np_sign, c_bool="a", grad=_zero_grad, saves="none", sample=_FLAT),
    "sqrt": EwOp(1, "sqrt(a)", np.sqrt, kind="float", grad=lambda g, a, out: (g / (2 * out),), saves="out",
                 sample=_POS),
    "rsqrt": EwOp(1, "rsqrt(a)", lambda a: 1 / np.sqrt(a), kind="float", saves="out", sample=_POS,
                  grad=lambda g, a, out: (-0.5 * g * out * out * out,)),
    "exp": EwOp(1, "exp(a)", np.exp, kind="float", grad=lambda g, a, out: (g * out,), saves="out"),
    "exp2": EwOp(1, "exp2(a)", np.exp2, kind="float", grad=lambda g, a, out: (g * out * math.log(2.0),), saves="out"),
    "expm1": EwOp(1, "expm1(a)", np.expm1, kind="float", grad=lambda g, a, out: (g * (out + 1),), saves="out"),
    "log": EwOp(1, "log(a)", np.log, kind="float", grad=lambda g, a, out: (g / a,), sample=_POS),
    "log2": EwOp(1, "log2(a)", np.log2, kind="float", grad=lambda g, a, out: (g / (a * math.log(2.0)),), sample=_POS),
    "log10": EwOp(1, "log10(a)", np.log10, kind="float", grad=lambda g, a, out: (g / (a * math.log(10.0)),),
                  sample=_POS),
    "log1p": EwOp(1, "log1p(a)", np.log1p, kind="float", grad=lambda g, a, out: (g / (a + 1),), sample=_POS),
    "sin": EwOp(1, "sin(a)", np.sin, kind="float", grad=lambda g, a, out: (g * a.cos(),)),
    "cos": EwOp(1, "cos(a)", np.cos, kind="float", grad=lambda g, a, out: (-g * a.sin(),)),
    "tan": EwOp(1, "tan(a)", np.tan, kind="float", grad=lambda g, a, out: (g * (1 + out * out),), saves="out",
                sample=Sample(domain=(-1.2, 1.2))),
    "asin": EwOp(1, "asin(a)", np.arcsin, kind="float", grad=lambda g, a, out: (g * (1 - a * a).rsqrt(),),
                 sample=_UNIT),
    "acos": EwOp(1, "acos(a)", np.arccos, kind="float", grad=lambda g, a, out: (-g * (1 - a * a).rsqrt(),),
                 sample=_UNIT),
    "atan": EwOp(1, "atan(a)", np.arctan, kind="float", grad=lambda g, a, out: (g / (1 + a * a),)),
    "sinh": EwOp(1, "sinh(a)", np.sinh, kind="float", grad=lambda g, a, out: (g * a.cosh(),)),
    "cosh": EwOp(1, "cosh(a)", np.cosh, kind="float", grad=lambda g, a, out: (g * a.sinh(),)),
    "tanh": EwOp(1, "tanh(a)", np.tanh, kind="float", grad=lambda g, a, out: (g * (1 - out * out),), saves="out"),
    "sigmoid": EwOp(1, _SIG.format("a"), R.sigmoid, kind="float", saves="out",
                    grad=lambda g, a, out: (g * out * (1 - out),)),
    # integers: max(), not a select: Mesa 22.3's llvmpipe (rusticl) crashes running `a < 0 ? 0 : a` on char;
    # the gradient is threshold_backward's: NaN passes it
    "relu": EwOp(1, "a < 0 ? (T)0 : a", lambda a: np.where(a < 0, a.dtype.type(0), a), c_int="max(a, (T)0)",
                 allow=_NUM, grad=lambda g, a, out: (g.masked_fill(out <= 0, 0.0),), saves="out"),
    "reciprocal": EwOp(1, "(T)1 / a", np.reciprocal, kind="float", grad=lambda g, a, out: (-g * out * out,),
                       saves="out", sample=_POS),
    "square": EwOp(1, "a * a", np.square, grad=lambda g, a, out: (2 * g * a,), node="PowBackward0"),
    "floor": EwOp(1, "floor(a)", R.float_only(np.floor), c_int="a", allow=_NUM, grad=_zero_grad, saves="none",
                  sample=_FLAT),
    "ceil": EwOp(1, "ceil(a)", R.float_only(np.ceil), c_int="a", allow=_NUM, grad=_zero_grad, saves="none",
                 sample=_FLAT),
    "round": EwOp(1, "rint(a)", R.float_only(np.rint), c_int="a", allow=_NUM, grad=_zero_grad, saves="none",
                  sample=_FLAT),
    "trunc": EwOp(1, "trunc(a)", R.float_only(np.trunc), c_int="a", allow=_NUM, grad=_zero_grad, saves="none",
                  sample=_FLAT),
    "frac": EwOp(1, "a - trunc(a)", lambda a: a - np.trunc(a), allow="f", grad=lambda g, a, out: (g,), saves="none"),
    "isnan": EwOp(1, "isnan(a)", np.isnan, c_int="0", predicate=True),
    "isinf": EwOp(1, "isinf(a)", np.isinf, c_int="0", predicate=True),
    "isfinite": EwOp(1, "isfinite(a)", np.isfinite, c_int="1", predicate=True),
    "erf": EwOp(1, "erf(a)", R.np_erf, kind="float", grad=lambda g, a, out: (g * (-a * a).exp() * _2_SQRTPI,)),
    "erfc": EwOp(1, "erfc(a)", R.np_erfc, kind="float", grad=lambda g, a, out: (g * (-a * a).exp() * -_2_SQRTPI,)),
    # activations; parameters are scalar operands (elu: scale, alpha * scale, input scale, as PyTorch's elu)
    "gelu": EwOp(1, "K(0.5) * a * ((T)1 + erf(a * K(0.70710678118654752440)))", R.np_gelu, allow="f", grad=_gelu,
                 public="custom"),
    # 0.5 * (1 + tanh(z)) written as sigmoid(2 z): exactly 0 far left (1 + tanh(z) cancels to an ulp of tanh)
    "gelu_tanh": EwOp(1, "a / ((T)1 + exp(K(-1.59576912160573071176) * (a + K(0.044715) * a * a * a)))",
                      R.np_gelu_tanh, allow="f", grad=_gelu_tanh, public="custom"),
    "silu": EwOp(1, "a / ((T)1 + exp(-a))", lambda a: a / (1 + np.exp(-a)), allow="f", public="custom",
                 grad=lambda g, a, out: (g * a.sigmoid() * (1 + a * (1 - a.sigmoid())),)),
    "elu": EwOp(4, "a <= 0 ? expm1(a * d) * c : a * b", lambda a, b, c, d: np.where(a <= 0, np.expm1(a * d) * c, a * b),
                allow="f", grad=_elu, public="custom", sample=Sample(params=(1.0, 1.5, 0.5))),
    "leaky_relu": EwOp(2, "a > 0 ? a : a * b", lambda a, b: np.where(a > 0, a, a * b), allow="f", public="custom",
                       grad=lambda g, a, slope, out: (g.where(a > 0, g * slope), None), sample=Sample(params=(0.1,))),
    "softplus": EwOp(3, "a * b > c ? a : log1p(exp(a * b)) / b",
                     lambda a, b, c: np.where(a * b > c, a, np.log1p(np.exp(a * b)) / b), allow="f", grad=_softplus,
                     public="custom", sample=Sample(params=(2.0, 3.0))),
    # a tie with a bound keeps the input (relu6(-0.0) is -0.0, as in PyTorch); NaN falls through
    "hardtanh": EwOp(3, "a < b ? b : (a > c ? c : a)", R.np_hardtanh, allow=_NUM, public="custom",
                     grad=lambda g, x, lo, hi, out: (g.masked_fill((x <= lo) | (x >= hi), 0.0), None, None),
                     sample=Sample(params=(-1.0, 1.0))),
    "hardsigmoid": EwOp(1, "nan_min(nan_max(a + (T)3, (T)0), (T)6) / (T)6", R.np_hardsigmoid, allow="f",
                        public="custom", grad=lambda g, a, out: ((g / 6).where((a > -3) & (a < 3), 0.0),),
                        sample=Sample(domain=(-4.0, 4.0))),
    "hardswish": EwOp(1, "a * nan_min(nan_max(a + (T)3, (T)0), (T)6) / (T)6", lambda a: a * R.np_hardsigmoid(a),
                      allow="f", grad=_hardswish, public="custom", sample=Sample(domain=(-4.0, 4.0))),
    "mish": EwOp(1, "a * tanh(log1p(exp(a)))", lambda a: a * np.tanh(np.log1p(np.exp(a))), allow="f", grad=_mish,
                 public="custom"),
    # min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|
    "logsigmoid": EwOp(1, "fmin(a, (T)0) - log1p(exp(-fabs(a)))",
                       lambda a: np.fmin(a, 0) - np.log1p(np.exp(-np.abs(a))), allow="f", public="custom",
                       grad=lambda g, a, out: (g * (-a).sigmoid(),)),
    "nan_to_num": EwOp(4, "isnan(a) ? b : (isinf(a) ? (a > 0 ? c : d) : a)", R.np_nan_to_num, c_int="a",
                       public="custom", grad=lambda g, a, nan, posinf, neginf, out: (_masked(g, a.isfinite()),) + (None,) * 3,
                       sample=Sample(params=(0.0, 1e3, -1e3))),
    "logit": EwOp(2, "logit_eps(a, b)", R.np_logit, kind="float", grad=_logit, public="custom",
                  sample=Sample(domain=(0.1, 0.9), params=(0.05,))),
    "xlogy": EwOp(2, "isnan(b) ? b : (a == 0 ? (T)0 : a * log(b))", R.np_xlogy, kind="float", grad=_xlogy,
                  sample=Sample(domain=((-2.0, 2.0), (0.2, 3.0)))),
    # NaN-ignoring max/min, and the one-sided clamps (the maximum/minimum kernels with clamp's gradient)
    "fmax": EwOp(2, "fmax(a, b)", np.fmax, c_int="max(a, b)", grad=_fmax_fmin("max")),
    "fmin": EwOp(2, "fmin(a, b)", np.fmin, c_int="min(a, b)", grad=_fmax_fmin("min")),
    "clamp_min": EwOp(2, "nan_max(a, b)", np.maximum, c_int="max(a, b)", public="custom", node=_clamp_node,
                      grad=lambda g, x, lo, out: (_masked(g, x >= lo), _masked(g, x < lo) if _t(lo) else None)),
    "clamp_max": EwOp(2, "nan_min(a, b)", np.minimum, c_int="min(a, b)", public="custom", node=_clamp_node,
                      grad=lambda g, x, hi, out: (_masked(g, x <= hi), _masked(g, x > hi) if _t(hi) else None)),
    # blends; addcmul/addcdiv's value is the scalar d
    "lerp": EwOp(3, "fabs(c) < K(0.5) ? a + c * (b - a) : b + (c - (T)1) * (b - a)", R.np_lerp, allow="f",
                 public="custom", grad=lambda g, a, b, w, out: (g * (1 - w), g * w, g * (b - a) if _t(w) else None),
                 sample=Sample(domain=((-2.0, 2.0), (-2.0, 2.0), (0.0, 1.0)))),
    "addcmul": EwOp(4, "a + d * b * c", lambda a, b, c, d: a + d * b * c, allow=_NUM, public="custom",
                    grad=lambda g, a, t1, t2, v, out: (g, g * t2 * v, g * t1 * v, None), sample=Sample(params=(0.5,))),
    "addcdiv": EwOp(4, "a + d * b / c", lambda a, b, c, d: a + d * b / c, allow="f", public="custom",
                    grad=lambda g, a, t1, t2, v, out: (g, g * v / t2, -g * v * t1 / (t2 * t2), None),
                    sample=Sample(domain=((-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0)), params=(0.5,))),
    # a recurrent layer's step (nn.RNN): act(x_gates + (h @ W_hh^T + b_hh)), rounding like the composed ops, and
    # its backward: (grad from the output + grad from the next step) * act'(h)
    "rnn_tanh": _internal(3, "tanh(a + (b + c))", lambda a, b, c: np.tanh(a + (b + c))),
    "rnn_relu": _internal(3, "(a + (b + c)) < 0 ? (T)0 : a + (b + c)",
                          lambda a, b, c: np.maximum(a + (b + c), a.dtype.type(0))),
    "rnn_tanh_backward": _internal(3, "(a + b) * ((T)1 - c * c)", lambda a, b, c: (a + b) * (1 - c * c)),
    "rnn_relu_backward": _internal(3, "c <= 0 ? (T)0 : a + b", lambda a, b, c: np.where(c <= 0, a.dtype.type(0), a + b)),
    # nn.LSTM's step on pre-activations i, f, g, o (sig = the sigmoid above): c' = sig(f) c + sig(i) tanh(g),
    # h' = sig(o) tanh(c'), rounding like the composed ops; and the backward of each gate (dc: c's total gradient)
    "rnn_pre": _internal(3, "a + (b + c)", lambda a, b, c: a + (b + c)),
    "lstm_c": _internal(4, f"{_SIG.format('b')} * d + {_SIG.format('a')} * tanh(c)",
                        lambda a, b, c, d: R.sigmoid(b) * d + R.sigmoid(a) * np.tanh(c)),
    "lstm_h": _internal(2, f"{_SIG.format('a')} * tanh(b)", lambda a, b: R.sigmoid(a) * np.tanh(b)),
    # do = dh tanh(c') sig'(o) and di = dc tanh(g) sig'(i) are one expression; dc = (dc_in) + dh sig(o) (1 -
    # tanh(c')^2); df, dg; dc_prev = dc sig(f)
    "lstm_do": _LSTM_DSIG,
    "lstm_dc": _internal(4, f"a + b * {_SIG.format('c')} * ((T)1 - tanh(d) * tanh(d))",
                         lambda a, b, c, d: a + b * R.sigmoid(c) * (1 - np.tanh(d) ** 2)),
    "lstm_di": _LSTM_DSIG,
    "lstm_df": _internal(3, f"a * b * {_SIG.format('c')} * ((T)1 - {_SIG.format('c')})",
                         lambda a, b, c: a * b * R.sigmoid(c) * (1 - R.sigmoid(c))),
    "lstm_dg": _internal(3, f"a * {_SIG.format('b')} * ((T)1 - tanh(c) * tanh(c))",
                         lambda a, b, c: a * R.sigmoid(b) * (1 - np.tanh(c) ** 2)),
    "lstm_dcprev": _internal(2, f"a * {_SIG.format('b')}", lambda a, b: a * R.sigmoid(b)),
    # special functions (registry/special.py writes the series out as C expressions): lgamma's derivatives, and the
    # implicit reparameterization gradient of a Gamma(alpha, 1) sample (PyTorch's _standard_gamma_grad)
    "lgamma": EwOp(1, "lgamma(a)", S.np_lgamma, kind="float", grad=lambda g, a, out: (g * a.digamma(),), sample=_POS),
    "digamma": EwOp(1, S.digamma_c(), S.np_digamma, kind="float", grad=lambda g, a, out: (g * a.polygamma(1),),
                    sample=_POS, bundle=False),
    "polygamma": EwOp(2, S.polygamma_c(), S.np_polygamma, kind="float", public="custom", bundle=False,
                      grad=lambda g, x, n, out: (g * x.polygamma(int(n) + 1), None),
                      sample=Sample(domain=(0.2, 3.0), params=(1.0,))),
    "standard_gamma_grad": EwOp(2, S.standard_gamma_grad_c(), S.np_standard_gamma_grad, kind="float", allow="f",
                                grad=NONDIFF, public="custom", bundle=False,
                                sample=Sample(domain=((0.5, 12.0), (0.1, 14.0)))),
    # ---- issue 17: special and elementwise math. Long C and the numpy mirrors are in registry/special_fns.py;
    # ``spf_*`` are the looping helpers of kernels/special_fns.mako. torch.special's own names are ``special_*``
    # (front ends in clgrad/special.py); a gradient PyTorch lacks (igamma's in a) is ``F.Unimplemented``
    "acosh": EwOp(1, "acosh(a)", np.arccosh, kind="float", grad=lambda g, a, out: (g * (a * a - 1).rsqrt(),),
                  aliases=("arccosh",), sample=Sample(domain=(1.2, 3.0))),
    "asinh": EwOp(1, "asinh(a)", np.arcsinh, kind="float", grad=lambda g, a, out: (g * (a * a + 1).rsqrt(),),
                  aliases=("arcsinh",)),
    "atanh": EwOp(1, "atanh(a)", np.arctanh, kind="float", grad=lambda g, a, out: (g / (1 - a * a),),
                  aliases=("arctanh",), sample=_UNIT),
    "deg2rad": EwOp(1, "a * K(0.017453292519943295769)", lambda a: a * a.dtype.type(math.pi / 180), kind="float",
                    grad=lambda g, a, out: (g * (math.pi / 180),), saves="none", node="Deg2RadBackward0"),
    "rad2deg": EwOp(1, "a * K(57.295779513082320877)", lambda a: a * a.dtype.type(180 / math.pi), kind="float",
                    grad=lambda g, a, out: (g * (180 / math.pi),), saves="none", node="Rad2DegBackward0"),
    "sinc": EwOp(1, F.SINC_C, F.np_sinc, kind="float", grad=F.sinc_grad),
    "isposinf": EwOp(1, "isinf(a) && a > 0", lambda a: np.isposinf(a) if a.dtype.kind == "f" else a != a, c_int="0",
                     predicate=True),
    "isneginf": EwOp(1, "isinf(a) && a < 0", lambda a: np.isneginf(a) if a.dtype.kind == "f" else a != a, c_int="0",
                     predicate=True),
    "isreal": EwOp(1, "1", lambda a: np.ones(a.shape, bool), predicate=True),
    "signbit": EwOp(1, "signbit(a) != 0", F.np_signbit, c_int="a < 0", c_bool="0", predicate=True),
    "heaviside": EwOp(2, "a == 0 ? b : (T)(a > 0)", F.np_heaviside, grad=NONDIFF, public="custom"),
    "logaddexp2": EwOp(2, F.LOGADDEXP2_C, F.np_logaddexp2, kind="float", allow="f", grad=F.logaddexp2_grad,
                       saves="both"),
    "nextafter": EwOp(2, "nextafter(a, b)", np.nextafter, allow="f", saves="none",
                      grad=lambda g, a, b, out: (g, _zero(g))),  # PyTorch's rule (the b gradient: zeros)
    "gcd": EwOp(2, "a", F.np_gcd, c_int="int_gcd(a, b)", allow="ui"),  # c: never built (no float gcd)
    "lcm": EwOp(2, "a", F.np_lcm, c_int="int_lcm(a, b)", allow="ui"),
    "frexp_exponent": EwOp(1, F.FREXP_EXP_C, F.np_frexp_exponent, allow="f", grad=NONDIFF, public="internal"),
    "frexp_mantissa": EwOp(1, F.FREXP_MANT_C, F.np_frexp_mantissa, allow="f", grad=F.frexp_grad, saves="both",
                           public="internal", node="FrexpBackward0"),
    "erfinv": EwOp(1, "spf_erfinv(a)", F.np_erfinv, kind="float", saves="out", bundle=False, sample=_UNIT,
                   grad=lambda g, a, out: (g * (out * out).exp() * (math.sqrt(math.pi) / 2),)),
    "i0": EwOp(1, "spf_bessel_i(a, 0)", F.np_i0, kind="float", grad=lambda g, a, out: (g * a._special_i1(),),
               bundle=False),
    "igamma": EwOp(2, "spf_igamma(a, b, 0)", F.np_igamma, kind="float", allow="f", grad=F.igamma_grad(1.0, "igamma"),
                   bundle=False, sample=_NO_A),
    "igammac": EwOp(2, "spf_igamma(a, b, 1)", F.np_igammac, kind="float", allow="f", bundle=False,
                    grad=F.igamma_grad(-1.0, "igammac"), sample=_NO_A),
    "special_xlog1py": EwOp(2, "isnan(b) ? b : (a == 0 ? (T)0 : a * log1p(b))", F.np_xlog1py, kind="float",
                            grad=F.xlog1py_grad, public="custom", node=F.overloads("SpecialXlog1Py"),
                            sample=Sample(domain=((-2.0, 2.0), (-0.5, 3.0)))),
    "special_entr": EwOp(1, F.ENTR_C, F.np_entr, kind="float", grad=lambda g, a, out: (g * -(1 + a.log()),),
                         public="custom", sample=_POS),
    "special_erfcx": EwOp(1, "spf_erfcx(a)", F.np_erfcx, kind="float", saves="both", public="custom", bundle=False,
                          grad=lambda g, a, out: (g * (2 * a * out - _2_SQRTPI),)),
    "special_ndtr": EwOp(1, F.NDTR_C, F.np_ndtr, kind="float", public="custom",
                         grad=lambda g, a, out: (g * (-0.5 * a * a).exp() / math.sqrt(2 * math.pi),)),
    "special_ndtri": EwOp(1, "spf_ndtri(a)", F.np_ndtri, kind="float", saves="out", public="custom", bundle=False,
                          grad=lambda g, a, out: (g * (0.5 * out * out).exp() * math.sqrt(2 * math.pi),),
                          sample=Sample(domain=(0.05, 0.95))),
    "special_log_ndtr": EwOp(1, F.log_ndtr_c(), F.np_log_ndtr, kind="float", saves="both", public="custom",
                             bundle=False, sample=Sample(domain=(-4.0, 3.0)),
                             grad=lambda g, a, out: (g * (-(out + 0.5 * a * a)).exp() / math.sqrt(2 * math.pi),)),
    "special_i0e": EwOp(1, "spf_bessel_ie(a, 0)", F.np_i0e, kind="float", saves="both", public="custom",
                        node="SpecialI0EBackward0",
                        bundle=False, grad=lambda g, a, out: (g * (a._special_i1e() - a.sign() * out),)),
    "special_i1": EwOp(1, "spf_bessel_i(a, 1)", F.np_i1, kind="float", grad=F.i1_grad, saves="both",
                       public="custom", bundle=False),
    "special_i1e": EwOp(1, "spf_bessel_ie(a, 1)", F.np_i1e, kind="float", grad=F.i1e_grad, saves="both",
                        node="SpecialI1EBackward0",
                        public="custom", bundle=False),
    "special_zeta": EwOp(2, "spf_zeta(a, b)", F.np_zeta, kind="float", grad=F.zeta_grad, public="custom",
                         node=F.overloads("SpecialZeta"),
                         bundle=False, sample=Sample(domain=((1.5, 4.0), (0.5, 3.0)), grad=False)),
    "special_bessel_j0": EwOp(1, "spf_bessel_j(a, 0)", F.np_bessel_j0, kind="float", grad=NONDIFF, public="custom",
                              bundle=False, sample=Sample(domain=(-40.0, 40.0))),
    "special_bessel_j1": EwOp(1, "spf_bessel_j(a, 1)", F.np_bessel_j1, kind="float", grad=NONDIFF, public="custom",
                              bundle=False, sample=Sample(domain=(-40.0, 40.0))),
    "special_spherical_bessel_j0": EwOp(1, "isinf(a) ? (T)0 : (a == (T)0 ? (T)1 : sin(a) / a)", F.np_spherical_j0,
                                        kind="float", grad=NONDIFF, public="custom"),
    **{f"special_{'shifted_' * sh}{name}": EwOp(2, F.poly_c(kind, sh), F.np_poly(kind, sh), kind="float", grad=NONDIFF,
                                                 public="custom", bundle=False, sample=_POLY[sh])
       for kind, name in enumerate(F.POLYNOMIALS) for sh in ((False, True) if kind < 4 else (False,))},
    **{f"special_{name}": EwOp(1, c, ref, kind="float", grad=NONDIFF, public="custom", bundle=False,
                               sample=Sample(domain=dom)) for name, c, ref, dom in SC.RECORDS},
    # rtol, atol are c, d
    "isclose": EwOp(4, "close_to(a, b, c, d)", R.np_isclose(False), predicate=True, allow="f", public="custom"),
    "isclose_nan": EwOp(4, "close_to(a, b, c, d) || (isnan(a) && isnan(b))", R.np_isclose(True), predicate=True,
                        allow="f", public="custom"),
    # ---- nn.functional's shrink/threshold activations (front ends in ops/activations.py) ----
    # softsign and tanhshrink are PyTorch compositions (x / (1 + |x|), x - tanh x): same values and gradients
    "softsign": EwOp(1, "a / ((T)1 + fabs(a))", lambda a: a / (1 + np.abs(a)), kind="float", allow=_NUM,
                     public="custom", grad=lambda g, a, out: (g / (1 + a.abs()).square(),)),
    "tanhshrink": EwOp(1, "a - tanh(a)", lambda a: a - np.tanh(a), kind="float", allow=_NUM, public="custom",
                       grad=lambda g, a, out: (g * a.tanh().square(),)),
    # lambd is b; PyTorch's kernels: NaN passes both, softshrink's middle is a * 0 (so -0.5 gives -0.0)
    "hardshrink": EwOp(2, "(a >= -b && a <= b) ? (T)0 : a", R.np_hardshrink, allow="f", public="custom",
                       grad=lambda g, x, lambd, out: (g.masked_fill((x >= -lambd) & (x <= lambd), 0.0), None),
                       sample=Sample(params=(0.5,))),
    "softshrink": EwOp(2, "a > b ? a - b : (a < -b ? a + b : a * (T)0)", R.np_softshrink, allow="f",
                       public="custom", sample=Sample(params=(0.5,)),
                       grad=lambda g, x, lambd, out: (g.masked_fill((x >= -lambd) & (x <= lambd), 0.0), None)),
    # threshold is b, value c: x <= threshold gives value (NaN passes), and threshold_backward stops the gradient
    "threshold": EwOp(3, "a <= b ? c : a", R.np_threshold, allow=_NUM, public="custom",
                      grad=lambda g, x, th, value, out: (g.masked_fill(x <= th, 0.0), None, None),
                      sample=Sample(params=(0.25, -3.0))),
}


def check(table: dict) -> None:
    """The registry's rules: every float op that is not a predicate has a gradient rule or is marked NONDIFF;
    ``saves``, ``public`` and ``reads`` take known values."""
    for name, e in table.items():
        if e.grad is None and "f" in e.allow and not e.predicate:
            raise RegistryError(f"elementwise op '{name}' computes floats but has no gradient rule: give its record "
                                f"grad=<rule> (or grad=NONDIFF if it has no derivative)")
        if e.saves not in ("inputs", "out", "both", "none"):
            raise RegistryError(f"elementwise op '{name}': saves must be inputs, out, both or none, not {e.saves!r}")
        if e.public not in ("auto", "custom", "internal"):
            raise RegistryError(f"elementwise op '{name}': public must be auto, custom or internal, not {e.public!r}")
        if e.public == "auto" and e.arity not in (1, 2):
            raise RegistryError(f"elementwise op '{name}' takes {e.arity} operands: only unary and binary ops get "
                                f"generated bindings; write its front end in ops/math.py and mark it public='custom'")
        if e.reads is not None and len(e.reads) != e.arity:
            raise RegistryError(f"elementwise op '{name}': reads needs one entry per operand")


check(OPS)
