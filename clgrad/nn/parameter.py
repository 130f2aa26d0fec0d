"""``Parameter``: a Tensor that a Module registers as a learnable weight."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default; assigning one to a Module attribute registers it.

    >>> p = Parameter(clgrad.zeros(3))
    >>> p.requires_grad
    True
    """

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        p = object.__new__(cls)
        p._assign(data._storage, data.dtype, data._shape, data._strides, data._offset)
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    @classmethod
    def _make(cls, storage, dt, shape, strides, offset: int = 0) -> Tensor:
        # .data / .detach() of a Parameter are plain tensors, as in PyTorch
        return Tensor._make(storage, dt, shape, strides, offset)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


# ---- lazy modules' placeholders ---------------------------------------------------------------------------
class UninitializedTensorMixin:
    """A placeholder whose shape is not known yet: ``materialize(shape)`` gives it storage and turns it into
    ``cls_to_become`` (what PyTorch's lazy modules do on their first forward)."""

    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate ``shape`` (uninitialized memory) on ``device`` with ``dtype`` (default: the placeholder's)."""
        data = empty(tuple(shape), device=self.device if device is None else device,
                     dtype=self.dtype if dtype is None else dtype)
        self._assign(data._storage, data.dtype, data._shape, data._strides, data._offset)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
                           "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
                           "one. Call `forward` to initialize the parameters before accessing their attributes.")

    def to(self, *args, **kwargs):
        """A placeholder on the new device/dtype (``Module.to`` before the first forward)."""
        moved = Tensor.to(self, *args, **kwargs)
        if moved is self:
            return self
        return type(self)(self.requires_grad, moved.device, moved.dtype)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        return type(self)(self.requires_grad, self.device, self.dtype)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers on its first forward.

    >>> p = UninitializedParameter(); p.materialize((2, 3)); type(p).__name__
    'Parameter'
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers on its first forward."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        data = empty(0, device=device, dtype=dtype)
        t = object.__new__(cls)
        t._assign(data._storage, data.dtype, data._shape, data._strides, data._offset)
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass
