"""Complex arithmetic composed from real ops on (re, im) parts, registered in ``pointwise.COMPLEX`` (elementwise
ops by registry name, copy and fill) and used by ``sum``/``mean``/``matmul``'s complex branches.

Each composition takes the operands as ``pointwise.apply`` got them (complex or real tensors, Python numbers,
complex ones included) and ``out``; the result dtype is ``torch.result_type``'s. Division uses the textbook
formula (PyTorch uses Smith's scaling, so results differ only near overflow).
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as D
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from .complex import _join, _out, _parts, _real_dtype, real, view_as_complex, view_as_real
from .math import where as _where
from .views import wrap_dim


def _add(re1, re2, sign=1):
    if re2 is None:
        return re1
    if re1 is None:
        return re2 if sign == 1 else -re2
    return re1 + re2 if sign == 1 else re1 - re2


def _mul_parts(a, b, c, d):
    """(a + ib)(c + id) with None for a zero imaginary part."""
    if b is None and d is None:
        return a * c, None
    if d is None:
        return a * c, b * c
    if b is None:
        return a * c, a * d
    return a * c - b * d, a * d + b * c


def _binary(fn):
    def run(x, y, alpha=1, out=None):
        rdt = _real_dtype(x, y)
        a, b = _parts(x, rdt)
        c, d = _parts(y, rdt)
        re, im = fn(a, b, c, d, alpha)
        return _out(_join(re, im), out)
    return run


def _addsub(sign):
    def parts(a, b, c, d, alpha):
        if alpha != 1:
            c, d = _mul_parts(c, d, alpha.real if isinstance(alpha, complex) else alpha,
                              alpha.imag if isinstance(alpha, complex) else None)
        return _add(a, c, sign), _add(b, d, sign)
    return parts


def _mul(a, b, c, d, _):
    return _mul_parts(a, b, c, d)


def _div(a, b, c, d, _):
    if d is None:
        return a / c, None if b is None else b / c
    den = c * c + d * d
    re, im = _mul_parts(a, b, c, -d)
    return re / den, im / den


def _unary(fn):
    def run(x, out=None):
        re, im = _parts(x, x.dtype.real)
        return _out(_join(*fn(re, im)), out)
    return run


def _abs2(re, im):
    return re * re + im * im


def _at_zero(re, im):
    """(mask of z == 0, re, im with 1 + 0i there): a function of the substitutes, masked back to 0 with ``where``,
    has PyTorch's gradient 0 at z = 0 instead of 0/0 (the double-where trick)."""
    zero = (re == 0) & (im == 0)
    return zero, _where(zero, 1.0, re), _where(zero, 0.0, im)


def _no_inplace(name, x, out):
    if out is x:  # the real result cannot be stored in its complex input
        raise RuntimeError(f"In-place {name} is not supported for complex tensors.")


def abs_(x, out=None):
    _no_inplace("abs", x, out)
    zero, re, im = _at_zero(*_parts(x, x.dtype.real))
    return _out(_where(zero, 0.0, re.hypot(im)), out)


def angle(x, out=None):
    _no_inplace("angle", x, out)
    zero, re, im = _at_zero(*_parts(x, x.dtype.real))
    return _out(_where(zero, 0.0, im.atan2(re)), out)


def _exp(re, im):
    r = re.exp()
    return r * im.cos(), r * im.sin()


def _log(re, im):
    return re.hypot(im).log(), im.atan2(re)


def _sqrt(re, im):
    r = re.hypot(im)
    real = ((r + re) * 0.5).sqrt()
    mag = ((r - re) * 0.5).sqrt()
    return real, _where(im < 0, -mag, mag)


def _reciprocal(re, im):
    den = _abs2(re, im)
    return re / den, -im / den


def _sgn(re, im):
    zero, re, im = _at_zero(re, im)
    r = re.hypot(im)
    return _where(zero, 0.0, re / r), _where(zero, 0.0, im / r)


