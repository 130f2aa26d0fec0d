from __future__ import annotations

# Numpy reference implementation of the Philox4x32-10 random stream.
#
# This module is the ground truth for ``clgrad/kernels/random.cl.mako``: the
# OpenCL kernel rendered from that template must produce exactly the numbers
# returned by :func:`sample` (bit-identical for ``uniform``, ``randint`` and
# ``bernoulli``; within a few ulps for ``normal``, whose transcendental
# functions differ slightly between devices).
#
# Stream definition
# -----------------
# The generator state is ``(seed, offset)``, both uint64.  The Philox key is
# ``(lo32(seed), hi32(seed))``.  Element ``i`` of a request of ``n`` elements
# uses the 64-bit counter ``c = offset + i`` (wrapping), laid out as the four
# Philox counter words ``(lo32(c), hi32(c), 0, 0)``, and is derived from the
# output words ``w0..w3`` of one Philox4x32-10 block.  Because an element only
# depends on ``(seed, offset + i)``, results never depend on how the work is
# split across work-items / work-groups, and advancing ``offset`` by ``n``
# after a request gives a non-overlapping continuation of the stream.
#
# Reference: Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as
# 1, 2, 3", SC'11 (the Random123 library).
from pathlib import Path

import numpy as np

from .. import dtypes as D

__all__ = [
    "KERNEL_TEMPLATE",
    "STORAGE_CTYPE",
    "SUPPORTED_DTYPES",
    "kernel_int_param",
    "kernel_params",
    "philox4x32",
    "philox4x32_words",
    "sample",
    "scalar_arg_dtypes",
]

# Random123 constants for Philox4x32.
PHILOX_M0 = 0xD2511F53  # round multipliers
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # Weyl sequence key increments (golden ratio, sqrt(3)-1)
PHILOX_W1 = 0xBB67AE85
PHILOX_ROUNDS = 10

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF

#: Path of the Mako template rendering the OpenCL kernel for this stream.
KERNEL_TEMPLATE = Path(__file__).resolve().parent.parent / "kernels" / "random.cl.mako"

#: OpenCL C storage type of each dtype name ('half' is storage only:
#: written with vstore_half, so cl_khr_fp16 is not needed).
STORAGE_CTYPE = {
    "bool": "uchar",
    "uint8": "uchar",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "float16": "half",
    "float32": "float",
    "float64": "double",
    "bfloat16": "bfloat16",  # kernels/prelude.cl.mako's ushort storage, stored by its load/store helpers
}

_FLOATS = ("float16", "float32", "float64", "bfloat16")
_INTS = ("uint8", "int8", "int16", "int32", "int64")

#: Output dtypes each distribution supports.
SUPPORTED_DTYPES = {
    "uniform": _FLOATS,
    "normal": _FLOATS,
    "randint": _INTS + _FLOATS,
    "bernoulli": ("bool",) + _INTS + _FLOATS,
}

_F32 = np.float32
_TWO_PI_F32 = np.float32(2.0 * np.pi)  # same constant as 6.2831855f in the kernel


