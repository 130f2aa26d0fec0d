"""PyTorch's Function API: ``forward(ctx, ...)`` / ``backward(ctx, *grads)`` / ``apply``.

Every built-in differentiable op is a ``Function`` too. ``apply`` runs ``forward`` with grad mode off,
then, if any input needs a gradient, makes the ctx a node of the graph: it records where each input's
gradient goes (``next_functions``) and becomes the ``grad_fn`` of the outputs.
"""
from __future__ import annotations

from .grad_mode import is_grad_enabled, no_grad

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)


def _is_tensor(x) -> bool:
    return hasattr(x, "_storage")


class Node:
    """A node of the backward graph. ``next_functions[i]`` is (node, output_nr) for forward input i."""

    next_functions: tuple = ()
    _input_meta: tuple = ()  # (shape, dtype, device) of each forward input that needs a gradient

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; it may return new grad_inputs."""
        self.__dict__.setdefault("_post_hooks", []).append(fn)
        return _Handle(self._post_hooks, fn)

    def register_prehook(self, fn):
        self.__dict__.setdefault("_pre_hooks", []).append(fn)
        return _Handle(self._pre_hooks, fn)


class _Handle:
    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class AccumulateGrad(Node):
    """The sink for a leaf: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()


class SavedTensor:
    """A tensor saved for backward plus its version at save time, to catch later in-place changes."""

    __slots__ = ("tensor", "version", "is_output")

    def __init__(self, tensor, is_output: bool):
        self.tensor = tensor
        self.version = tensor._storage.version if tensor is not None else 0
        self.is_output = is_output

    def unpack(self, node: Node):
        t = self.tensor
        if t is None:
            return None
        if t._storage.version != self.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{_type_name(t)} {list(t.shape)}], which is output 0 of {node.name()}, is at version "
                f"{t._storage.version}; expected version {self.version} instead. Hint: the backtrace further above "
                "can help find the operation that failed to compute its gradient."
            )
        return t


def _type_name(t) -> str:
    from ..tensor import _TYPE_NAMES

    prefix = "clgrad" if t.device.type == "cpu" else f"clgrad.{t.device.type}"
    return f"{prefix}.{_TYPE_NAMES[t.dtype.name]}"


class FunctionCtx:
    """What ``forward`` and ``backward`` receive as ``ctx``. Graph nodes are ctx objects."""

    needs_input_grad: tuple = ()
    materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        saved = self.__dict__.get("_saved")
        if saved is None:
            if self.__dict__.get("_freed"):
                raise RuntimeError(_FREED)
            return tuple(self.__dict__.get("_to_save", ()))
        return tuple(s.unpack(self) for s in saved)

    def _release(self) -> None:
        self._saved = None
        self._freed = True
        self.__dict__.pop("_to_save", None)


class BackwardCFunction(FunctionCtx, Node):
    """Base of the per-Function node classes (``MulBackward0``, ``MyReLUBackward``)."""

    _forward_cls: type

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``; call ``.apply``.

    >>> class Square(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    """

    node_name: str | None = None  # e.g. "MulBackward0"; default: f"{cls.__name__}Backward"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        cls._backward_cls = type(name, (BackwardCFunction,), {"_forward_cls": cls})

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        track = is_grad_enabled() and any(_is_tensor(a) and a.requires_grad for a in args)
        ctx.needs_input_grad = tuple(_is_tensor(a) and a.requires_grad for a in args) if track else (False,) * len(args)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        if not track:
            return outputs
        from .graph import connect

        return connect(ctx, args, outputs)
