"""What every backend shares: the tensor descriptor backends work on, the numeric rules both backends follow
(accumulation, rounding, the first bad index), and the conv window.

Backends never see the Tensor class. They take tensor descriptors: anything with ``_storage``, ``dtype``,
``_shape``/``shape``, ``_strides``, ``_offset``, ``numel()``, ``dim()`` and ``device`` (a Tensor is one, by duck
typing). Where a backend needs a view or a scratch tensor of its own it builds a ``Desc``.
"""
from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np

from .. import dtypes as D
from ..registry.reductions import REDUCTIONS

INT32_MAX = 2**31 - 1  # the largest index 32-bit kernel index math reaches
# what a Python scalar operand can be; anything else a backend is handed is a tensor descriptor
SCALAR_TYPES = (int, float, bool, np.number, np.bool_)


def _bfloat16_scalars(npd) -> None:
    """ml_dtypes' bfloat16 scalar (no np.number) is a scalar too, from when clgrad's bfloat16 resolves its numpy
    type (dtypes._LazyNumpy); readers use ``common.SCALAR_TYPES`` at call time."""
    global SCALAR_TYPES
    if npd.type not in SCALAR_TYPES:
        SCALAR_TYPES = SCALAR_TYPES + (npd.type,)


D._RESOLVE_HOOKS.append(_bfloat16_scalars)
if "ml_dtypes" in sys.modules:  # already imported by the program: resolve now (cheap)
    D.bfloat16.np  # noqa: B018


def is_scalar(x) -> bool:
    """Whether an operand is a Python (or numpy) scalar rather than a tensor descriptor."""
    return isinstance(x, SCALAR_TYPES)


def pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()


def contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class Desc:
    """A backend's own tensor descriptor: a view of a Storage (shape, strides, offset), nothing else."""

    __slots__ = ("_storage", "dtype", "_shape", "_strides", "_offset")

    def __init__(self, storage, shape, strides=None, offset: int = 0, dt: D.dtype | None = None):
        self._storage = storage
        self.dtype = dt or storage.dtype
        self._shape = tuple(shape)
        self._strides = contiguous_strides(self._shape) if strides is None else tuple(strides)
        self._offset = offset

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def device(self):
        return self._storage.device

    def numel(self) -> int:
        return math.prod(self._shape)

    def dim(self) -> int:
        return len(self._shape)


def view(t, shape, strides, offset: int | None = None) -> Desc:
    """A descriptor over ``t``'s storage with another shape, strides and (by default the same) offset."""
    return Desc(t._storage, shape, strides, t._offset if offset is None else offset, t.dtype)


def expand(t, shape) -> Desc:
    """``t`` broadcast to ``shape`` (trailing dims aligned, stride 0 where ``t`` has size 1 or no dim)."""
    lead = len(shape) - len(t._shape)
    strides = [0] * lead + [0 if n == 1 else s for n, s in zip(t._shape, t._strides)]
    return view(t, shape, strides)