# --------------------------------------------------------------------------
# Philox4x32-10 block function
# --------------------------------------------------------------------------
def _mulhilo32(a: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) 32-bit halves of the 64-bit product a * b (b: uint32 array)."""
    prod = np.uint64(a) * b.astype(np.uint64)  # < 2**64, never overflows
    return prod.astype(np.uint32), (prod >> np.uint64(32)).astype(np.uint32)


def philox4x32_words(
    c0, c1, c2, c3, k0, k1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Philox4x32-10 on counter words (c0, c1, c2, c3) with key (k0, k1).

    All arguments are uint32 array-likes (broadcast together); returns the
    four uint32 output words.  Matches Random123's ``philox4x32(ctr, key)``.
    """
    c0, c1, c2, c3, k0, k1 = (
        np.asarray(x, dtype=np.uint32) for x in (c0, c1, c2, c3, k0, k1)
    )
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    # uint32 wrap-around is the intended arithmetic (key bumps); silence the
    # overflow warnings numpy emits for 0-d inputs.
    with np.errstate(over="ignore"):
        for r in range(PHILOX_ROUNDS):
            if r:  # the key is bumped between rounds, not before the first
                k0 = k0 + np.uint32(PHILOX_W0)
                k1 = k1 + np.uint32(PHILOX_W1)
            lo0, hi0 = _mulhilo32(PHILOX_M0, c0)
            lo1, hi1 = _mulhilo32(PHILOX_M1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox4x32(
    counter: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One Philox4x32-10 block per 64-bit counter value, keyed by a 64-bit seed.

    ``counter`` is a uint64 array, used as counter words (lo32, hi32, 0, 0);
    the key is (lo32(seed), hi32(seed)).  Returns four uint32 arrays w0..w3
    with the shape of ``counter``.
    """
    counter = np.asarray(counter, dtype=np.uint64)
    seed = int(seed) & _MASK64
    lo = (counter & np.uint64(_MASK32)).astype(np.uint32)
    hi = (counter >> np.uint64(32)).astype(np.uint32)
    zero = np.zeros_like(lo)
    return philox4x32_words(lo, hi, zero, zero, seed & _MASK32, seed >> 32)


# --------------------------------------------------------------------------
# Distributions
# --------------------------------------------------------------------------
def _check(dist: str, dtype_name: str) -> None:
    if dist not in SUPPORTED_DTYPES:
        raise ValueError(
            f"unknown distribution {dist!r}; expected one of {sorted(SUPPORTED_DTYPES)}"
        )
    if dtype_name not in SUPPORTED_DTYPES[dist]:
        raise ValueError(f"distribution {dist!r} does not support dtype {dtype_name!r}")


def _uniform_f32(w0: np.ndarray) -> np.ndarray:
    """24 random bits -> float32 in [0, 1), exactly representable."""
    return (w0 >> np.uint32(8)).astype(_F32) * _F32(2.0**-24)


def sample(
    dist: str, dtype_name: str, n: int, seed: int, offset: int, p0, p1
) -> np.ndarray:
    """Reference output of the random kernel: ``n`` elements of ``dist``.

    ``p0, p1`` are (low, high) for uniform/randint (``randint`` draws from
    [low, high) and needs -2**63 <= low < high <= 2**63; the kernel receives
    ``high`` wrapped to int64, see :func:`kernel_int_param`), (mean, std) for
    normal and (p, unused) for bernoulli.  ``seed`` and ``offset`` are taken
    modulo 2**64.
    Returns a 1-D array of dtype ``dtype_name``.
    """
    _check(dist, dtype_name)
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    counter = np.arange(n, dtype=np.uint64) + np.uint64(
        int(offset) & _MASK64
    )  # wraps mod 2**64
    w0, w1, _, _ = philox4x32(counter, seed)
    out_dtype = D.as_dtype(dtype_name).np  # bfloat16's numpy type is imported on first use (dtypes.py)

    # Every expression below mirrors the kernel operation by operation, in the
    # same precision, so that the results are bit-identical (the kernel turns
    # off FP contraction so that it does not fuse a*b+c into an fma).
    if dist == "uniform":
        if dtype_name == "float64":
            # 53 random bits: 27 from w0, 26 from w1.
            u = (
                (w0 >> np.uint32(5)).astype(np.float64) * 67108864.0
                + (w1 >> np.uint32(6)).astype(np.float64)
            ) * 2.0**-53
            low, high = float(p0), float(p1)
            return low + u * (high - low)
        if dtype_name == "float32":
            u = _uniform_f32(w0)
        elif dtype_name == "bfloat16":  # 8 bits, so that u itself is a bfloat16 value
            u = (w0 >> np.uint32(24)).astype(_F32) * _F32(2.0**-8)
        else:  # float16: only 11 bits, so that u itself is a float16 value
            u = (w0 >> np.uint32(21)).astype(_F32) * _F32(2.0**-11)
        low, high = _F32(p0), _F32(p1)
        return (low + u * (high - low)).astype(out_dtype)

    if dist == "normal":  # Box-Muller, first output only
        if dtype_name == "float64":
            u1 = (w0.astype(np.float64) + 1.0) * 2.0**-32  # (0, 1]: log(u1) finite
            u2 = w1.astype(np.float64) * 2.0**-32
            z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
            return float(p0) + float(p1) * z
        u1 = (w0.astype(_F32) + _F32(1.0)) * _F32(2.0**-32)
        u2 = w1.astype(_F32) * _F32(2.0**-32)
        z = np.sqrt(_F32(-2.0) * np.log(u1)) * np.cos(_TWO_PI_F32 * u2)
        return (_F32(p0) + _F32(p1) * z).astype(out_dtype)

    if dist == "randint":
        low, high = int(p0), int(p1)
        # high may be 2**63 so that [low, int64 max] (torch's random_() on
        # int64) and the full 64-bit range are expressible.
        if not (-(2**63) <= low < high <= 2**63):
            raise ValueError(
                f"randint needs int64 bounds with low < high, got [{low}, {high})"
            )
        bits = (w1.astype(np.uint64) << np.uint64(32)) | w0.astype(np.uint64)
        span = high - low  # 2**64 (the full range) needs no modulo
        r = bits % np.uint64(span) if span < 2**64 else bits
        # low + r in wrapping 64-bit arithmetic (the kernel does it in ulong,
        # avoiding signed-overflow UB); the true result is always in range.
        v = (r + np.uint64(low & _MASK64)).view(np.int64)
        return v.astype(out_dtype)

    # bernoulli
    u = _uniform_f32(w0)
    return (u < _F32(p0)).astype(out_dtype)


# --------------------------------------------------------------------------
# Kernel helpers
# --------------------------------------------------------------------------
def _param_ctype(dist: str, dtype_name: str) -> str:
    if dist == "randint":
        return "long"
    if dist == "bernoulli":
        return "float"
    return "double" if dtype_name == "float64" else "float"


def kernel_params(dist: str, dtype_name: str) -> dict:
    """Keyword arguments for rendering random.cl.mako (all except ``name``)."""
    _check(dist, dtype_name)
    return {
        "dist": dist,
        "out_ctype": STORAGE_CTYPE[dtype_name],
        "out_dtype": dtype_name,
        "param_ctype": _param_ctype(dist, dtype_name),
        "fp64": dtype_name == "float64",
    }


def kernel_int_param(value: int) -> int:
    """A randint bound as the kernel's ``long`` argument: wrapped mod 2**64
    (only ``high == 2**63`` changes, to -2**63; the kernel's ulong span
    arithmetic then gives back the intended span)."""
    return ((int(value) + 2**63) & _MASK64) - 2**63


_PARAM_NP = {"float": np.float32, "double": np.float64, "long": np.int64}


def scalar_arg_dtypes(dist: str, dtype_name: str) -> list:
    """Argument dtypes for pyopencl ``Kernel.set_scalar_arg_dtypes``.

    Order: out, out_offset, n, key_lo, key_hi, ctr_base, p0, p1.
    """
    _check(dist, dtype_name)
    param_np = _PARAM_NP[_param_ctype(dist, dtype_name)]
    return [
        None,
        np.int64,
        np.int64,
        np.uint32,
        np.uint32,
        np.uint64,
        param_np,
        param_np,
    ]
