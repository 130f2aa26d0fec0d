"""Wiring a Function call into the graph, and the in-place rules shared by every in-place op."""
from __future__ import annotations

import traceback
import weakref

from ..tensor import Tensor, is_tensor
from .grad_mode import is_grad_enabled, set_enabled
from .nodes import ANOMALY, AccumulateGrad, SavedTensor
from .view_rules import AsStridedBackward0, CopySlices, geometry


def gradient_edge(t):
    """Where the gradient for ``t`` goes: its grad_fn, its leaf accumulator, or nowhere.

    A leaf holds its ``AccumulateGrad`` weakly (the graph holds it strongly), so a leaf and its
    accumulator don't keep each other alive, and every graph built from the leaf shares one accumulator.
    """
    if not isinstance(t, Tensor):
        return (None, 0)
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if not t._requires_grad:
        return (None, 0)
    ref = t.__dict__.get("_accumulator")
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accumulator = weakref.ref(acc)
    return (acc, 0)


def connect(ctx, args, outputs, is_view: bool = False):
    """Make ``ctx`` the grad_fn of ``outputs`` and record edges to ``args``' producers."""
    d = ctx.__dict__
    if (type(outputs) is Tensor and not outputs.__dict__ and not is_view and "_dirty" not in d
            and "_non_differentiable" not in d and outputs.dtype.is_floating_point
            and not any(outputs is a for a in args)):
        return _connect_new(ctx, args, outputs, d)
    edges = ctx._edges = tuple([gradient_edge(a) if is_tensor(a) else None for a in args])
    ctx.next_functions = tuple([e for e in edges if e is not None])
    ctx._input_meta = tuple([(a._shape, a.dtype, a.device) if is_tensor(a) else None for a in args])
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = {id(t) for t in d["_dirty"]} if "_dirty" in d else ()
    non_diff = d.get("_non_differentiable", ())
    result, dirty_views = [], []
    for i, out in enumerate(outs):
        if not is_tensor(out):
            result.append(out)
            continue
        if id(out) in dirty:
            _mark_dirty(out)
            if out._base is not None:
                dirty_views.append(out)
        elif any(out is a for a in args):
            out = out._view(out._shape, out._strides)  # an input returned as-is becomes a new alias
        od = out.__dict__
        old_fn, old_nr = od.get("_grad_fn"), out._output_nr
        if id(out) in non_diff or out.dtype.kind not in "fc":
            od["_grad_fn"], out._requires_grad = None, False
        else:
            od["_grad_fn"], out._output_nr = ctx, i
            if od.get("_retains_grad") and old_fn is not None:
                _move_retain(out, old_fn, old_nr)
            if is_view or "_view_version" in od:  # the node is right for the memory as it is now
                od["_view_version"] = out._storage.version
        result.append(out)
    ctx._output_meta = tuple([(o._shape, o.dtype, o.device) if is_tensor(o) else None for o in result])
    to_save = d.pop("_to_save", None)
    ctx._saved = [_save(t, ctx, result) for t in to_save] if to_save else ()
    for out in dirty_views:  # written through a view: the base learns that a region of it changed
        if out.__dict__.get("_grad_fn") is ctx:
            rebase_view(out._base, out, out)
    return result[0] if single else tuple(result)


_SAVED_NONE = SavedTensor(None)  # nothing saved in a slot: one shared, never-changing record


def _connect_new(ctx, args, out, d):
    """``connect`` for the common case (every elementwise op): one new float tensor out (nothing in its
    ``__dict__``: no grad_fn, view, or retain_grad yet), nothing dirty or non-differentiable. Same result."""
    edges = ctx._edges = tuple([gradient_edge(a) if isinstance(a, Tensor) else None for a in args])
    ctx.next_functions = tuple([e for e in edges if e is not None])
    ctx._input_meta = tuple([(a._shape, a.dtype, a.device) if isinstance(a, Tensor) else None for a in args])
    out.__dict__["_grad_fn"] = ctx  # output 0: the class default of _output_nr
    ctx._output_meta = ((out._shape, out.dtype, out.device),)
    to_save = d.pop("_to_save", None)
    if to_save:
        ctx._saved = [_SAVED_NONE if t is None else SavedTensor(t, output_nr=0) if t is out else SavedTensor(t)
                      for t in to_save]
    else:
        ctx._saved = ()
    return out


def _move_retain(t, old_fn, old_nr) -> None:
    """``retain_grad()`` follows the tensor to the node an in-place write gave it: ``.grad`` is then the gradient of
    the tensor as it is now (PyTorch's rule), and the old node no longer writes the pre-write gradient over it."""
    retains = old_fn.__dict__.get("_retains", {})
    ref = retains.get(old_nr)
    if ref is not None and ref() is t:
        del retains[old_nr]
    t.grad_fn.__dict__.setdefault("_retains", {})[t._output_nr] = weakref.ref(t)


def _mark_dirty(out) -> None:
    """An input the forward modified in place (``ctx.mark_dirty``): check it may be, count the write."""
    _check_inplace_leaf(out, dirty=True)
    base = out._base
    if base is not None and base.is_leaf and base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    out._storage.version += 1


def _save(t, ctx, outputs) -> SavedTensor:
    if t is None:
        return SavedTensor(None)
    for i, o in enumerate(outputs):
        # the output object itself, or the original object of a dirty input (the same Python object)
        if o is t and t.__dict__.get("_grad_fn") is ctx:
            return SavedTensor(t, output_nr=i)
    return SavedTensor(t)


def _check_inplace_leaf(t, dirty: bool = False) -> None:
    if t.is_leaf and t.requires_grad and is_grad_enabled():
        if dirty:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def inplace(target, compute):
    """Run an in-place op: ``compute(x)`` returns the new value of ``target`` computed out of place from x.

    Without autograd involvement the caller's fast path writes directly; this path keeps the graph right:
    the old value is kept (cloned) for backward, the result is copied into ``target``'s memory, ``target``
    takes over the result's place in the graph, and when ``target`` is a view its base becomes a
    ``CopySlices`` of its old value and the new region, while the view (and every other view of the same
    memory) rebuilds its ``grad_fn`` from the base on next use.
    """
    base = target._base
    _check_inplace_leaf(target)
    if base is not None and base.is_leaf and base.requires_grad and is_grad_enabled():
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    old = target.clone()  # saved tensors of the op must not see the overwrite
    result = compute(old)
    if base is None and old.requires_grad and not result.requires_grad:
        result = result + old * 0  # overwritten by a constant: the old value's producers get zero gradients
    prev = set_enabled(False)
    try:
        target.copy_(result)  # counts the write
    finally:
        set_enabled(prev)
    if base is not None and (result.requires_grad or base.requires_grad):
        rebase_view(base, target, result)
    elif result.requires_grad:
        old_fn, old_nr = target.__dict__.get("_grad_fn"), target._output_nr
        target.grad_fn, target._output_nr = result.grad_fn, result._output_nr
        if target.__dict__.get("_retains_grad") and old_fn is not None:
            _move_retain(target, old_fn, old_nr)
    return target


def needs_graph(*tensors) -> bool:
    """Whether an op on ``tensors`` must be recorded: grad mode is on and some tensor requires grad."""
    return is_grad_enabled() and any(is_tensor(t) and t.requires_grad for t in tensors)


def rebase_view(base, view, value) -> None:
    """After ``value`` was written through ``view``: the base becomes a CopySlices node, and the view (like
    any other view of that memory) rebuilds its grad_fn from the base on its next use."""
    ctx = CopySlices()
    ctx.geometry = geometry(base, view)
    ctx.needs_input_grad = (base.requires_grad, is_tensor(value) and value.requires_grad, False)
    if ANOMALY["enabled"]:
        ctx._forward_trace = "".join(traceback.format_stack()[:-1])
    out = connect(ctx, (base, value, None), base._view(base._shape, base._strides))
    old_fn, old_nr = base.__dict__.get("_grad_fn"), base._output_nr
    base.grad_fn, base._output_nr = out.grad_fn, 0
    if base.__dict__.get("_retains_grad") and old_fn is not None:
        _move_retain(base, old_fn, old_nr)
    view.__dict__["_view_version"] = -1


def refresh_view(view) -> None:
    """Point a tracked view's grad_fn at its base's current node (an ``AsStridedBackward0``)."""
    d = view.__dict__
    d["_view_version"] = view._storage.version
    base = view._base
    if base is None or not base.requires_grad:
        return  # nothing upstream to rebuild from: the view keeps the node it has
    ctx = AsStridedBackward0()
    ctx.needs_input_grad = (True, False)
    ctx.geometry = geometry(base, view)
    ctx._edges = (gradient_edge(base), None)
    ctx.next_functions = ctx._edges[:1]
    ctx._input_meta = ((base._shape, base.dtype, base.device), None)
    ctx._output_meta = ((view._shape, view.dtype, view.device),)
    ctx._saved = ()
    d["_grad_fn"] = ctx
    view._output_nr = 0
