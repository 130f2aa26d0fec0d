"""The backward engine: dependency-counted traversal of the graph (iterative, no recursion).

Gradients are summed back to each input's shape (broadcasting) and cast to its dtype here, in one place,
so a Function's backward may return a gradient of the broadcast shape.
"""
from __future__ import annotations

import warnings

from .._amp_state import suspended
from ..tensor import Tensor, is_tensor
from . import _grad_sum
from .grad_mode import set_enabled
from .graph import gradient_edge
from .nodes import _FREED, ANOMALY, AccumulateGrad


def _as_tuple(x):
    if x is None:
        return None
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _make_grads(outputs, grad_outputs):
    """The gradients backward starts from: given ones, or a 1 for a scalar output (made by that output)."""
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None and i < len(grad_outputs) else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = out._empty_like().fill_(1)
        elif not is_tensor(g):
            g = out._empty_like().fill_(g)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape!r} and output[{i}] has a shape of "
                f"{out.shape!r}."
            )
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    tensors = _as_tuple(tensors)
    grads = _make_grads(tensors, _as_tuple(grad_tensors))
    retain = create_graph if retain_graph is None else retain_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grads, retain, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is left alone)."""
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, _as_tuple(grad_outputs))
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outputs, grads, retain, create_graph, inputs=inputs, accumulate=False)
    out = []
    for i, (x, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                g = x._empty_like().zero_()
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior."
                )
        out.append(g)
    return tuple(out)


def _sum_to(grad, shape):
    """Reduce a broadcast gradient back to an input's shape: the one place this happens."""
    lead = grad.dim() - len(shape)
    if lead < 0:
        return grad
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.reshape(shape) if tuple(grad.shape) != tuple(shape) else grad


def _collect(roots):
    """Every node reachable from ``roots`` and how many edges enter each (iterative DFS)."""
    deps: dict = {}
    stack = [r for r in roots if r is not None]
    for r in stack:
        deps.setdefault(r, 0)
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _ancestors(deps, targets) -> set:
    """Nodes from which some target is reachable (the targets themselves excluded): the only nodes that
    must run when just ``targets``' gradients are wanted."""
    parents: dict = {}
    for node in deps:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    keep: set = set()
    stack = [p for t in targets for p in parents.get(t, ())]
    while stack:
        node = stack.pop()
        if node in keep:
            continue
        keep.add(node)
        stack.extend(parents.get(node, ()))
    return keep


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, accumulate=True):
    """Propagate ``grad_tensors`` from ``tensors`` to the leaves (or to ``inputs``).

    With ``accumulate`` the gradients are added into ``.grad`` (``backward``: of every leaf, or of each of
    ``inputs``); otherwise the gradients of ``inputs`` are returned (``autograd.grad``).
    """
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((gradient_edge(t), g))
    deps = _collect([node for (node, _), _ in roots])
    targets: dict = {}
    for i, x in enumerate(inputs or ()):
        node, nr = gradient_edge(x)
        if node is not None:
            targets.setdefault(node, []).append((nr, i, x))
    keep = _ancestors(deps, [n for n in targets if n in deps]) if inputs is not None else None
    buffers: dict = {}
    for (node, nr), g in roots:
        _add(buffers, node, nr, g)
    captured = [None] * len(inputs or ())
    ready = [node for (node, _), _ in roots if deps.get(node) == 0]
    done = set()
    global _callbacks
    outer_callbacks, _callbacks = _callbacks, []
    prev = set_enabled(create_graph)
    no_autocast = suspended()  # backward ops run in the forward's dtypes, never autocast (as PyTorch's)
    no_autocast.__enter__()
    try:
        while ready:
            node = ready.pop()
            if node in done:
                continue
            done.add(node)
            grads = buffers.pop(node, {})
            for nr, g in grads.items():
                if type(g) is _grad_sum.Pending:  # contributions waiting to be summed (_grad_sum.py)
                    grads[nr] = _grad_sum.total(g)
            if not isinstance(node, AccumulateGrad):
                grads = _tensor_hooks(node, grads)
            if node in targets:
                _deliver(node, targets[node], grads, captured, accumulate, create_graph)
            if keep is None or node in keep:
                if isinstance(node, AccumulateGrad):
                    _accumulate_leaf(node.variable, grads.get(0), create_graph)
                else:
                    _run_node(node, grads, buffers, retain_graph)
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    deps[nxt] -= 1
                    if deps[nxt] == 0:
                        ready.append(nxt)
        callbacks = _callbacks
        while callbacks:  # in queue order; a callback may queue more
            callbacks.pop(0)()
    finally:
        no_autocast.__exit__()
        set_enabled(prev)
        _callbacks = outer_callbacks
    return captured


def _add(buffers, node, nr, grad):
    slot = buffers.setdefault(node, {})
    prev = slot.get(nr)
    slot[nr] = grad if prev is None else _grad_sum.add(prev, grad)


def _deliver(node, wanted, grads, captured, accumulate, create_graph):
    """The gradient of one of ``inputs``: returned (``grad``) or added into its ``.grad`` (``backward``)."""
    for nr, i, x in wanted:
        g = grads.get(nr)
        if accumulate:
            if isinstance(node, AccumulateGrad):
                _accumulate_leaf(x, g, create_graph)
            else:
                _accumulate_into(x, g, create_graph)
        else:
            captured[i] = _run_tensor_hooks(x, g) if isinstance(node, AccumulateGrad) else g


