"""Splitting inputs across devices and collecting outputs on one, through nested tuples, lists and dicts.

Moves go through ``Tensor.to`` and slicing through ``chunk``, both differentiable, so gradients flow
back from every replica's output to the original input.
"""
from __future__ import annotations

from ...ops.joins import cat
from ...tensor import Tensor


def map_tensors(fn, obj):
    """``obj`` with ``fn`` applied to every tensor inside it (tuples, lists and dicts are rebuilt)."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(map_tensors(fn, x) for x in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_tensors(fn, x) for x in obj)
    if isinstance(obj, dict):
        return type(obj)((k, map_tensors(fn, v)) for k, v in obj.items())
    return obj


def tensors_in(obj) -> list:
    found: list = []
    map_tensors(found.append, obj)
    return found


def scatter(inputs, devices, dim: int = 0) -> list:
    """One piece of ``inputs`` per device: tensors chunked along ``dim``, everything else repeated.
    Fewer pieces when a batch has fewer rows than there are devices."""
    def pieces(obj):
        if isinstance(obj, Tensor):
            return [c.to(d) for c, d in zip(obj.chunk(len(devices), dim), devices)]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return [type(obj)(*p) for p in zip(*(pieces(x) for x in obj))]
        if isinstance(obj, (tuple, list)) and obj:
            return [type(obj)(p) for p in zip(*(pieces(x) for x in obj))]
        if isinstance(obj, dict) and obj:
            keys = list(obj)
            return [type(obj)(zip(keys, p)) for p in zip(*(pieces(obj[k]) for k in keys))]
        return [obj] * len(devices)

    return pieces(inputs)


def scatter_kwargs(inputs: tuple, kwargs: dict, devices, dim: int = 0) -> tuple[list, list]:
    """Scattered positional and keyword arguments, padded to the same number of pieces."""
    ins = scatter(inputs, devices, dim) if inputs else []
    kws = scatter(kwargs, devices, dim) if kwargs else []
    n = max(len(ins), len(kws))
    ins += [()] * (n - len(ins))
    kws += [{}] * (n - len(kws))
    return ins, kws


def gather(outputs: list, target_device, dim: int = 0):
    """The replicas' outputs joined on ``target_device``: tensors concatenated along ``dim`` (0-d tensors
    stacked into a vector, as PyTorch's DataParallel does), containers gathered element-wise."""
    first = outputs[0]
    if isinstance(first, Tensor):
        moved = [o.to(target_device) for o in outputs]
        if first.dim() == 0:
            return cat([o.reshape(1) for o in moved], 0)
        return cat(moved, dim)
    if first is None:
        return None
    if isinstance(first, dict):
        return type(first)((k, gather([o[k] for o in outputs], target_device, dim)) for k in first)
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(gather(list(p), target_device, dim) for p in zip(*outputs)))
    if isinstance(first, (tuple, list)):
        return type(first)(gather(list(p), target_device, dim) for p in zip(*outputs))
    return first
