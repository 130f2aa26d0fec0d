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
