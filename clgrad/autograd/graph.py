"""Wiring a Function call into the graph, and the in-place rules shared by every in-place op."""
from __future__ import annotations

from .function import AccumulateGrad, SavedTensor, _is_tensor
from .grad_mode import is_grad_enabled, no_grad


def gradient_edge(t):
    """Where the gradient for ``t`` goes: its grad_fn, its leaf accumulator, or nowhere."""
    if not _is_tensor(t) or not t.requires_grad:
        return (None, 0)
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    acc = t.__dict__.get("_accumulator")
    if acc is None:
        acc = t._accumulator = AccumulateGrad(t)
    return (acc, 0)


def connect(ctx, args, outputs):
    """Make ``ctx`` the grad_fn of ``outputs`` and record edges to ``args``' producers."""
    ctx.next_functions = tuple(gradient_edge(a) for a in args)
    ctx._input_meta = tuple((a.shape, a.dtype, a.device) if _is_tensor(a) else None for a in args)
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = {id(t) for t in ctx.__dict__.get("_dirty", ())}
    non_diff = ctx.__dict__.get("_non_differentiable", set())
    arg_ids = {id(a) for a in args if _is_tensor(a)}
    result = []
    for i, out in enumerate(outs):
        if not _is_tensor(out):
            result.append(out)
            continue
        if id(out) in dirty:
            _check_inplace_leaf(out)
            out._storage.version += 1
        elif id(out) in arg_ids:
            out = out._view(out._shape, out._strides)  # an input returned as-is becomes a new alias
        if id(out) in non_diff or not out.dtype.is_floating_point:
            out.grad_fn, out._requires_grad = None, False
        else:
            out.grad_fn, out._output_nr = ctx, i
        result.append(out)
    ctx._output_meta = tuple((o.shape, o.dtype, o.device) if _is_tensor(o) else None for o in result)
    to_save = ctx.__dict__.pop("_to_save", ())
    out_ids = {id(o) for o in result if _is_tensor(o)}
    ctx._saved = [SavedTensor(t, _is_tensor(t) and id(t) in out_ids) if t is not None else SavedTensor(None, False)
                  for t in to_save]
    return result[0] if single else tuple(result)


def _check_inplace_leaf(t) -> None:
    if t.is_leaf and t.requires_grad and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def inplace(target, compute):
    """Run an in-place op: ``compute(x)`` returns the new value of ``target`` computed out of place from x.

    Without autograd involvement the caller's fast path writes directly; this path keeps the graph right:
    the old value is kept (cloned) for backward, the result is copied into ``target``'s memory, ``target``
    takes over the result's place in the graph, and a view's base learns that a region of it changed.
    """
    base = target._base
    _check_inplace_leaf(target)
    if base is not None and base.is_leaf and base.requires_grad and is_grad_enabled():
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    old = target.clone()  # saved tensors of the op must not see the overwrite
    result = compute(old)
    with no_grad():
        from ..ops.pointwise import cast_into

        cast_into(target, result)
    target._storage.version += 1
    if result.requires_grad:
        target.grad_fn, target._output_nr = result.grad_fn, result._output_nr
        if base is not None:
            from .view_rules import rebase_view

            rebase_view(base, target)
    return target


def needs_graph(*tensors) -> bool:
    return is_grad_enabled() and any(_is_tensor(t) and t.requires_grad for t in tensors)
