"""Elementwise ops: promotion, device checks and broadcasting in one place, then one backend call."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd import graph
from ..autograd.grad_mode import is_grad_enabled
from ..backends.common import cast, view_of
from ..registry.elementwise import OPS, pow_scalar_kernel
from ..tensor import Tensor, is_tensor
from . import creation
from . import elementwise as E
from .views import broadcast_shapes, expand_strides

_MASK_HINT = "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
# PyTorch's own words where an op rejects bool operands with a hint rather than a plain "not implemented"
_BOOL_ERRORS = {
    "neg": "Negation, the `-` operator, on a bool tensor is not supported. " + _MASK_HINT,
    "relu": "Boolean inputs not supported for relu",
}


# complex implementations by op name (elementwise ops, "copy", "fill", "sum", "matmul"...), registered by
# ops/complex.py: complex values never reach a backend, they are composed from real ops on (re, im) pair views
COMPLEX: dict = {}


def has_complex(operands) -> bool:
    return any(isinstance(x, complex) or (is_tensor(x) and x.dtype.kind == "c") for x in operands)


def complex_op(op: str, operands, out=None):
    """``op`` on complex operands through its registered composition, else PyTorch's "not implemented" error."""
    impl = COMPLEX.get(op)
    if impl is None:
        tensors = [x for x in (*operands, out) if is_tensor(x)]
        dt = next((t.dtype for t in tensors if t.dtype.kind == "c"), D.complex64)
        raise unsupported(op, dt, tensors[0].device if tensors else "cpu")
    return impl(*operands, out=out)


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool, np.number, np.bool_))


def common_device(tensors, outputs=()):
    """The device an op runs on, checked as PyTorch's TensorIterator does: the first non-cpu device among
    outputs and inputs; every other tensor must be on it, except 0-dim cpu inputs (they travel as scalars)."""
    everything = [*outputs, *tensors]
    dev = next((t.device for t in everything if t.device.type != "cpu"), everything[0].device)
    for t in everything:
        if t.device != dev and not (t.device.type == "cpu" and t.dim() == 0 and not any(t is o for o in outputs)):
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {dev} and {t.device}!"
            )
    return dev


def can_cast(src: D.dtype, dst: D.dtype) -> bool:
    """PyTorch's rule for writing a result into an existing tensor: never float->int, never ->bool."""
    if src.kind == "f" and dst.kind != "f":
        return False
    if src.kind != "b" and dst.kind == "b":
        return False
    return True


def unsupported(op: str, dt: D.dtype, dev) -> NotImplementedError:
    """PyTorch's error for a dtype an op has no kernel for, naming the device too."""
    return NotImplementedError(f"\"{op}\" not implemented for '{dt.scalar_name}' (dtype {dt.name}) on device {dev}")


def compute_dtype(op: str, operands, dev) -> D.dtype:
    """The dtype ``op`` computes in: the promoted dtype, floats for float-only ops, checked against the table."""
    entry = OPS[op]
    rt = D.result_type(*operands)
    if op == "square" and rt is D.bool:
        rt = D.int64  # PyTorch's square is pow(x, 2), and bool ** int promotes to int64
    if rt.kind not in entry.allow:
        if rt is D.bool and op in _BOOL_ERRORS:
            raise RuntimeError(_BOOL_ERRORS[op])
        raise unsupported(op, rt, dev)
    if entry.kind == "float":
        return D.float_of(rt)
    return rt


def _check_sub(a, b):
    kinds = [x.dtype is D.bool if is_tensor(x) else isinstance(x, (bool, np.bool_)) for x in (a, b)]
    if all(kinds):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."
        )
    if any(kinds):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. " + _MASK_HINT)


def _check_pow(base, exponent):
    if (is_tensor(base) and base.dtype.kind in "biu" and isinstance(exponent, (int, np.integer))
            and not isinstance(exponent, bool) and exponent < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _check_where(condition, *_):
    if not is_tensor(condition):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition.dtype is D.uint8:
        warnings.warn(
            "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future "
            "version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=4,
        )
    elif condition.dtype is not D.bool:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype {condition.dtype.scalar_name}"
        )


# PyTorch's argument checks that go beyond dtype promotion, run before anything is computed
_CHECKS = {"sub": _check_sub, "pow": _check_pow, "where": _check_where}


def check_operands(op: str, operands) -> None:
    """Operand types and PyTorch's op-specific argument checks (bool subtraction, negative int powers...)."""
    for x in operands:
        if not is_tensor(x) and not _is_number(x):
            raise TypeError(f"{op}(): expected Tensor or number operands, but got {type(x).__name__}")
    if not any(is_tensor(x) for x in operands):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(operands[0]).__name__}")
    if op in _CHECKS:
        _CHECKS[op](*operands)


