"""The backward engine: dependency-counted traversal of the graph (iterative, no recursion)."""
from __future__ import annotations

from .function import AccumulateGrad, _is_tensor
from .grad_mode import no_grad, set_grad_enabled

_anomaly = {"enabled": False}


def _sum_to(grad, shape):
    """Reduce a broadcast gradient back to an input's shape: the one place this happens."""
    if tuple(grad.shape) == tuple(shape):
        return grad
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.reshape(shape) if tuple(grad.shape) != tuple(shape) else grad


def _collect(roots):
    """Every node reachable from ``roots`` and how many edges enter each (iterative DFS)."""
    deps: dict = {}
    seen = set()
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        deps.setdefault(node, 0)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _needed(deps, targets):
    """Nodes from which some target node can be reached: the only ones ``grad`` must run."""
    parents: dict = {}
    for node in deps:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    keep, stack = set(), list(targets)
    while stack:
        node = stack.pop()
        if id(node) in keep:
            continue
        keep.add(id(node))
        stack.extend(parents.get(node, ()))
    return keep


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, accumulate=True):
    """Propagate ``grad_tensors`` from ``tensors`` to the leaves (or to ``inputs``).

    With ``accumulate`` the leaves' ``.grad`` is updated (``backward``); otherwise the gradients of ``inputs``
    are returned (``autograd.grad``).
    """
    from .graph import gradient_edge

    roots = []
    for t, g in zip(tensors, grad_tensors):
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        roots.append((gradient_edge(t), g))
    deps = _collect([edge[0] for edge, _ in roots])
    targets = {}
    if inputs is not None:
        for i, x in enumerate(inputs):
            node, nr = gradient_edge(x)
            if node is not None:
                targets.setdefault(id(node), []).append((nr, i, x))
        keep = _needed(deps, [n for n in deps if id(n) in targets])
    buffers: dict = {}
    for (node, nr), g in roots:
        _accumulate(buffers, node, nr, g)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    ready = [edge[0] for edge, _ in roots if deps.get(edge[0], 0) == 0]
    done = set()
    with set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            if id(node) in done:
                continue
            done.add(id(node))
            grads = buffers.pop(id(node), {})
            if not accumulate and id(node) in targets:
                for nr, i, x in targets[id(node)]:
                    captured[i] = _run_tensor_hooks(x, grads.get(nr)) if isinstance(node, AccumulateGrad) else grads.get(nr)
            if inputs is not None and id(node) not in keep:
                pass
            elif isinstance(node, AccumulateGrad):
                if accumulate:
                    _accumulate_leaf(node.variable, grads.get(0), create_graph)
            else:
                _run_node(node, grads, buffers, retain_graph)
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    deps[nxt] -= 1
                    if deps[nxt] == 0:
                        ready.append(nxt)
    return captured


def _accumulate(buffers, node, nr, grad):
    slot = buffers.setdefault(id(node), {})
    slot[nr] = grad if slot.get(nr) is None else slot[nr] + grad


def _run_tensor_hooks(t, grad):
    for hook in t.__dict__.get("_hooks", ()):
        new = hook(grad)
        if new is not None:
            grad = new
    return grad


def _accumulate_leaf(t, grad, create_graph):
    if grad is None:
        return
    grad = _run_tensor_hooks(t, grad)
    if grad.dtype is not t.dtype:
        grad = grad.to(t.dtype)
    if t.grad is None:
        t.grad = grad if create_graph else grad.detach()
        if not create_graph and not grad.is_contiguous():
            t.grad = grad.contiguous()
    elif create_graph:
        t.grad = t.grad + grad
    else:
        with no_grad():
            t.grad.add_(grad)


def _run_node(node, grads, buffers, retain_graph):
    outputs = node._output_meta
    grad_outputs = []
    for nr, meta in enumerate(outputs):
        g = grads.get(nr)
        for hook in node.__dict__.get("_tensor_hooks", {}).get(nr, ()):
            new = hook(g)
            if new is not None:
                g = new
        if g is None and meta is not None and node.materialize_grads:
            from ..ops.creation import zeros

            g = zeros(meta[0], dtype=meta[1], device=meta[2])
        grad_outputs.append(g)
    for hook in node.__dict__.get("_pre_hooks", ()):
        new = hook(tuple(grad_outputs))
        if new is not None:
            grad_outputs = list(new)
    if node.__dict__.get("_freed"):
        from .function import _FREED

        raise RuntimeError(_FREED)
    result = node.apply(*grad_outputs)
    if not isinstance(result, tuple):
        result = (result,)
    n_in = len(node.next_functions)
    if len(result) < n_in:
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected {n_in}, got {len(result)})")
    result = result[:n_in] if all(r is None for r in result[n_in:]) else result
    if len(result) != n_in:
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected {n_in}, got {len(result)})")
    for hook in node.__dict__.get("_post_hooks", ()):
        new = hook(result, tuple(grad_outputs))
        if new is not None:
            result = tuple(new)
    if _anomaly["enabled"]:
        _check_nan(node, result)
    if not retain_graph:
        node._release()
    for i, ((nxt, nr), g) in enumerate(zip(node.next_functions, result)):
        if nxt is None or g is None:
            continue
        if not _is_tensor(g):
            raise TypeError(f"function {node.name()} returned a gradient of type {type(g).__name__} at index {i}; expected a Tensor or None")
        shape = node._input_meta[i][0]
        if tuple(g.shape) != tuple(shape):
            try:
                g = _sum_to(g, shape)
            except RuntimeError:
                raise RuntimeError(
                    f"Function {node.name()} returned an invalid gradient at index {i} - got {list(g.shape)} but expected shape compatible with {list(shape)}"
                ) from None
            if tuple(g.shape) != tuple(shape):
                raise RuntimeError(
                    f"Function {node.name()} returned an invalid gradient at index {i} - got {list(g.shape)} but expected shape compatible with {list(shape)}"
                )
        _accumulate(buffers, nxt, nr, g)


def _check_nan(node, result):
    for i, g in enumerate(result):
        if _is_tensor(g) and g.dtype.is_floating_point and g.numel() and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")

