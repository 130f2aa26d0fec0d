"""The autograd side of Tensor: requires_grad, grad, grad_fn, backward, hooks, detach.

A mixin of ``clgrad.Tensor``; the defaults live on the class so untracked tensors carry no extra state.

A *tracked view* (the output of a differentiable view op, or a view that an in-place op wrote through)
remembers the version of its memory at which its ``grad_fn`` was right. When an in-place op on its base
or on a sibling view has changed that memory since, reading ``grad_fn`` rebuilds it as an
``AsStridedBackward0`` of the base's current node, so the view's gradient sees the change (PyTorch does
the same).
"""
from __future__ import annotations

import weakref


class AutogradMixin:
    __slots__ = ()

    _grad = None
    _grad_fn = None
    _requires_grad = False
    _output_nr = 0
    _base = None  # the tensor owning the memory this view looks at

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """PyTorch's checks on an assigned gradient: a tensor (or None) of this tensor's device, dtype and size."""
        if value is not None:
            if not hasattr(value, "_storage"):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
        self.__dict__["_grad"] = value

    @grad.deleter
    def grad(self) -> None:
        self.__dict__.pop("_grad", None)

    @property
    def grad_fn(self):
        d = self.__dict__
        if "_view_version" in d and d["_view_version"] != self._storage.version:
            from .view_rules import refresh_view

            refresh_view(self)
        return d.get("_grad_fn")

    @grad_fn.setter
    def grad_fn(self, fn) -> None:
        self.__dict__["_grad_fn"] = fn

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or self.grad_fn is not None

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
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many in-place writes the memory has seen (shared by every view of it)."""
        return self._storage.version

    @property
    def data(self):
        """The same memory, outside the graph, and unlike ``detach()`` with its own version counter: writes
        through ``.data`` are invisible to autograd's in-place checks, as in PyTorch."""
        from ..storage import Storage

        s = self._storage
        # a second Storage object over the same memory; its "free" callback only keeps the owner alive
        alias = Storage(s.device, s.dtype, s.size, s.data, free=_KeepAlive(s))
        return type(self)._make(alias, self.dtype, self._shape, self._strides, self._offset)

    @data.setter
    def data(self, other) -> None:
        self._assign(other._storage, other.dtype, other._shape, other._strides, other._offset)

    def detach(self):
        """A tensor sharing memory with this one, cut out of the graph."""
        return type(self)._make(self._storage, self.dtype, self._shape, self._strides, self._offset)

    def detach_(self):
        """Cut this tensor out of the graph in place; it becomes a leaf that doesn't require grad."""
        if "_view_version" in self.__dict__:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
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

        fn = self.grad_fn
        if fn is None:
            hooks = self.__dict__.setdefault("_hooks", [])
        else:
            hooks = fn.__dict__.setdefault("_tensor_hooks", {}).setdefault(self._output_nr, [])
        hooks.append(hook)
        return _Handle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs on a leaf after backward has accumulated its gradient into ``.grad``."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .function import _Handle

        hooks = self.__dict__.setdefault("_post_acc_hooks", [])
        hooks.append(hook)
        return _Handle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (after its hooks ran, as in PyTorch)."""
        fn = self.grad_fn
        if fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        fn.__dict__.setdefault("_retains", {})[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return bool(self.__dict__.get("_retains_grad")) and self.grad_fn is not None


class _KeepAlive:
    """Holds the Storage that owns some memory for as long as an alias Storage of it lives."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __call__(self) -> None:
        pass