def _output(shape, result_dtype, dev, out):
    """A new result tensor, or ``out`` checked for shape and castability as PyTorch checks it."""
    if out is None:
        return Tensor._empty(shape, result_dtype, dev)
    if out.shape != shape and broadcast_shapes(out.shape, shape) != out.shape:
        raise RuntimeError(
            f"output with shape {list(out.shape)} doesn't match the broadcast shape {list(broadcast_shapes(out.shape, shape))}"
        )
    if any(st == 0 and n > 1 for n, st in zip(out.shape, out._strides)):  # e.g. an expand()ed tensor
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )
    if not can_cast(result_dtype, out.dtype):
        raise RuntimeError(
            f"result type {result_dtype.scalar_name} can't be cast to the desired output type {out.dtype.scalar_name}"
        )
    return out


def apply(op: str, *operands, out=None, compute: D.dtype | None = None):
    """Run elementwise ``op`` over tensors and Python scalars, broadcasting, into ``out`` or a new tensor.

    When autograd records (an operand requires grad), the op goes through its ``Function``; an ``out`` that
    is also an operand makes it an in-place op.
    """
    key = _plan_key(op, operands, out, compute)
    if key is None:
        return _apply(op, operands, out, compute)
    if key is _TRACKED:  # autograd records it (what _apply would find first)
        return _apply_tracked(op, operands, out, compute)
    plan = _PLANS.get(key)
    if plan is not None:
        if out is None:
            return _run_plan(plan, operands, None)
        if not any(x._storage is out._storage and not x._same_view(out) for x in operands if is_tensor(x)):
            return _run_plan(plan, operands, out)
    result = _apply(op, operands, out, compute)
    _remember(key, result, operands, compute)
    return result


# Repeated ops skip promotion, device checks and broadcasting: a plan remembers their outcome for operands of
# the same dtypes, shapes, strides and devices (and Python scalar types), plus the backend's prepared launch.
_PLANS: dict = {}
backends.add_cache_listener(_PLANS.clear)  # plans hold the backends' launchers
_MAX_PLANS = 4096
_BIG = 2**31 - 1  # storages past int32 indexing get other kernels
_SCALARS = (int, float, bool)
_NO_PLAN = frozenset({"where"})  # its checks warn
_TRACKED = object()  # _plan_key's answer when autograd records the op: no plan, straight to its Function


def _plan_key(op: str, operands, out, compute):
    """The plan's key: the op, its operands' dtypes, shapes, strides, devices (as (type, index): device's own hash is
    Python code) and index widths, the scalars' types; None where no plan applies, ``_TRACKED`` where autograd records
    the op."""
    if op in _NO_PLAN:
        return None
    grad = is_grad_enabled()
    key = (op, compute, D.get_default_dtype())  # int tensor / float scalar promote to the default dtype
    tracked = False
    for x in operands:
        t = type(x)
        if t in _SCALARS:
            key += (t,)
            continue
        s = getattr(x, "_storage", None)
        if s is None:
            return None
        if x.dtype.kind == "c":  # complex operands take their compositions (ops/complex.py), never a plan
            return None
        tracked = tracked or (grad and x.requires_grad)
        dev = s.device
        key += (x.dtype, x._shape, x._strides, dev.type, dev.index, s.size > _BIG, x is out)
    if out is not None:
        s = out._storage
        if out.dtype.kind == "c":
            return None
        tracked = tracked or (grad and out.requires_grad)
        key += (out.dtype, out._shape, out._strides, s.device.type, s.device.index, s.size > _BIG)
    if tracked:
        return _TRACKED
    if op == "pow":  # a number exponent's value picks the kernel (and negative ones fail on integers)
        key += (operands[1] if type(operands[1]) in _SCALARS else None,)
    return key


def _remember(key, out, operands, compute) -> None:
    if out.numel() == 0 or any(is_tensor(x) and x.device != out.device for x in operands):
        return  # nothing to launch, or 0-dim cpu tensors travelling as scalars: keep the general path
    expanded = tuple(expand_strides(x._shape, x._strides, out._shape)[1] if is_tensor(x) and x._shape != out._shape
                     else None for x in operands)
    inputs = [x.expand(out._shape) if is_tensor(x) else x for x in operands]
    if compute is None:
        bool_args = OPS[key[0]].bool_args
        compute = compute_dtype(key[0], [x for k, x in enumerate(operands) if k not in bool_args], out.device)
    op = key[0]
    if op == "pow" and compute.kind == "f" and is_tensor(operands[0]) and _is_number(operands[1]):
        op, inputs = _pow_scalar(operands[1], inputs, compute)
        launch = _pow_launch(backends.get(out.device).elementwise_launcher(op, out, inputs, compute), inputs)
    else:
        launch = backends.get(out.device).elementwise_launcher(op, out, inputs, compute)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    if not any(st is not None for st in expanded):
        expanded = None  # nothing to broadcast: the operands go to the kernel as they are
    _PLANS[key] = (_maker(out.device, out.dtype, out.numel()), out.dtype, out._shape, out._strides, expanded, launch)