def _sin(re, im):
    return re.sin() * im.cosh(), re.cos() * im.sinh()


def _cos(re, im):
    return re.cos() * im.cosh(), -(re.sin() * im.sinh())


def _sinh(re, im):
    return re.sinh() * im.cos(), re.cosh() * im.sin()


def _cosh(re, im):
    return re.cosh() * im.cos(), re.sinh() * im.sin()


def _quotient(num, den):
    """num(re, im) / den(re, im) as parts: tan = sin / cos, tanh = sinh / cosh."""
    def parts(re, im):
        return _div(*num(re, im), *den(re, im), None)
    return parts


def _scaled(fn, k):
    def parts(re, im):
        a, b = fn(re, im)
        return a * k, b * k
    return parts


def _exp2(re, im):
    return _exp(re * _LN2, im * _LN2)


def _rsqrt(re, im):
    return _reciprocal(*_sqrt(re, im))


def _sigmoid(re, im):
    e_re, e_im = _exp(-re, -im)
    return _reciprocal(e_re + 1, e_im)


_LN2 = math.log(2.0)


def _predicate(fn):
    def run(*operands, out=None):
        rdt = _real_dtype(*operands)
        parts = [_parts(x, rdt) for x in operands]
        return _out(fn(*parts), out)
    return run


def _zero_if_none(p):
    return 0.0 if p is None else p


def _is(name):
    def fn(p):
        re, im = p
        if name == "isfinite":
            return re.isfinite() & im.isfinite()
        return (re.isnan() | im.isnan()) if name == "isnan" else (re.isinf() | im.isinf())
    return fn


def _real_eq(x, y):
    return x == y if is_tensor(x) else y == x


def eq(x, y, out=None):
    rdt = _real_dtype(x, y)
    (a, b), (c, d) = _parts(x, rdt), _parts(y, rdt)
    return _out(_real_eq(a, c) & _real_eq(_zero_if_none(b), _zero_if_none(d)), out)


def ne(x, y, out=None):
    return _out(~eq(x, y), out)


def pow_(base, exponent, out=None):
    """z ** p: repeated products for 2 and 1, polar form for a real number p, exp(p log z) otherwise."""
    if not isinstance(exponent, (int, float, complex)) or isinstance(exponent, bool):
        log = _unary(_log)(base) if is_tensor(base) and base.dtype.kind == "c" else _join(*_log_real(base, exponent))
        return _out(_unary(_exp)(_binary(_mul)(exponent, log)), out)
    if exponent == 2:
        return _out(_binary(_mul)(base, base), out)
    if exponent == 1:
        return _out(base.clone(), out)
    if isinstance(exponent, complex):
        return _out(_unary(_exp)(_binary(_mul)(exponent, _unary(_log)(base))), out)
    re, im = _parts(base, base.dtype.real)
    r, theta = re.hypot(im) ** exponent, im.atan2(re) * exponent
    return _out(_join(r * theta.cos(), r * theta.sin()), out)


def _log_real(base, like):
    """log of a real base (a number or tensor) as (re, im) parts, for real ** complex."""
    rdt = _real_dtype(base, like)
    base = base.to(rdt) if is_tensor(base) else like.new_full((), base, dtype=rdt)
    return base.abs().log(), _where(base < 0, math.pi, 0.0)


def where(cond, x, y, out=None):
    rdt = _real_dtype(x, y)
    (a, b), (c, d) = _parts(x, rdt), _parts(y, rdt)
    return _out(_join(_where(cond, a, c), _where(cond, _zero_if_none(b), _zero_if_none(d))), out)


