"""``torch.masked``'s reductions and normalizations on strided tensors.

Each op replaces the masked-out elements of its input by the identity of the operation (0 for ``sum``, 1 for
``prod``, -inf for ``amax``/``softmax``/``logsumexp``, +inf for ``amin``/``softmin``, NaN for ``median``, which
then runs as ``nanmedian``) and runs the ordinary op, exactly as PyTorch's ``torch/masked/_ops.py`` does, so values,
dtypes and gradients are PyTorch's. ``mean``/``var``/``std`` divide by the count of masked-in elements (NaN where a
row is fully masked out). ``mask=None`` means every element is in. Only the strided layout exists in clgrad;
``MaskedTensor`` (a prototype in PyTorch) is not provided.
"""
from __future__ import annotations

import builtins
import math

from .. import dtypes as D
from ..ops import creation as _C

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean", "median", "logsumexp",
           "logaddexp", "norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize"]

_SMALL_INTS = (D.uint8, D.bool, D.int8, D.int16, D.int32)


def _clgrad():
    import clgrad  # the package namespace (the ops are composed from its public functions)

    return clgrad


def _identity(op: str, input, ord=2.0):
    """The value that leaves ``op``'s result unchanged (``_reduction_identity`` in PyTorch)."""
    dt = input.dtype
    if op in ("sum", "cumsum"):
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op in ("amax", "argmax", "logaddexp", "logsumexp"):
        return -math.inf if dt.is_floating_point else _clgrad().iinfo(dt).min
    if op in ("amin", "argmin"):
        return math.inf if dt.is_floating_point else _clgrad().iinfo(dt).max
    if op == "norm":
        return math.inf if ord == -math.inf else 0
    if op == "median":
        return math.nan
    raise NotImplementedError(f"identity of {op} on {dt} input")


def _canonical_dim(dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dims; ``None`` and ``()`` mean every dim (PyTorch's rule)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d % ndim in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, mask):
    """``mask`` broadcast to ``input``'s shape as bool (it may have fewer dims, never more)."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
        mask = _clgrad().broadcast_to(mask, input.shape)
    return mask.to(dtype=D.bool)


def _masked_input(op: str, input, mask, ord=2.0):
    """``input`` with its masked-out elements replaced by ``op``'s identity."""
    if mask is None:
        return input
    fill = _C.tensor(_identity(op, input, ord), dtype=input.dtype, device=input.device)
    return _clgrad().where(_input_mask(input, mask), input, fill)


def _sum_dtype(input, dtype):
    if dtype is None:
        return D.int64 if input.dtype in _SMALL_INTS else input.dtype
    return D.as_dtype(dtype)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001 - torch.masked.sum
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _clgrad().sum(_masked_input("sum", input, mask), dims, builtins.bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = _sum_dtype(input, dtype)
    result = _masked_input("prod", input, mask).to(dtype=dtype)
    for d in reversed(_canonical_dim(dim, input.ndim)):
        result = result.prod(dim=d, keepdim=builtins.bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    d = _canonical_dim(dim, input.ndim)[0]
    return _clgrad().cumsum(_masked_input("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    d = _canonical_dim(dim, input.ndim)[0]
    return _clgrad().cumprod(_masked_input("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def _extremum(op: str, input, dim, keepdim, dtype, mask):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    dims = _canonical_dim(dim, input.ndim)
    return getattr(_clgrad(), op)(_masked_input(op, input, mask), dims, builtins.bool(keepdim)).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    return _clgrad().argmax(_masked_input("argmax", input, mask), dim, builtins.bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    return _clgrad().argmin(_masked_input("argmin", input, mask), dim, builtins.bool(keepdim)).to(dtype=dtype)


def _counts(input, dim, keepdim, mask):
    """(count of masked-in elements, their sum's mask) over ``dim``."""
    if mask is None:
        ones = _C.ones(input.shape, dtype=D.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim), None
    inmask = _input_mask(input, mask)
    return inmask.sum(dim=_canonical_dim(dim, input.ndim), keepdim=builtins.bool(keepdim)), inmask


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    if not dtype.is_floating_point and not getattr(dtype, "is_complex", False):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    count, inmask = _counts(input, dim, keepdim, mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=D.float32)
    output = _clgrad().nanmedian(_masked_input("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not builtins.bool(_clgrad().isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _clgrad().logsumexp(_masked_input("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    a = _masked_input("logaddexp", input, input_mask)
    b = _masked_input("logaddexp", other, other_mask)
    return _clgrad().logaddexp(a, b).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    masked = _masked_input("norm", input, mask, ord)
    dims = _canonical_dim(dim, input.ndim)
    return _clgrad().linalg.vector_norm(masked, ord, dims, builtins.bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    correction = 1.0 if unbiased is None else float(builtins.bool(unbiased))
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else D.float32
    dtype = D.as_dtype(dtype)
    compute = dtype if dtype.is_floating_point else D.float32
    count, inmask = _counts(input, dim, True, mask)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    x = input - sample_mean
    total = sum(x * x, dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        count = (count.to(compute) - correction).clamp(min=0)
    output = (total / count).to(dtype=dtype)
    return output.sqrt() if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def _normalization(fn: str, identity_op: str, input, dim, dtype, mask):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    d = _canonical_dim(dim, input.ndim)[0]
    return getattr(_clgrad().nn.functional, fn)(_masked_input(identity_op, input, mask), d, dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    return _normalization("softmax", "amax", input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    return _normalization("log_softmax", "amax", input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    return _normalization("softmin", "amin", input, dim, dtype, mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else D.as_dtype(dtype)
    masked = _masked_input("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return masked / _clgrad().maximum(nrm, nrm.new_full([], eps))
