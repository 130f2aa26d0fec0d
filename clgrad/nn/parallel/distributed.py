"""``DistributedDataParallel``: one model replica per MPI rank, gradients averaged during backward.

    >>> dist.init_process_group("mpi")
    >>> model = DistributedDataParallel(Net().to(dev), device_ids=[dev])
    >>> loss_fn(model(x), y).backward()   # .grad is now the average over ranks
    >>> opt.step()                        # identical on every rank, so the replicas stay identical
"""
from __future__ import annotations

import contextlib

from ... import dtypes
from ...autograd.function import AccumulateGrad
from ...autograd.grad_mode import is_grad_enabled
from ...device import resolve
from ...distributed.collectives import all_gather_into_tensor, broadcast_coalesced
from ...distributed.process_group import _resolve
from ...dtypes import int64
from ...ops.creation import tensor, zeros
from ..modules.module import Module
from .reducer import Reducer
from .scatter_gather import map_tensors, tensors_in

_MB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25  # PyTorch's defaults: big buckets, but a small first one so that
DEFAULT_FIRST_BUCKET_BYTES = 1 * _MB  # communication starts early in backward


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of a process group (PyTorch's constructor arguments).

    At construction every rank must wrap the same model (parameter count, then each parameter's shape and
    dtype in order; all ranks raise PyTorch's error otherwise) and gets rank 0's parameters and buffers. Each forward broadcasts rank 0's
    buffers (``broadcast_buffers``) and arms the gradient hooks; backward all-reduces the gradients in
    buckets while it runs and leaves their average in ``.grad``, raising at its end if some parameter got no
    gradient (unless ``find_unused_parameters``). ``no_sync()`` skips the all-reduce for gradient
    accumulation. ``gradient_as_bucket_view`` and ``static_graph`` are accepted and ignored (the
    buckets live in host memory; the graph is found anew each iteration).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool = True,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        pg = _resolve(process_group)
        if pg is None:
            raise RuntimeError("DistributedDataParallel: this rank is not a member of process_group")
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        params = [p for _, p in named]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        self.module = module
        self.device = _single_device(module, device_ids, output_device)
        self.device_ids = None if device_ids is None else [self.device]
        self.output_device = self.device if output_device is None else resolve(output_device)
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.process_group = pg
        _verify_same_model(list(module.parameters()), pg)  # frozen ones too: init_sync broadcasts them
        if init_sync:
            broadcast_coalesced(list(module.parameters()) + list(module.buffers()), src=pg.ranks[0], group=pg)
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        first = min(DEFAULT_FIRST_BUCKET_BYTES, int(cap * _MB))
        # a plain attribute, not a sub-module: state_dict() must hold only "module.*" keys
        reducer = Reducer(params, [name for name, _ in named], pg, max(1, int(cap * _MB)), max(1, first),
                          find_unused_parameters)
        object.__setattr__(self, "reducer", reducer)

    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        if is_grad_enabled():  # as in PyTorch: the previous reduction must have finished
            reducer.check_finished()
        if self.device_ids is not None:
            inputs, kwargs = map_tensors(lambda t: t.to(self.device), (inputs, kwargs))
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                broadcast_coalesced(buffers, src=self.process_group.ranks[0], group=self.process_group)
        output = self.module(*inputs, **kwargs)
        # other forwards (no_sync(), no_grad) leave the reducer alone, as in PyTorch: the backward of an
        # earlier synchronized forward still reduces
        if is_grad_enabled() and self.require_backward_grad_sync:
            reducer.prepare(_unused(reducer.params, output) if self.find_unused_parameters else None)
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards of forwards run inside this block only accumulate local gradients; the first
        synchronized backward after it all-reduces the accumulated sum.

            >>> with ddp.no_sync():
            ...     loss_fn(ddp(x1), y1).backward()
            >>> loss_fn(ddp(x2), y2).backward()   # averages the gradients of both micro-batches
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self) -> str:
        return f"world_size={self.process_group.size()}, buckets={len(self.reducer.buckets)}"


def _single_device(module, device_ids, output_device):
    """The one device of the module's parameters when ``device_ids`` names it (inputs move there)."""
    devices = {str(t.device) for t in list(module.parameters()) + list(module.buffers())}
    if device_ids is None:
        return resolve(next(iter(devices))) if len(devices) == 1 else None
    if not isinstance(device_ids, (list, tuple)) or len(device_ids) != 1:
        raise ValueError("device_ids can only be None or contain a single element.")
    dev = resolve(device_ids[0] if not isinstance(device_ids[0], int) else f"opencl:{device_ids[0]}")
    if devices != {str(dev)}:
        raise ValueError(
            "DistributedDataParallel device_ids and output_device arguments only work with single-device modules, "
            f"but got device_ids {list(device_ids)}, output_device {output_device}, and module parameters "
            f"{sorted(devices)}.")
    return dev


_DTYPES = tuple(dtypes.ALL)  # a dtype crosses the wire as its index here


def _verify_same_model(params, pg) -> None:
    """Every rank must wrap the same model (PyTorch's ``_verify_param_shape_across_processes``): the same
    number of parameters, then the same shape and dtype for each, in order, before any bucket exists.

    Every rank sees every rank's description (all-gathers, where PyTorch broadcasts rank 0's), so every rank
    raises, and the job stops cleanly rather than one rank failing while the others wait in a collective.
    PyTorch also compares strides; clgrad's collectives stage parameters contiguously, so strides may differ.
    """
    counts = zeros(pg.size(), 2, dtype=int64)
    all_gather_into_tensor(counts, tensor([len(params), max(p.dim() for p in params)], dtype=int64), group=pg)
    counts = counts.tolist()
    for r, (their_count, _) in enumerate(counts):
        if their_count != len(params):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {pg.rank()} has {len(params)} "
                               f"params, while rank {r} has inconsistent {their_count} params.")
    width = 2 + max(ndim for _, ndim in counts)
    every = zeros(pg.size(), len(params), width, dtype=int64)
    all_gather_into_tensor(every, tensor([_describe(p, width) for p in params], dtype=int64), group=pg)
    every = every.tolist()
    me = pg.rank()
    for r in sorted(range(1, pg.size()), key=lambda r: r != me):  # this rank first: its message is PyTorch's
        for i, (theirs, ref) in enumerate(zip(every[r], every[0])):
            what = "sizes" if theirs[1:] != ref[1:] else "dtype" if theirs[0] != ref[0] else None
            if what is not None:
                raise RuntimeError(_mismatch(me, r, i, theirs, ref, what))


