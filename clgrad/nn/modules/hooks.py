"""Module hooks: ``RemovableHandle``, the per-call state of full backward (pre-)hooks (identity autograd nodes on
a call's tensor inputs and outputs, as PyTorch's ``BackwardHook``) and the global hooks every module runs."""
from __future__ import annotations

import warnings
from collections import OrderedDict

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import is_tensor


class RemovableHandle:
    """Returned by ``register_*_hook``; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self.hooks, self.id = hooks, RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self.hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


LEGACY_HOOK_WARNING = ("register_backward_hook is deprecated in favor of register_full_backward_hook; clgrad runs "
                       "the hook as a full backward hook (grad_input holds the gradients w.r.t. the module's "
                       "positional inputs, not those of the last operation in forward).")


class _BackwardHookFunction(Function):
    """Identity on a call's tensor inputs (or outputs): its one node sees all their gradients together."""

    node_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx, *tensors):
        # fresh aliases, so the ones whose source needs no gradient can be marked non-differentiable
        aliases = tuple(t._view(t._shape, t._strides) for t in tensors)
        ctx.mark_non_differentiable(*[a for a, t in zip(aliases, tensors) if not t.requires_grad])
        return aliases

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(index, values, size: int) -> tuple:
    """``values`` (one per tensor) at their positions in a call's ``size`` arguments; None elsewhere."""
    packed = [None] * size
    for i, v in zip(index, values):
        packed[i] = v
    return tuple(packed)


def _as_grads(result) -> tuple:
    return (result,) if is_tensor(result) else tuple(result)


class BackwardHook:
    """One module call's backward hooks, as PyTorch's ``BackwardHook``: identity nodes on the tensor inputs
    and outputs. The output node's hook runs the pre-hooks and keeps grad_output; the input node's hook
    (which the engine runs after everything inside the module) calls the hooks with both."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None

    @staticmethod
    def _wrap(values):
        """``values`` with its tensors replaced by identity-node aliases, the tensors' positions and the
        node; positions and node are None when no tensor needs a gradient."""
        index = [i for i, v in enumerate(values) if is_tensor(v)]
        if not any(values[i].requires_grad for i in index):
            return values, None, None
        aliases = _BackwardHookFunction.apply(*[values[i] for i in index])
        node = next(a.grad_fn for a in aliases if a.grad_fn is not None)
        new = list(values)
        for i, alias in zip(index, aliases):
            new[i] = alias
        return (tuple(new) if type(values) is tuple else type(values)(*new)), index, node

    def setup_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_index, node = self._wrap(args)
        if node is not None:
            node.register_hook(self._input_hook)
        return args

    def setup_outputs(self, output):
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        self.n_outputs = len(outputs)
        outputs, self.output_index, node = self._wrap(outputs)
        if node is not None:
            node.materialize_grads = False  # an output that got no gradient shows None in grad_output
            node.register_hook(self._output_hook)
        return outputs[0] if single else outputs

    def _output_hook(self, grad_inputs, grad_outputs):
        self.grad_outputs = _pack(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, self.grad_outputs)
            if result is None:
                continue
            result = _as_grads(result)
            if len(result) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(result)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = result
        grad_outputs = self.grad_outputs
        if self.input_index is None:  # no input needs a gradient: the hooks fire here, with grad_input None
            self._hooks_without_inputs()
        return tuple(grad_outputs[i] for i in self.output_index)

    def _hooks_without_inputs(self) -> None:
        warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                      "since no inputs require gradients. See "
                      "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                      "for more details.", stacklevel=5)
        grad_inputs = (None,) * self.n_inputs
        for hook in self.hooks:
            result = hook(self.module, grad_inputs, self.grad_outputs)
            if result is not None and not (isinstance(result, tuple) and all(r is None for r in result)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                   "return None or None for all gradients.")
        self.grad_outputs = None

    def _input_hook(self, grad_inputs, grad_outputs):
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return None
        grads = _pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            result = hook(self.module, grads, self.grad_outputs)
            if result is None:
                continue
            result = _as_grads(result)
            if len(result) != len(grads):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(result)}, but expected {len(grads)}")
            grads = result
        self.grad_outputs = None
        return tuple(grads[i] for i in self.input_index)


# hooks every module runs before its own (``register_module_full_backward_hook``), as in PyTorch
_global_backward_hooks: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: bool | None = None


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """A full backward hook every module runs (before its own); for debugging and profiling."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """A backward pre-hook every module runs (before its own); for debugging and profiling."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_backward_hook(hook) -> RemovableHandle:
    """Deprecated global form of ``Module.register_backward_hook`` (run as a full backward hook)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    warnings.warn(LEGACY_HOOK_WARNING, FutureWarning, stacklevel=2)
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def backward_hook(module) -> BackwardHook | None:
    """The per-call state of ``module``'s backward (pre-)hooks, global ones first, or None when there are none
    or no graph is built."""
    if not (module._backward_hooks or module._backward_pre_hooks or _global_backward_hooks
            or _global_backward_pre_hooks) or not is_grad_enabled():
        return None
    hooks = [*_global_backward_hooks.values(), *module._backward_hooks.values()]
    pre_hooks = [*_global_backward_pre_hooks.values(), *module._backward_pre_hooks.values()]
    return BackwardHook(module, hooks, pre_hooks)
