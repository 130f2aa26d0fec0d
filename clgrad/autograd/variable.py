"""The autograd side of Tensor: requires_grad, grad, grad_fn, backward, hooks, detach.

A mixin of ``clgrad.Tensor``; the defaults live on the class so untracked tensors carry no extra state.
"""
from __future__ import annotations


class AutogradMixin:
    __slots__ = ()

    grad = None
    grad_fn = None
    _requires_grad = False
    _output_nr = 0
    _base = None  # the tensor owning the memory this view looks at

    @property
    def requires_grad(self) -> bool:
        return self.grad_fn is not None or self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True):
        """Start (or stop) recording operations on this leaf tensor."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                    "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other) -> None:
        self._assign(other._storage, other.dtype, other._shape, other._strides, other._offset)

    def detach(self):
        """A tensor sharing memory with this one, cut out of the graph."""
        out = self._view(self._shape, self._strides)
        out.__dict__.pop("_base", None)
        return out

    def detach_(self):
        self.grad_fn = None
        self._requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad``. ``gradient`` is needed for non-scalars."""
        from . import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; returning a tensor replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .function import _Handle

        if self.grad_fn is None:
            hooks = self.__dict__.setdefault("_hooks", [])
        else:
            hooks = self.grad_fn.__dict__.setdefault("_tensor_hooks", {}).setdefault(self._output_nr, [])
        hooks.append(hook)
        return _Handle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self.__dict__.get("_retains_grad"):
            return
        import weakref

        ref = weakref.ref(self)

        def keep(grad):
            t = ref()
            if t is not None:
                t.grad = grad.detach() if t.grad is None else t.grad + grad.detach()

        self.register_hook(keep)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return bool(self.__dict__.get("_retains_grad"))