def _describe(p, width: int) -> list[int]:
    """[dtype index, ndim, *sizes] padded with -1 to ``width`` entries."""
    row = [_DTYPES.index(p.dtype), p.dim(), *p.shape]
    return row + [-1] * (width - len(row))


def _mismatch(me: int, r: int, i: int, theirs: list[int], ref: list[int], what: str) -> str:
    """PyTorch's message on the rank that differs; the other ranks name it."""
    where = "this process" if r == me else f"process {r}"
    if what == "sizes":
        return (f"[{me}]: params[{i}] in {where} with sizes {theirs[2:2 + theirs[1]]} appears not to match sizes "
                f"of the same param in process 0. Process 0 has sizes {ref[2:2 + ref[1]]}.")
    return (f"[{me}]: params[{i}] in {where} with dtype {_DTYPES[theirs[0]]} appears not to match dtype of the "
            f"same param in process 0. Process 0 has dtype {_DTYPES[ref[0]]}.")


def _unused(params, output) -> set[int]:
    """Indices of the parameters the autograd graph of ``output`` doesn't reach."""
    reached: set[int] = set()
    stack = [t.grad_fn for t in tensors_in(output) if t.grad_fn is not None]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            reached.add(id(node.variable))
        stack.extend(n for n, _ in node.next_functions)
    reached.update(id(t) for t in tensors_in(output) if t.grad_fn is None and t.requires_grad)
    return {i for i, p in enumerate(params) if id(p) not in reached}
