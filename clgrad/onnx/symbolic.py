"""Symbolic functions of the elementwise, view, shape and reduction ops: one entry per op, like PyTorch's
``symbolic_opset*.py`` files. ``symbolic_nn.py`` holds the layers' ops, ``symbolic_rnn.py`` the recurrent modules.

Elementwise entries get their operands already converted to the op's compute dtype (Python scalars become
constants); the result is cast to the output dtype afterwards. Each formula follows the registry record's C
expression (``registry/elementwise.py``), so the exported graph computes what clgrad computes.
"""
from __future__ import annotations

import math

from .. import dtypes as D
from ..ops import copy as CP
from ..ops import functions as F
from ..ops import gather as G
from ..ops import indexing as I
from ..ops import joins as J
from ..ops import padding as PAD
from ..ops import rearrange as RE
from ..ops import reduction as R
from ..ops import scans as SC
from ..ops import shape as S
from ..ops import stats as ST
from ..ops.views import wrap_dim
from ..tensor import is_tensor
from .errors import SymbolicValueError, UnsupportedOperatorError
from .graph import INT64_MAX, reshape_target
from .symbolic_helper import elementwise, register


# ---- elementwise ---------------------------------------------------------------------------------
def _simple(op_type: str, **attrs):
    return lambda g, c, xs, dt: g.op(op_type, *xs, **attrs)


for _name, _onnx in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "neg": "Neg",
                     "abs": "Abs", "sqrt": "Sqrt", "exp": "Exp", "log": "Log", "relu": "Relu", "sigmoid": "Sigmoid",
                     "tanh": "Tanh", "erf": "Erf", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin",
                     "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "floor": "Floor",
                     "ceil": "Ceil", "round": "Round", "reciprocal": "Reciprocal", "sign": "Sign",
                     "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min", "clamp_min": "Max",
                     "clamp_max": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
                     "ge": "GreaterOrEqual", "where": "Where", "isnan": "IsNaN", "isinf": "IsInf",
                     "identity": "Identity", "fmod": None}.items():
    if _onnx:
        elementwise(_name)(_simple(_onnx))
elementwise("fmod")(_simple("Mod", fmod=1))


def _bool(g, x, dt):
    return g.cast(x, dt, D.bool)


@elementwise("logical_and", "logical_or", "logical_xor")
def _logical(g, c, xs, dt):
    kind = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}[c.node.fn.op]
    return g.op(kind, _bool(g, xs[0], dt), _bool(g, xs[1], dt))


@elementwise("logical_not")
def _logical_not(g, c, xs, dt):
    return g.op("Not", _bool(g, xs[0], dt))


@elementwise("ne")
def _ne(g, c, xs, dt):
    return g.op("Not", g.op("Equal", *xs))


@elementwise("isfinite")
def _isfinite(g, c, xs, dt):
    return g.op("Not", g.op("Or", g.op("IsNaN", xs[0]), g.op("IsInf", xs[0])))


@elementwise("clamp", "hardtanh")
def _clamp(g, c, xs, dt):
    x, lo, hi = xs
    return g.op("Min", g.op("Max", x, lo), hi)


@elementwise("square")
def _square(g, c, xs, dt):
    return g.op("Mul", xs[0], xs[0])


@elementwise("rsqrt")
def _rsqrt(g, c, xs, dt):
    return g.op("Reciprocal", g.op("Sqrt", xs[0]))


@elementwise("exp2")
def _exp2(g, c, xs, dt):
    return g.op("Pow", g.scalar(2.0, dt), xs[0])


@elementwise("expm1")
def _expm1(g, c, xs, dt):
    return g.op("Sub", g.op("Exp", xs[0]), g.scalar(1, dt))


@elementwise("log1p")
def _log1p(g, c, xs, dt):
    return g.op("Log", g.op("Add", xs[0], g.scalar(1, dt)))


@elementwise("log2", "log10")
def _log_base(g, c, xs, dt):
    base = 2.0 if c.node.fn.op == "log2" else 10.0
    return g.op("Div", g.op("Log", xs[0]), g.scalar(math.log(base), dt))


def _trunc_of(g, x):
    return g.op("Mul", g.op("Sign", x), g.op("Floor", g.op("Abs", x)))


@elementwise("trunc")
def _trunc(g, c, xs, dt):
    return _trunc_of(g, xs[0]) if dt.is_floating_point else g.op("Identity", xs[0])