# ---- copy and fill (the identity op) ----------------------------------------------------------------------------
def copy(out: Tensor, src: Tensor) -> Tensor:
    """Cast ``src`` into ``out`` when either is complex (untracked; the callers record autograd)."""
    if src.shape != out.shape:
        src = src.expand(out.shape)
    if out.dtype.kind != "c":  # complex -> real keeps the real part, as PyTorch (which also warns)
        return P.cast_into(out, src._pairs().select(-1, 0))
    pairs = out._pairs()
    if src.dtype.kind == "c":
        P.cast_into(pairs, src._pairs())
    else:
        P.cast_into(pairs.select(-1, 0), src)
        P.fill(pairs.select(-1, 1), 0)
    return out


def fill(out: Tensor, value) -> Tensor:
    """Set every element of ``out`` to a (complex) number."""
    if out.dtype.kind != "c":
        raise RuntimeError(f"value cannot be converted to type {out.dtype.cpp_name} without overflow")
    value = complex(value)
    pairs = out._pairs()
    P.fill(pairs.select(-1, 0), value.real)
    P.fill(pairs.select(-1, 1), value.imag)
    out._storage.version += 1
    return out


# ---- reductions and products ------------------------------------------------------------------------------------
def _pair_dims(x, dim):
    if dim is None:
        return tuple(range(x.dim()))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(wrap_dim(d, x.dim()) for d in dims) if dims else tuple(range(x.dim()))


def _reduce(name):
    def run(x, dim=None, keepdim=False, dtype=None):
        if dtype is not None and D.as_dtype(dtype).kind != "c":
            warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
            return getattr(real(x), name)(dim, keepdim, dtype=dtype)
        r = view_as_real(x if dtype is None else x.to(D.as_dtype(dtype)))
        return view_as_complex(getattr(r, name)(_pair_dims(x, dim), keepdim).contiguous())
    return run


def _matmul(name):
    def run(x, y):
        if x.dtype is not y.dtype:
            raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                               f"{x.dtype.cpp_name} != {y.dtype.cpp_name}")
        rdt = _real_dtype(x, y)
        (a, b), (c, d) = _parts(x, rdt), _parts(y, rdt)
        fn = getattr(Tensor, name)
        prod = lambda p, q: None if p is None or q is None else fn(p, q)  # noqa: E731
        re = _add(prod(a, c), prod(b, d), -1)
        im = _add(prod(a, d), prod(b, c))
        return _join(re, im)
    return run


P.COMPLEX.update({
    "add": _binary(_addsub(1)), "sub": _binary(_addsub(-1)), "mul": _binary(_mul), "div": _binary(_div),
    "neg": _unary(lambda re, im: (-re, -im)), "reciprocal": _unary(_reciprocal), "exp": _unary(_exp),
    "log": _unary(_log), "sqrt": _unary(_sqrt), "sgn": _unary(_sgn), "sin": _unary(_sin), "cos": _unary(_cos),
    "square": lambda x, out=None: _out(_binary(_mul)(x, x), out), "abs": abs_, "angle": angle,
    "eq": eq, "ne": ne, "pow": pow_, "where": lambda c, x, y, out=None: where(c, x, y, out),
    "isfinite": _predicate(_is("isfinite")), "isnan": _predicate(_is("isnan")), "isinf": _predicate(_is("isinf")),
    "copy": copy, "fill": fill, "sum": _reduce("sum"), "mean": _reduce("mean"),
    "sinh": _unary(_sinh), "cosh": _unary(_cosh), "tanh": _unary(_quotient(_sinh, _cosh)),
    "tan": _unary(_quotient(_sin, _cos)), "log2": _unary(_scaled(_log, 1 / _LN2)),
    "log10": _unary(_scaled(_log, 1 / math.log(10.0))), "exp2": _unary(_exp2), "rsqrt": _unary(_rsqrt),
    "sigmoid": _unary(_sigmoid), "dot": _matmul("dot"),
    "cumsum": lambda x, d: view_as_complex(view_as_real(x).cumsum(d).contiguous()),
    "matmul": _matmul("matmul"), "mm": _matmul("mm"), "bmm": _matmul("bmm"),
})
