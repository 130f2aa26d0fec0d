"""Elementwise ops: promotion, device checks and broadcasting in one place, then one backend call."""
from __future__ import annotations

from .. import backends
from .. import dtypes as D
from ..backends.ewtable import OPS
from .views import broadcast_shapes


def is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def common_device(tensors):
    """The device all tensors live on. 0-dim cpu tensors may join any device, as in PyTorch."""
    dev = None
    for t in tensors:
        if t.device.type == "cpu" and t.dim() == 0:
            continue
        if dev is None:
            dev = t.device
        elif t.device != dev:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {dev} and {t.device}!"
            )
    return dev if dev is not None else tensors[0].device


def can_cast(src: D.dtype, dst: D.dtype) -> bool:
    """PyTorch's rule for writing a result into an existing tensor: never float->int, never ->bool."""
    if src.kind == "f" and dst.kind != "f":
        return False
    if src.kind != "b" and dst.kind == "b":
        return False
    return True


def _unsupported(op: str, dt: D.dtype, dev) -> NotImplementedError:
    return NotImplementedError(f"'{op}' is not implemented for dtype {dt.name} on device {dev}")


def compute_dtype(op: str, operands, dev) -> D.dtype:
    entry = OPS[op]
    rt = D.result_type(*operands)
    if entry.kind == "float":
        return D.float_of(rt)
    if entry.kind == "int" and rt.kind == "f":
        raise _unsupported(op, rt, dev)
    return rt


def apply(op: str, *operands, out=None, compute: D.dtype | None = None):
    """Run elementwise ``op`` over tensors and Python scalars, broadcasting, into ``out`` or a new tensor."""
    from ..tensor import Tensor

    entry = OPS[op]
    tensors = [x for x in operands if is_tensor(x)]
    if out is not None:
        tensors = tensors + [out]
    for x in operands:
        if not is_tensor(x) and not isinstance(x, (int, float, bool)) and not hasattr(x, "dtype"):
            raise TypeError(f"{op}(): expected Tensor or number operands, but got {type(x).__name__}")
    dev = common_device(tensors)
    promote = [x for k, x in enumerate(operands) if k not in entry.bool_args]
    if compute is None:
        compute = compute_dtype(op, promote, dev)
    result_dtype = D.bool if entry.predicate else compute
    shape = broadcast_shapes(*(x.shape for x in operands if is_tensor(x)))
    if out is None:
        out = Tensor._empty(shape, result_dtype, dev)
    else:
        if out.shape != shape:
            if broadcast_shapes(out.shape, shape) != out.shape:
                raise RuntimeError(
                    f"output with shape {list(out.shape)} doesn't match the broadcast shape {list(broadcast_shapes(out.shape, shape))}"
                )
            shape = out.shape
        if not can_cast(result_dtype, out.dtype):
            raise RuntimeError(f"result type {result_dtype.name} can't be cast to the desired output type {out.dtype.name}")
    inputs = []
    for x in operands:
        if is_tensor(x):
            if x.device != dev:  # a 0-dim cpu tensor next to device tensors travels as a scalar
                x = x.item()
            elif x.shape != shape:
                x = x.expand(shape)
            elif x._storage is out._storage and x is not out and not x._same_view(out):
                x = x.clone()  # partially overlapping views: read a snapshot, as numpy does
        inputs.append(x)
    backends.get(dev).elementwise(op, out, inputs, compute)
    return out


def cast_into(out, src):
    """Copy ``src`` into ``out`` on the same device, converting dtype (the ``identity`` op)."""
    if src._storage is out._storage and not src._same_view(out):
        src = src.clone()
    if src.shape != out.shape:
        src = src.expand(out.shape)
    compute = src.dtype if src.dtype is not D.float16 or out.dtype is D.float16 else D.float32
    backends.get(out.device).elementwise("identity", out, [src], compute)
    return out


def fill(out, value):
    """Set every element of ``out`` to a Python scalar, converted to ``out``'s dtype on the host."""
    from ..backends.cpu import cast

    import numpy as np

    value = cast(np.array(value), out.dtype)[()]
    backends.get(out.device).elementwise("identity", out, [value], out.dtype)
    return out