@elementwise("frac")
def _frac(g, c, xs, dt):
    return g.op("Sub", xs[0], _trunc_of(g, xs[0]))


@elementwise("trunc_divide", "floor_divide", "remainder")
def _divisions(g, c, xs, dt):
    op = c.node.fn.op
    if not dt.is_floating_point:
        if op == "remainder":
            return g.op("Mod", *xs)  # ONNX integer Mod takes the divisor's sign, like Python
        if op == "trunc_divide":
            return g.op("Div", *xs)
        raise UnsupportedOperatorError(f"clgrad::{op} on integer tensors", g.opset, None)
    q = g.op("Div", *xs)
    if op == "trunc_divide":
        return _trunc_of(g, q)
    if op == "floor_divide":
        return g.op("Floor", q)
    return g.op("Sub", xs[0], g.op("Mul", g.op("Floor", q), xs[1]))


@elementwise("gelu")
def _gelu(g, c, xs, dt):
    x = xs[0]
    inner = g.op("Erf", g.op("Mul", x, g.scalar(0.70710678118654752440, dt)))
    return g.op("Mul", g.op("Mul", x, g.scalar(0.5, dt)), g.op("Add", inner, g.scalar(1.0, dt)))


@elementwise("gelu_tanh")
def _gelu_tanh(g, c, xs, dt):
    x = xs[0]
    cube = g.op("Mul", g.op("Mul", x, x), x)
    z = g.op("Add", x, g.op("Mul", cube, g.scalar(0.044715, dt)))
    return g.op("Mul", x, g.op("Sigmoid", g.op("Mul", z, g.scalar(1.59576912160573071176, dt))))


@elementwise("silu")
def _silu(g, c, xs, dt):
    return g.op("Mul", xs[0], g.op("Sigmoid", xs[0]))


@elementwise("elu")
def _elu(g, c, xs, dt):
    """``a <= 0 ? expm1(a * d) * c : a * b`` (elu, celu and selu are this record with other constants)."""
    x, scale, alpha, in_scale = xs
    neg = g.op("Mul", _expm1(g, c, [g.op("Mul", x, in_scale)], dt), alpha)
    return g.op("Where", g.op("LessOrEqual", x, g.scalar(0, dt)), neg, g.op("Mul", x, scale))


@elementwise("leaky_relu")
def _leaky_relu(g, c, xs, dt):
    slope = c.arg(1)
    if is_tensor(slope):
        return g.op("Where", g.op("Greater", xs[0], g.scalar(0, dt)), xs[0], g.op("Mul", xs[0], xs[1]))
    return g.op("LeakyRelu", xs[0], alpha=float(slope))


@elementwise("softplus")
def _softplus(g, c, xs, dt):
    x, beta, threshold = xs
    xb = g.op("Mul", x, beta)
    return g.op("Where", g.op("Greater", xb, threshold), x, g.op("Div", g.op("Softplus", xb), beta))


@elementwise("hardsigmoid")
def _hardsigmoid(g, c, xs, dt):
    return g.op("HardSigmoid", xs[0], alpha=1.0 / 6, beta=0.5)


@elementwise("hardswish")
def _hardswish(g, c, xs, dt):
    return g.op("Mul", xs[0], _hardsigmoid(g, c, xs, dt))


@elementwise("mish")
def _mish(g, c, xs, dt):
    return g.op("Mul", xs[0], g.op("Tanh", g.op("Softplus", xs[0])))


@elementwise("logsigmoid")
def _logsigmoid(g, c, xs, dt):
    return g.op("Neg", g.op("Softplus", g.op("Neg", xs[0])))


@elementwise("lerp")
def _lerp(g, c, xs, dt):
    a, b, w = xs
    return g.op("Add", a, g.op("Mul", w, g.op("Sub", b, a)))


@elementwise("addcmul", "addcdiv")
def _addc(g, c, xs, dt):
    a, t1, t2, v = xs
    inner = g.op("Mul" if c.node.fn.op == "addcmul" else "Div", t1, t2)
    return g.op("Add", a, g.op("Mul", v, inner))


@elementwise("logaddexp")
def _logaddexp(g, c, xs, dt):
    a, b = xs
    diff = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    return g.op("Add", g.op("Max", a, b), _log1p(g, c, [g.op("Exp", diff)], dt))


