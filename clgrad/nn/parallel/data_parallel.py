"""``DataParallel``: one process drives several devices (``opencl:0..N``, or cpu) by splitting each batch.

Every forward scatters the batch along ``dim``, runs a replica of the module on each device and
gathers the outputs on ``output_device``. Replicas hold *differentiable copies* (``Tensor.to``) of the
parameters, so backward sums every replica's gradient into the original parameters, and the optimizer
steps one model. The replicas run one after another from Python, but OpenCL kernels are queued
asynchronously on each device's own queue, so devices compute concurrently until a result is read.
"""
from __future__ import annotations

from collections import OrderedDict

from ...backends.opencl import runtime
from ...device import device as _device
from ...device import resolve
from ..modules.module import Module
from .scatter_gather import gather, scatter_kwargs


def _as_device(d):
    """``device_ids`` entries: an int is an OpenCL index (as an int is a CUDA index in PyTorch)."""
    return resolve(f"opencl:{d}" if isinstance(d, int) else d)


def _default_devices() -> list:
    return [_device("opencl", d.index) for d in runtime.devices() if d.usable and not d.props.is_simulator]


def replicate(network: Module, devices, detach: bool = False) -> list:
    """A copy of ``network`` per device whose parameters are ``param.to(device)`` (the parameter itself
    on its own device) and whose buffers are moved copies. Replicas share the original's hooks."""
    return [_replica(network, resolve(d), detach, {}, {}) for d in devices]


def _replica(m: Module, dev, detach: bool, memo: dict, moved: dict) -> Module:
    if id(m) in memo:
        return memo[id(m)]
    r = object.__new__(type(m))
    r.__dict__.update(m.__dict__)
    memo[id(m)] = r

    def to_dev(t):
        if id(t) not in moved:  # tied weights stay tied in the replica
            c = t.to(dev)
            moved[id(t)] = c.detach() if detach else c
        return moved[id(t)]

    r.__dict__["_parameters"] = OrderedDict()
    r.__dict__["_buffers"] = OrderedDict((k, None if b is None else to_dev(b).detach()) for k, b in m._buffers.items())
    r.__dict__["_modules"] = OrderedDict((k, None if c is None else _replica(c, dev, detach, memo, moved))
                                         for k, c in m._modules.items())
    for k, p in m._parameters.items():  # plain attributes: a replica's weights aren't leaves to optimize
        r.__dict__[k] = None if p is None else to_dev(p)
    r.__dict__["_is_replica"] = True
    return r


def parallel_apply(modules, inputs, kwargs_tup=None) -> list:
    """Each module applied to its inputs, in order (see the module docstring for why that overlaps)."""
    kwargs_tup = kwargs_tup or [{}] * len(modules)
    return [m(*(x if isinstance(x, tuple) else (x,)), **kw) for m, x, kw in zip(modules, inputs, kwargs_tup)]


class DataParallel(Module):
    """Split each batch across ``device_ids`` in one process (PyTorch's ``nn.DataParallel``).

    ``device_ids`` defaults to every usable OpenCL device except simulators; ints mean ``opencl:N``; cpu
    is allowed too. The module must live on ``device_ids[0]``. ``state_dict`` keys carry the ``module.``
    prefix, as in PyTorch.

        >>> model = nn.DataParallel(Net().to("opencl:0"), device_ids=[0, 1])
        >>> out = model(x)          # x's rows split between opencl:0 and opencl:1; out on opencl:0
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        devices = _default_devices() if device_ids is None else [_as_device(d) for d in device_ids]
        self.device_ids = devices
        self.dim = dim
        if not devices:  # nothing to spread over: behave like the bare module, as PyTorch does without GPUs
            self.output_device = None
            return
        self.src_device_obj = devices[0]
        self.output_device = devices[0] if output_device is None else (
            resolve("cpu") if output_device == -1 else _as_device(output_device))
        for t in list(module.parameters()) + list(module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        ins, kws = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not ins:  # no tensor to split: run once on the first device
            return self.module(*inputs, **kwargs)
        if len(self.device_ids) == 1:
            return self.module(*ins[0], **kws[0])
        replicas = replicate(self.module, self.device_ids[:len(ins)])
        outputs = parallel_apply(replicas, ins, kws)
        return gather(outputs, self.output_device, self.dim)