def _maker(dev, dt: D.dtype, numel: int):
    """A function of no arguments giving a new storage for a plan's result: the backend's ``empty_maker`` where it
    has one (OpenCL: the allocator's pooled path), else its ``empty`` with the arguments bound."""
    be = backends.get(dev)
    if hasattr(be, "empty_maker"):
        return be.empty_maker(dev, dt, numel)
    return functools.partial(be.empty, dev, dt, numel)


def _run_plan(plan, operands, out):
    make, dt, shape, strides, expanded, launch = plan
    inputs = operands if expanded is None else [
        x if st is None else Tensor._make(x._storage, x.dtype, shape, st, x._offset) for x, st in zip(operands, expanded)]
    if out is None:
        out = Tensor._make(make(), dt, shape, strides)
        launch(out, inputs)
    else:
        launch(out, inputs)
        out._storage.version += 1
    return out


def _apply(op, operands, out, compute):
    if has_complex((*operands, out)):
        return complex_op(op, operands, out)
    if is_grad_enabled() and any(is_tensor(x) and x.requires_grad for x in (*operands, out)):
        return _apply_tracked(op, operands, out, compute)
    entry = OPS[op]
    check_operands(op, operands)
    dev = common_device([x for x in operands if is_tensor(x)], () if out is None else (out,))
    if compute is None:
        compute = compute_dtype(op, [x for k, x in enumerate(operands) if k not in entry.bool_args], dev)
    result_dtype = D.bool if entry.predicate else compute
    shape = broadcast_shapes(*(x.shape for x in operands if is_tensor(x)))
    out_given = out is not None
    out = _output(shape, result_dtype, dev, out)
    shape = out.shape
    inputs = []
    for k, x in enumerate(operands):
        if is_tensor(x):
            if x.device != dev:  # a 0-dim cpu tensor next to device tensors travels as a scalar
                x = _host_scalar(x, D.bool if k in entry.bool_args else compute)
            else:
                if x._storage is out._storage and x is not out and not x._same_view(out):
                    x = x.clone()  # partially overlapping views: read a snapshot, as numpy does
                if x.shape != shape:
                    x = x.expand(shape)
        inputs.append(x)
    if op == "pow" and compute.kind == "f" and is_tensor(operands[0]) and _is_number(operands[1]):
        op, inputs = _pow_scalar(operands[1], inputs, compute)
    backends.get(dev).elementwise(op, out, inputs, compute)
    if out_given:
        out._storage.version += 1
    return out


def _pow_scalar(exponent, inputs, compute):
    """pow's kernel for a number exponent: PyTorch's special cases (x * x for 2, sqrt for 0.5...)."""
    picked = pow_scalar_kernel(exponent, compute.name)
    if picked is None:
        return "pow", inputs
    op, extra = picked
    return op, [1] if extra is None else [inputs[0], *extra]


def _pow_launch(launch, picked):
    """The plan's launch for pow's special kernels: their operands from pow's (base, exponent)."""
    if len(picked) == 1 and not is_tensor(picked[0]):  # ones
        return lambda out, operands: launch(out, picked)
    extra = picked[1:]
    return lambda out, operands: launch(out, [operands[0], *extra])


def _apply_tracked(op, operands, out, compute):
    fn = E.FUNCTIONS[op]
    if out is None:  # no keyword when there is none to pass: Function.apply then binds nothing
        return fn.apply(*operands) if compute is None else fn.apply(*operands, compute=compute)
    if any(x is out for x in operands):
        return graph.inplace(out, lambda old: fn.apply(*[old if x is out else x for x in operands], compute=compute))
    raise RuntimeError(
        f"{op}(): functions with out=... arguments don't support automatic differentiation, but one of the "
        "arguments requires grad."
    )


def _host_scalar(t, compute: D.dtype):
    """The value of a 0-dim cpu tensor, converted to the compute dtype as the tensor itself would be."""
    return cast(view_of(t), compute)[()]


def cast_into(out, src):
    """Copy ``src`` into ``out`` on the same device, converting dtype (the ``identity`` op)."""
    if out.dtype.kind == "c" or src.dtype.kind == "c":
        return COMPLEX["copy"](out, src)
    if src._storage is out._storage and not src._same_view(out):
        src = src.clone()
    if src.shape != out.shape:
        src = src.expand(out.shape)
    compute = src.dtype if src.dtype not in D.HALF_FLOATS or out.dtype is src.dtype else D.float32
    backends.get(out.device).elementwise("identity", out, [src], compute)
    return out


def fill(out, value):
    """Set every element of ``out`` to a Python scalar, converted to ``out``'s dtype on the host."""
    if out.dtype.kind == "c" or isinstance(value, complex):
        return COMPLEX["fill"](out, value)
    if is_grad_enabled() and out.requires_grad:
        # the old values get a zero gradient; the result still belongs to the graph (views rebase their base)
        return graph.inplace(out, lambda old: old * 0 + value)
    creation.check_fill_value(value, out.dtype)
    value = cast(np.array(value), out.dtype)[()]
    backends.get(out.device).elementwise("identity", out, [value], out.dtype)
    out._storage.version += 1
    return out
