"""Front ends of the special-function records whose PyTorch signatures the generated bindings can't give:
``polygamma(n, input)`` (the order is n first; ``x.polygamma(n)`` as a method) and ``_standard_gamma_grad``.
``lgamma`` and ``digamma`` are generated from their records (``clgrad.lgamma``, ``Tensor.digamma_`` ...).
Issue 17's hand front ends too: ``heaviside`` (PyTorch's same-dtype check), ``positive``, ``float_power``,
``ldexp``, ``frexp`` (two outputs), and the private methods the gradient rules of ``special_*`` records call."""
from __future__ import annotations

import math
from numbers import Integral

from .. import dtypes as D
from ..tensor import is_tensor
from . import math as M
from . import pointwise as P

__all__ = ["polygamma", "mvlgamma", "heaviside", "positive", "float_power", "ldexp", "frexp"]


def _order(n) -> int:
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma: ``clgrad.polygamma(1, x)`` is the trigamma function."""
    n = _order(n)
    if n == 0:
        return P.apply("digamma", input, out=out)
    return P.apply("polygamma", input, float(n), out=out)


def mvlgamma(input, p):
    """The log of the multivariate gamma function of dimension ``p``, elementwise: ``clgrad.mvlgamma(x, 2)``."""
    if isinstance(p, bool) or not isinstance(p, Integral) or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if (input <= (p - 1) / 2).any().item():
        raise RuntimeError("All elements must be greater than (p-1)/2")
    total = sum((input - j / 2).lgamma() for j in range(p))
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _standard_gamma_grad(self, output):
    """d output / d self for ``output = clgrad._standard_gamma(self)``: PyTorch's implicit reparameterization."""
    return P.apply("standard_gamma_grad", self, output)


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_inplace(self, n):
    return polygamma(n, self, out=self)


def _mvlgamma_method(self, p):
    return mvlgamma(self, p)


def heaviside(input, values, *, out=None):
    """The Heaviside step: 0 below 0, 1 above, ``values`` at 0: ``clgrad.heaviside(x, clgrad.tensor(0.5))``."""
    if not is_tensor(values):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return P.apply("heaviside", input, values, out=out)


def positive(input):
    """``+x``: the input itself (bool tensors are rejected, as in PyTorch)."""
    if input.dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _double(x):
    return x.to(D.float64) if is_tensor(x) else x


def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64 whatever the dtypes: ``clgrad.float_power(x, 2)``."""
    if out is not None and out.dtype is not D.float64:
        raise RuntimeError(f"the output given to float_power has dtype {out.dtype.scalar_name} but the operation's "
                           "result requires dtype Double")
    return P.apply("pow", _double(input), _double(exponent), out=out)


def _float_power_(self, exponent):
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.scalar_name} but the operation's "
                           "result requires dtype Double")
    return float_power(self, exponent, out=self)


def ldexp(input, other, *, out=None):
    """``input * 2 ** other``: ``clgrad.ldexp(x, clgrad.tensor([3]))``."""
    return M.FUNCS["mul"](input, M.FUNCS["exp2"](other), out=out)


class FrexpResult(tuple):
    """``(mantissa, exponent)`` as ``torch.return_types.frexp``."""

    __slots__ = ()

    def __new__(cls, mantissa, exponent):
        return tuple.__new__(cls, (mantissa, exponent))

    mantissa = property(lambda self: self[0])
    exponent = property(lambda self: self[1])

    def __repr__(self) -> str:
        return f"clgrad.return_types.frexp(\nmantissa={self[0]!r},\nexponent={self[1]!r})"


def frexp(input, *, out=None):
    """Mantissa in [0.5, 1) and int32 exponent with ``input = mantissa * 2 ** exponent``: ``clgrad.frexp(x)``."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    exponent = P.apply("frexp_exponent", input).to(D.int32)
    mantissa = P.apply("frexp_mantissa", input, out=None if out is None else out[0])
    if out is not None:
        out[1].copy_(exponent)
        exponent = out[1]
    return FrexpResult(mantissa, exponent)


def _special_zeta_of(self, x):
    """``zeta(x, self)``: the Hurwitz zeta function's gradient in q calls it with the roles swapped."""
    return P.apply("special_zeta", x, self)


# Tensor methods: PyTorch's public ones, then the private ones the gradient rules of ``special_*`` records call
_METHODS = {"heaviside": heaviside, "positive": positive, "float_power": float_power, "ldexp": ldexp,
            "frexp": frexp, "float_power_": _float_power_,
            "heaviside_": lambda self, values: heaviside(self, values, out=self),
            "ldexp_": lambda self, other: ldexp(self, other, out=self),
            "_special_zeta_of": _special_zeta_of}
_METHODS |= {f"_special_{n}": (lambda op: lambda self: P.apply(op, self))(f"special_{n}") for n in ("i0e", "i1", "i1e")}


def install(T) -> None:
    """Attach ``polygamma``, ``polygamma_``, ``mvlgamma`` and issue 17's hand front ends to Tensor."""
    T.polygamma, T.polygamma_, T.mvlgamma = _polygamma_method, _polygamma_inplace, _mvlgamma_method
    for name, fn in _METHODS.items():
        setattr(T, name, fn)