def _run_tensor_hooks(t, grad):
    for hook in t.__dict__.get("_hooks", ()):
        new = hook(grad)
        if new is not None:
            grad = new
    return grad


def _tensor_hooks(node, grads):
    """Hooks registered on the node's output tensors run first; then retain_grad() stores the result."""
    hooks = node.__dict__.get("_tensor_hooks")
    if hooks:
        grads = dict(grads)
        for nr, fns in hooks.items():
            for hook in fns:
                new = hook(grads.get(nr))
                if new is not None:
                    grads[nr] = new
    for nr, ref in node.__dict__.get("_retains", {}).items():
        t = ref()
        if t is not None and grads.get(nr) is not None:
            _accumulate_into(t, grads[nr], False)
    return grads


def _accumulate_leaf(t, grad, create_graph):
    if grad is None:
        return
    _accumulate_into(t, _run_tensor_hooks(t, grad), create_graph)
    for hook in t.__dict__.get("_post_acc_hooks", ()):
        hook(t)


# callbacks queued with queue_callback during the running backward; None when no backward runs
_callbacks: list | None = None


def queue_callback(fn) -> None:
    """Run ``fn()`` once the running backward pass has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``); callbacks may queue more callbacks."""
    if _callbacks is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _callbacks.append(fn)


def _accumulate_into(t, grad, create_graph):
    """``t.grad += grad``: a new tensor the first time (detached unless ``create_graph``)."""
    if grad is None:
        return
    if grad.dtype is not t.dtype:
        grad = grad.to(t.dtype)
    if t.grad is None and create_graph:
        t.grad = grad
    elif t.grad is None:
        # a copy in the tensor's own layout: the incoming gradient may be shared (an add passes one tensor
        # to both inputs, a view's gradient aliases its output's), and later accumulation writes in place
        prev = set_enabled(False)
        try:
            t.grad = t._empty_like().copy_(grad)
        finally:
            set_enabled(prev)
    elif create_graph:
        t.grad = t.grad + grad
    else:
        prev = set_enabled(False)
        try:
            t.grad.add_(grad)
        finally:
            set_enabled(prev)


def _run_node(node, grads, buffers, retain_graph):
    if node.__dict__.get("_freed"):
        raise RuntimeError(_FREED)
    grad_outputs = []
    for nr, meta in enumerate(node._output_meta):
        g = grads.get(nr)
        if g is None and meta is not None and node.materialize_grads:
            g = Tensor._empty(meta[0], meta[1], meta[2]).zero_()
        grad_outputs.append(g)
    for hook in node.__dict__.get("_pre_hooks", ()):
        new = hook(tuple(grad_outputs))
        if new is not None:
            grad_outputs = list(new)
    try:
        result = _call_backward(node, grad_outputs)
        for hook in node.__dict__.get("_post_hooks", ()):
            new = hook(result, tuple(grad_outputs))
            if new is not None:
                result = tuple(new)
        if ANOMALY["enabled"] and ANOMALY["check_nan"]:
            _check_nan(node, result)
    except Exception:
        trace = node.__dict__.get("_forward_trace")
        if trace is not None:  # recorded in anomaly mode: say which forward call made this node
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                          f"{trace}", stacklevel=2)
        raise
    if not retain_graph:
        node._release()
    for i, (edge, g) in enumerate(zip(node._edges, result)):
        if edge is not None and edge[0] is not None and g is not None:
            _add(buffers, edge[0], edge[1], _validate(node, i, g))


def _call_backward(node, grad_outputs) -> tuple:
    """Run the node's backward and check it returned one gradient per forward input."""
    result = node.apply(*grad_outputs)
    if not isinstance(result, tuple):
        result = (result,)
    n_in = len(node._edges)
    if len(result) > n_in and all(r is None for r in result[n_in:]):
        result = result[:n_in]  # PyTorch accepts extra trailing Nones
    if len(result) != n_in:
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected {n_in}, "
                           f"got {len(result)})")
    return result


def _validate(node, i, g):
    """A gradient as its input needs it: summed back over broadcast dims, in the input's dtype."""
    if not is_tensor(g):
        raise TypeError(f"function {node.name()} returned a gradient of type {type(g).__name__} at index {i}; "
                        "expected a Tensor or None")
    shape, dtype, device = node._input_meta[i]
    if g._shape != tuple(shape):
        bad = (f"Function {node.name()} returned an invalid gradient at index {i} - got {list(g.shape)} but "
               f"expected shape compatible with {list(shape)}")
        try:
            g = _sum_to(g, shape)
        except RuntimeError:
            raise RuntimeError(bad) from None
        if g._shape != tuple(shape):
            raise RuntimeError(bad)
    if g.device != device:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - expected device "
                           f"{device} but got {g.device}")
    if g.dtype is not dtype:
        g = g.to(dtype)
    return g


def _check_nan(node, result):
    for i, g in enumerate(result):
        if is_tensor(g) and g.dtype.is_floating_point and g.numel() and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
