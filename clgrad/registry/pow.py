"""pow with a Python-number exponent: which kernel computes ``base ** exponent`` (PyTorch's CPU special cases),
and the repeated-multiplication expression of small integer powers with its numpy reference. The records using
them are in ``elementwise.py``."""
from __future__ import annotations

import numpy as np

# ---- pow with a Python-number exponent ----------------------------------------------------------------------
# PyTorch's CPU pow (pow_Tensor_Scalar_out, pow_tensor_scalar_kernel) switches on the exponent's value: 0 fills
# ones, 1 copies, 0.5 is sqrt, -0.5 rsqrt, -1 reciprocal (float32/float64 only), 2 is x * x, 3 x * x * x and
# -2 is 1 / (x * x); so do the kernels picked here (OpenCL's pow() runs 1000x slower than a multiply on PoCL).
# Other integers up to 15 in magnitude multiply the binary powers x, x^2, x^4, x^8 the exponent's bits select
# (within a few ulp of PyTorch's std::pow). The autograd node stays pow's: only the forward kernel changes.
POW_BITS = " * ".join(f"(((int)b & {1 << k}) ? {f} : K(1.0))" for k, f in enumerate(
    ("a", "(a * a)", "((a * a) * (a * a))", "(((a * a) * (a * a)) * ((a * a) * (a * a)))")))
_POW_MAX_INT = 15


def np_pow_bits(a, b):
    bits = np.asarray(b).astype(np.int64)
    a2 = a * a
    a4 = a2 * a2
    one = np.ones_like(a)
    return (np.where(bits & 1, a, one) * np.where(bits & 2, a2, one) * np.where(bits & 4, a4, one)
            * np.where(bits & 8, a4 * a4, one))


_POW_FIXED = {2.0: "square", 3.0: "pow_cube", -2.0: "pow_inv_square"}
_POW_FLOAT = {0.5: "sqrt", -0.5: "rsqrt", -1.0: "reciprocal"}  # PyTorch: float32, float64 (and complex) only


def pow_scalar_kernel(exponent, compute: str):
    """The kernel computing ``base ** exponent`` for a Python-number ``exponent`` in a float ``compute`` dtype
    (its name), as ``(op, extra)``: the op's operands are the base followed by ``extra``, or the number 1 alone
    when ``extra`` is None (exponent 0 fills ones). None: the general pow kernel."""
    try:
        e = float(exponent)
    except OverflowError:  # an int beyond float's range
        return None
    if e == 0:
        return "identity", None
    if e == 1:
        return "identity", ()
    if e == 2 or compute not in ("float32", "float64"):  # float16 takes only these (its PyTorch pow is std::pow)
        return ("square", ()) if e == 2 else None
    if e in _POW_FIXED:
        return _POW_FIXED[e], ()
    if e in _POW_FLOAT:
        return _POW_FLOAT[e], ()
    if e.is_integer() and abs(e) <= _POW_MAX_INT:
        return ("pow_bits" if e > 0 else "pow_inv_bits"), (abs(e),)
    return None