@elementwise("hypot")
def _hypot(g, c, xs, dt):
    a, b = xs
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


@elementwise("nan_to_num")
def _nan_to_num(g, c, xs, dt):
    x, nan, posinf, neginf = xs
    y = g.op("Where", g.op("IsInf", x, detect_positive=0), neginf, x)
    y = g.op("Where", g.op("IsInf", x, detect_negative=0), posinf, y)
    return g.op("Where", g.op("IsNaN", x), nan, y)


# ---- views and shapes ----------------------------------------------------------------------------
@register(F.View)
def _view(g, c):
    (ia, ib), (oa, ob) = c.shapes(0), c.out_shapes()
    x = c.tensor(0)
    if ia == oa and ib == ob:
        return g.op("Identity", x)
    return g.op("Reshape", x, g.ints(reshape_target(ia, ib, oa, ob, c.name)))


@register(F.Permute)
def _permute(g, c):
    dims = c.static(1)
    return g.op("Transpose", c.tensor(0), perm=[wrap_dim(d, max(len(dims), 1)) for d in dims])


@register(F.Expand)
def _expand(g, c):
    (ia, ib), (oa, ob) = c.shapes(0), c.out_shapes()
    lead = len(oa) - len(ia)
    target = []
    for i, (a, b) in enumerate(zip(oa, ob)):
        j = i - lead
        if j >= 0 and ia[j] == a and ib[j] == b:
            target.append(1)  # the input's own size (broadcasting keeps it), dynamic or not
        elif a == b:
            target.append(a)
        else:
            raise SymbolicValueError(f"{c.name}: cannot export an expand of {list(ia)} to {list(oa)}: dim {i} "
                                     "depends on a dynamic axis")
    return g.op("Expand", c.tensor(0), g.ints(target))


def _slice_items(index, ndim: int) -> list:
    """A basic index as (kind, value) per item with Ellipsis expanded: 'int', 'slice', 'none'."""
    items = list(index) if isinstance(index, tuple) else [index]
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    out = []
    for it in items:
        if it is Ellipsis:
            out += [("slice", slice(None))] * (ndim - used)
        elif it is None:
            out.append(("none", None))
        elif isinstance(it, slice):
            out.append(("slice", it))
        else:
            out.append(("int", int(it)))
    used_dims = sum(1 for k, _ in out if k != "none")
    return out + [("slice", slice(None))] * (ndim - used_dims)


def _bound(a, b, size_a, size_b, default, name):
    if a is None:
        return default
    if a == b:
        return a
    if a == size_a and b == size_b:
        return INT64_MAX
    raise SymbolicValueError(f"{name}: a slice bound depends on a dynamic axis ({a} vs {b})")


def _getitem(g, c, x):
    (ia, ib) = c.shapes(0)
    items_a = _slice_items(c.arg(2)[0], len(ia))
    items_b = _slice_items(c.both(2)[1][0], len(ia))
    starts, ends, axes, steps, picks, news = [], [], [], [], [], []
    d = out = 0
    for (kind, v), (_, vb) in zip(items_a, items_b):
        if kind == "none":
            news.append(out)
            out += 1
            continue
        if kind == "int":
            if v != vb:
                raise SymbolicValueError(f"{c.name}: an index depends on a dynamic axis ({v} vs {vb})")
            picks.append((d, v))
        else:
            if v != slice(None):
                starts.append(_bound(v.start, vb.start, ia[d], ib[d], 0, c.name))
                ends.append(_bound(v.stop, vb.stop, ia[d], ib[d], INT64_MAX, c.name))
                axes.append(d)
                steps.append(1 if v.step is None else v.step)
            out += 1
        d += 1
    if axes:
        x = g.slice(x, starts, ends, axes, steps)
    for d, v in reversed(picks):
        x = g.op("Gather", x, g.scalar(v, D.int64), axis=d)
    if news:
        x = g.unsqueeze(x, news)
    return x