def is_contiguous(t) -> bool:
    """Row-major dense (size-1 dims may have any stride), as Tensor.is_contiguous."""
    expect = 1
    for n, s in zip(reversed(t._shape), reversed(t._strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def copy_compute(src_dt: D.dtype, out_dt: D.dtype) -> D.dtype:
    """The compute dtype of a copy (the ``identity`` op): the source's, except a 16-bit float widens unless stored as
    itself."""
    return src_dt if src_dt not in D.HALF_FLOATS or out_dt is src_dt else D.float32


# ---- numpy rules both backends follow (the cpu backend computes with them; the kernels match them) ----------
def pairs(host) -> np.ndarray:
    """A complex host array as its interleaved (re, im) real values (what a complex tensor's storage holds)."""
    host = np.asarray(host)
    return np.ascontiguousarray(host).view(host.real.dtype) if host.dtype.kind == "c" else host


def complex_unsupported(t, op: str | None = None) -> NotImplementedError:
    """PyTorch's error for a complex descriptor reaching a primitive (the backstop behind the ops layer's guards:
    a kernel would read the (re, im) pairs as reals). Names the primitive that was called."""
    op = op or sys._getframe(2).f_code.co_name
    dt = t.dtype
    return NotImplementedError(f"\"{op}\" not implemented for '{dt.scalar_name}' (dtype {dt.name}) on device {t.device}")


def view_of(t) -> np.ndarray:
    """A numpy view (shared memory, writeable) of a cpu tensor."""
    st = t._storage
    if t.dtype.kind == "c":
        raise complex_unsupported(t)
    if t.numel() == 0:
        return np.empty(t.shape, st.dtype.np)
    item = st.dtype.itemsize
    return np.ndarray(
        t.shape, st.dtype.np, buffer=st.data, offset=t._offset * item, strides=tuple(s * item for s in t._strides)
    )


def compute_np(d: D.dtype) -> np.dtype:
    """numpy dtype that arithmetic runs in: float16 and bfloat16 compute in float32, as on OpenCL."""
    return np.dtype(np.float32) if d in D.HALF_FLOATS else d.np


def cast(values: np.ndarray, to: D.dtype) -> np.ndarray:
    """Convert computed values to ``to`` exactly as the OpenCL kernels' store does."""
    values = np.asarray(values)
    if to is D.bool:
        return values != 0
    if to is D.float16 and values.dtype == np.float64:
        values = values.astype(np.float32)  # double -> float -> half, as c10::Half (and the kernels) convert
    if to is D.bfloat16:
        return to_bfloat16(values)
    if values.dtype.kind == "f" and to.kind in "iu" and to is not D.int64:
        # C leaves float -> small int of out-of-range values undefined; go through int64 everywhere
        with np.errstate(invalid="ignore"):
            return values.astype(np.int64).astype(to.np)
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(to.np)


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """c10::BFloat16's conversion (and the kernels' store): through float32 (a double or an int64 is rounded twice,
    as PyTorch converts), then to nearest even; NaN becomes 0x7fc0."""
    with np.errstate(invalid="ignore", over="ignore"):
        f = np.asarray(values, dtype=np.float32) if values.dtype != D.bfloat16.np else values
        out = f.astype(D.bfloat16.np)
    if f.dtype.kind == "f":
        out.view(np.uint16)[np.isnan(f)] = 0x7FC0
    return out


def acc_dtype(op: str, src: D.dtype, out: D.dtype) -> D.dtype:
    """The dtype reduction (or scan) ``op`` accumulates in, by its record's rule (``registry/reductions.py``):
    "wide" (sum, prod) float32 for float16, int64 for integers; "exact" (max, min) the input's own type (float32
    for float16); "bool" (all, any)."""
    rule = REDUCTIONS[op].acc
    if rule == "wide":
        if out.kind == "f":
            return D.float32 if out in D.HALF_FLOATS else out
        return D.int64
    if rule == "exact":
        return D.float32 if src in D.HALF_FLOATS else src
    return D.bool


def first_bad(hosts, wrap: bool):
    """(k, value) of the first out-of-range index in iteration order (then in index order), or None.

    ``hosts`` are (values broadcast over R, size, step); with ``wrap`` negative values count from the end.
    """
    best = None
    for k, (v, size, _) in enumerate(hosts):
        bad = (v < (-size if wrap else 0)) | (v >= size)
        if bad.any():
            pos = int(np.flatnonzero(bad.reshape(-1))[0])
            if best is None or (pos, k) < best[0]:
                best = ((pos, k), int(v.reshape(-1)[pos]))
    return None if best is None else (best[0][1], best[1])


class Window(NamedTuple):
    """A 2-D sliding window: kernel, stride, padding before (top, left), dilation, and the output size.

    Padding after is implicit: windows may reach past the input's end, and what they reach there is padding.
    """

    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    oh: int
    ow: int
