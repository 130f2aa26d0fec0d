"""PyTorch's Function API: ``forward(ctx, ...)`` / ``backward(ctx, *grads)`` / ``apply``.

Every built-in differentiable op is a ``Function`` too. ``apply`` runs ``forward`` with grad mode off,
then, if any input needs a gradient, makes the ctx a node of the graph: it records where each input's
gradient goes (``next_functions``) and becomes the ``grad_fn`` of the outputs.
"""
from __future__ import annotations

import functools
import inspect
import traceback

from ..tensor import Tensor, is_tensor
from . import grad_mode
from .grad_mode import is_grad_enabled
from .graph import connect
from .nodes import (  # noqa: F401 - AccumulateGrad and BackwardCFunction are imported from here by nn and tests
    ANOMALY,
    AccumulateGrad,
    BackwardCFunction,
    FunctionCtx,
    Node,
    SavedTensor,
)

# clgrad.onnx.export sets this while it traces a model: ``TRACER(cls, args, kwargs)`` runs and records the call
TRACER = None


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
    is_view = False  # outputs alias the first input's memory (view ops): autograd tracks them as views

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        cls._backward_cls = type(name, (BackwardCFunction,), {"_forward_cls": cls})
        # PyTorch 2's other style: forward(*args) without ctx, plus setup_context(ctx, inputs, output)
        cls._separate_ctx = cls.setup_context is not Function.setup_context

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if TRACER is not None:
            return TRACER(cls, args, kwargs)
        if kwargs:
            args, kwargs = cls._bind(args, kwargs)
        ctx = cls._backward_cls()
        needs = tuple([isinstance(a, Tensor) and a.requires_grad for a in args]) if is_grad_enabled() else ()
        track = True in needs
        ctx.needs_input_grad = needs if track else (False,) * len(args)
        prev = grad_mode.set_enabled(False)  # forward runs untracked (cheaper than a no_grad object)
        try:
            if cls._separate_ctx:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            grad_mode.set_enabled(prev)
        if not track:
            return outputs
        if ANOMALY["enabled"]:
            ctx._forward_trace = "".join(traceback.format_stack()[:-1])
        return connect(ctx, args, outputs, cls.is_view)

    @classmethod
    def _bind(cls, args, kwargs):
        """Arguments given by keyword become positional (defaults filled in), as PyTorch binds them, so a
        tensor passed as ``weight=w`` is an input of the node too; keyword-only ones stay keywords."""
        sig = cls.__dict__.get("_signature")
        if sig is None:
            sig = cls._signature = inspect.signature(cls.forward)
            cls._keyword_only = {n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
        if kwargs.keys() <= cls._keyword_only:
            return args, kwargs  # the common case for built-in ops (``compute=``): nothing to move
        lead = () if cls._separate_ctx else (None,)
        bound = sig.bind(*lead, *args, **kwargs)
        bound.apply_defaults()
        return bound.args[len(lead):], bound.kwargs


_VARIANTS: dict = {}


def variant(cls, node_name: str):
    """A subclass of ``cls`` whose graph node is called ``node_name`` (made once, then cached). PyTorch gives
    one op several node names (its overloads: ``a ** 2`` is ``PowBackward0``, ``a ** b`` ``PowBackward1``;
    ``sum()`` is ``SumBackward0``, ``sum(dim)`` ``SumBackward1``): a dispatcher picks the variant to apply."""
    key = (cls, node_name)
    sub = _VARIANTS.get(key)
    if sub is None:
        sub = _VARIANTS[key] = type(cls.__name__, (cls,), {"node_name": node_name})
    return sub


def once_differentiable(backward):
    """Decorate a ``backward`` that is not itself differentiable (PyTorch's decorator): it runs without
    recording, and differentiating its results (``create_graph=True``, then backward) raises."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        recording = is_grad_enabled()
        prev = grad_mode.set_enabled(False)
        try:
            result = backward(ctx, *grads)
        finally:
            grad_mode.set_enabled(prev)
        if not (recording and any(is_tensor(g) and g.requires_grad for g in grads)):
            return result
        single = not isinstance(result, tuple)
        wrapped = tuple(_DelayedError.apply(r.detach().requires_grad_()) if is_tensor(r) and r.dtype.is_floating_point
                        else r for r in ((result,) if single else result))
        return wrapped[0] if single else wrapped

    return wrapper


class _DelayedError(Function):
    """Marks a gradient computed by a once_differentiable backward: differentiating it is an error."""

    node_name = "DelayedError"

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")