@register(F.Slice)
def _slice(g, c):
    fn, x = c.arg(1), c.tensor(0)
    name = getattr(fn, "__name__", "")
    if fn is S.getitem:
        return g.op("Identity", _getitem(g, c, x))
    if name == "narrow":
        (ia, ib) = c.shapes(0)
        dim, start, length = c.static(2)
        dim = wrap_dim(dim, len(ia))
        return g.slice(x, [start], [start + length], [dim])
    if name == "select":
        dim, index = c.static(2)
        return g.op("Gather", x, g.scalar(index, D.int64), axis=wrap_dim(dim, len(c.shapes(0)[0])))
    raise UnsupportedOperatorError(f"clgrad::{name or fn!r} (a strided view)", g.opset, None)


@register(CP.Clone)
def _clone(g, c):
    return g.op("Identity", c.tensor(0))


@register(CP.ToCopy)
def _to_copy(g, c):
    return g.op("Identity", g.cast(c.tensor(0), c.dtype(0), c.out_dtype()))


def _tensors(c, start: int, dt):
    return [c.tensor(i, dt) for i in range(start, len(c.node.args))]


@register(J.Cat)
def _cat(g, c):
    nd = len(c.out_shapes()[0])
    xs = [c.tensor(i, c.out_dtype()) for i in range(1, len(c.node.args)) if c.arg(i).dim() == nd]
    return g.op("Concat", *xs, axis=wrap_dim(c.static(0), nd))


@register(J.Stack)
def _stack(g, c):
    d = wrap_dim(c.static(0), len(c.out_shapes()[0]))
    return g.op("Concat", *[g.unsqueeze(x, [d]) for x in _tensors(c, 1, c.out_dtype())], axis=d)


@register(J.Split)
def _split(g, c):
    d, sizes = c.static(1), list(c.static(2))
    if len(sizes) == 1:
        return [g.op("Identity", c.tensor(0))]
    return g.op("Split", c.tensor(0), g.ints(sizes), axis=d, outputs=len(sizes))


@register(J.Unbind)
def _unbind(g, c):
    d = c.static(1)
    n = c.shapes(0)[0][d]
    if c.shapes(0)[1][d] != n:
        raise SymbolicValueError(f"{c.name}: unbind along a dynamic axis")
    parts = g.op("Split", c.tensor(0), g.ints([1] * n), axis=d, outputs=n) if n > 1 else [c.tensor(0)]
    return [g.squeeze(p, [d]) for p in parts]


@register(J.Repeat)
def _repeat(g, c):
    reps = list(c.static(1))
    x, nd = c.tensor(0), len(c.shapes(0)[0])
    if len(reps) > nd:
        x = g.unsqueeze(x, list(range(len(reps) - nd)))
    return g.op("Tile", x, g.ints(reps))


@register(RE.Flip)
def _flip(g, c):
    dims = [wrap_dim(d, len(c.shapes(0)[0])) for d in c.static(1)]
    n = len(dims)
    return g.slice(c.tensor(0), [-1] * n, [-INT64_MAX] * n, dims, [-1] * n)


