"""The reduction table: one record per reduction op, read by the cpu backend (the numpy function and the
accumulator rule), the OpenCL launcher and ``kernels/reduce.cl.mako`` (the C expressions, through render
parameters). A new reduction is one record.

pyopencl's ``ReductionKernel(neutral, reduce_expr, map_expr)`` is the model: ``identity`` is the neutral
element, ``c`` combines two accumulated values ``a`` and ``b`` (``ACC`` is the accumulator's C type), and
``mask`` maps each input to ``x != 0`` first. Vector forms combine ``VEC``-wide vectors (``{vec}`` in an
expression is the lane count); masks are ``int`` lanes there, -1 for true.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# the neutral elements of max and min for integer accumulators, by C type (floats use -INFINITY / INFINITY)
_LOWEST = {"uchar": "0", "char": "CHAR_MIN", "short": "SHRT_MIN", "int": "INT_MIN", "long": "LONG_MIN"}
_HIGHEST = {"uchar": "UCHAR_MAX", "char": "CHAR_MAX", "short": "SHRT_MAX", "int": "INT_MAX", "long": "LONG_MAX"}
_FLOATS = ("float", "double")


@dataclass(frozen=True)
class Reduction:
    np: Callable  # numpy's reduction, called with axis= and keepdims=
    acc: str  # the accumulator rule, see ``acc_kind``: "wide", "exact" or "bool"
    identity: object  # the value of a reduction over zero elements; None: it has none (the ops layer raises)
    c_identity: str | dict  # the neutral element in C: one literal, or one per accumulator C type ("float" for both floats)
    c: str  # combine(a, b) for floating accumulators
    vc: str  # the vector combine for floating accumulators
    c_int: str | None = None  # combine(a, b) for integer and bool accumulators, when it differs from ``c``
    vc_int: str | None = None  # the vector combine for integer and bool accumulators, when it differs from ``vc``
    vc_identity: str | None = None  # the vector neutral element, when it differs from ``c_identity``
    mask: bool = False  # inputs are read as (x != 0), vector lanes are int masks
    arg: str | None = None  # ">" or "<": the op also gives indices (max/min), this comparison picks the winner
    np_arg: Callable | None = None  # numpy's index function for ``arg`` (NaN wins, as in torch)

    def c_exprs(self, acc_ctype: str, vec: int) -> dict:
        """The render parameters of reduce.cl.mako for accumulator C type ``acc_ctype`` and ``vec`` lanes."""
        is_float = acc_ctype in _FLOATS
        identity = self.c_identity
        if isinstance(identity, dict):
            identity = identity["float" if is_float else acc_ctype]
        combine = self.c if is_float or self.c_int is None else self.c_int
        vcombine = self.vc if is_float or self.vc_int is None else self.vc_int
        return dict(identity=identity, combine=combine, videntity=self.vc_identity or identity,
                    vcombine=vcombine.replace("{vec}", str(vec)), mask=self.mask, arg=self.arg)


REDUCTIONS: dict[str, Reduction] = {
    # integer sums and products wrap through ulong: signed overflow is undefined in C, numpy and torch wrap
    "sum": Reduction(np.sum, "wide", 0, "0", "a + b", "a + b", c_int="(ACC)((ulong)a + (ulong)b)",
                     vc_int="as_long{vec}(as_ulong{vec}(a) + as_ulong{vec}(b))"),
    "prod": Reduction(np.prod, "wide", 1, "1", "a * b", "a * b", c_int="(ACC)((ulong)a * (ulong)b)",
                      vc_int="as_long{vec}(as_ulong{vec}(a) * as_ulong{vec}(b))"),
    # max/min keep a NaN once they have seen one (torch semantics)
    "max": Reduction(np.max, "exact", None, {"float": "-INFINITY", **_LOWEST}, "(b > a || isnan(b)) ? b : a",
                     "select(a, b, (b > a) | isnan(b))", c_int="b > a ? b : a", vc_int="max(a, b)",
                     arg=">", np_arg=np.argmax),
    "min": Reduction(np.min, "exact", None, {"float": "INFINITY", **_HIGHEST}, "(b < a || isnan(b)) ? b : a",
                     "select(a, b, (b < a) | isnan(b))", c_int="b < a ? b : a", vc_int="min(a, b)",
                     arg="<", np_arg=np.argmin),
    "all": Reduction(np.all, "bool", True, "1", "a & b", "a & b", vc_identity="-1", mask=True),
    "any": Reduction(np.any, "bool", False, "0", "a | b", "a | b", mask=True),
}