@register(PAD.ConstantPadNd)
def _constant_pad(g, c):
    pad, value = c.static(1), c.static(2)
    n = len(c.shapes(0)[0])
    begins, ends = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i], ends[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return g.op("Pad", c.tensor(0), g.ints(begins + ends), g.scalar(value, c.dtype(0)), mode="constant")


@register(*PAD.MODE_PADS.values())
def _mode_pad(g, c):
    pad = c.static(1)
    n = len(c.shapes(0)[0])
    begins, ends = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i], ends[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
    mode = "reflect" if c.node.name.startswith("Reflection") else "edge"
    return g.op("Pad", c.tensor(0), g.ints(begins + ends), mode=mode)


# ---- indexing ------------------------------------------------------------------------------------
@register(I.MaskedFill)
def _masked_fill(g, c):
    value = c.tensor(2, c.dtype(0)) if c.is_tensor(2) else g.scalar(c.static(2), c.dtype(0))
    return g.op("Where", c.tensor(1, D.bool), value, c.tensor(0))


@register(I.Index)
def _index(g, c):
    picked = [i for i in range(2, len(c.node.args)) if c.arg(i) is not None]
    if len(picked) != 1 or c.dtype(picked[0]) is D.bool:
        raise UnsupportedOperatorError("clgrad::IndexBackward0 (advanced indexing other than one integer index "
                                       "tensor)", g.opset, None)
    return g.op("Gather", c.tensor(0), c.tensor(picked[0], D.int64), axis=picked[0] - 2)


@register(G.Gather)
def _gather(g, c):
    return g.op("GatherElements", c.tensor(0), c.tensor(2, D.int64), axis=c.static(1))


@register(G.IndexSelect)
def _index_select(g, c):
    return g.op("Gather", c.tensor(0), c.tensor(2, D.int64), axis=c.static(1))


# ---- reductions ----------------------------------------------------------------------------------
def _axes(c, dim):
    nd = len(c.shapes(0)[0])
    return list(R._dims_of(c.arg(0), dim)) if nd else None


@register(R.Sum, R.Mean, R.Prod)
def _sum_mean(g, c):
    dim, keepdim, dtype = c.static(1), c.static(2), c.static(3)
    x = c.tensor(0, dtype or c.out_dtype())
    kind = {"Sum": "ReduceSum", "Mean": "ReduceMean", "Prod": "ReduceProd"}[c.node.fn.__mro__[0].__name__]
    return g.reduce(kind, x, _axes(c, dim), keepdim)


@register(R.MaxMinDim)
def _max_min_dim(g, c):
    name, dim, keepdim = c.static(1), c.static(2), c.static(3)
    x, d = c.tensor(0), wrap_dim(dim, max(len(c.shapes(0)[0]), 1))
    values = g.reduce("ReduceMax" if name == "max" else "ReduceMin", x, [d], keepdim)
    indices = g.op("ArgMax" if name == "max" else "ArgMin", x, axis=d, keepdims=int(bool(keepdim)))
    return [values, indices]


@register(R.MaxMinAll)
def _max_min_all(g, c):
    name, dim, keepdim = c.static(1), c.static(2), c.static(3)
    kind = "ReduceMax" if name in ("max", "amax") else "ReduceMin"
    axes = None if name in ("max", "min") else _axes(c, dim)
    return g.reduce(kind, c.tensor(0), axes, bool(keepdim) and axes is not None)


def _count(c, axes) -> int:
    (a, b) = c.shapes(0)
    if any(a[d] != b[d] for d in axes):
        raise SymbolicValueError(f"{c.name}: a variance over a dynamic axis")
    return math.prod(a[d] for d in axes)


@register(ST._Var, ST._Std, ST._VarMean, ST._StdMean)
def _moments(g, c):
    dims, correction, keepdim = c.static(1), c.static(2), c.static(3)
    x, dt = c.tensor(0), c.dtype(0)
    axes = _axes(c, dims)
    mean = g.reduce("ReduceMean", x, axes, True)
    dev = g.op("Sub", x, mean)
    ssq = g.reduce("ReduceSum", g.op("Mul", dev, dev), axes, keepdim)
    var = g.op("Div", ssq, g.scalar(max(_count(c, axes) - correction, 0), dt))
    fn = c.node.fn
    out = g.op("Sqrt", var) if fn.sqrt else var
    if not fn.with_mean:
        return out
    return [out, mean if keepdim else g.squeeze(mean, axes)]


@register(ST._Logsumexp)
def _logsumexp(g, c):
    dims, keepdim = c.static(1), c.static(2)
    x, axes = c.tensor(0), _axes(c, dims)
    m = g.reduce("ReduceMax", x, axes, True)
    s = g.reduce("ReduceSum", g.op("Exp", g.op("Sub", x, m)), axes, True)
    out = g.op("Add", g.op("Log", s), m)
    return out if keepdim else g.squeeze(out, axes)


@register(ST._Norm)
def _norm(g, c):
    p, dims, keepdim = c.static(1), c.static(2), c.static(3)
    x, axes = c.tensor(0), _axes(c, dims)
    if p == 2:
        return g.reduce("ReduceL2", x, axes, keepdim)
    if p == 1:
        return g.reduce("ReduceL1", x, axes, keepdim)
    if p == math.inf:
        return g.reduce("ReduceMax", g.op("Abs", x), axes, keepdim)
    dt = c.dtype(0)
    s = g.reduce("ReduceSum", g.op("Pow", g.op("Abs", x), g.scalar(p, dt)), axes, keepdim)
    return g.op("Pow", s, g.scalar(1.0 / p, dt))


@register(SC._Cumsum)
def _cumsum(g, c):
    dim, dtype = c.static(1), c.static(2)
    x = c.tensor(0, dtype or c.out_dtype())
    return g.op("CumSum", x, g.scalar(wrap_dim(dim, max(len(c.shapes(0)[0]), 1)), D.int64))
