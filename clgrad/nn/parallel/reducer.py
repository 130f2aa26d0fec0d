"""DDP's gradient reducer: buckets of gradients all-reduced while backward is still running.

Parameters are grouped into buckets of about ``bucket_cap_mb`` in *reverse* registration order, since
backward produces the last layer's gradients first. As in PyTorch's reducer, each parameter carries a
post-accumulate-grad hook: once the engine has added the parameter's gradient into ``.grad``, the hook
marks the parameter ready. When every parameter of a bucket is ready, the bucket goes to its host buffer
(one transfer from an OpenCL device, so backward waits for the device once per bucket, not once per
parameter) and its nonblocking ``Iallreduce`` starts while backward computes the earlier layers. Buckets
start strictly in index order, so every rank issues the same sequence of collectives even if its hooks
fire in another order.

The first hook of a backward queues a final callback with the engine. When the backward pass has
finished, it waits for every bucket, writes the averages into ``.grad`` and ends the iteration. If some
parameter got no gradient, it raises PyTorch's error at once; PyTorch raises the same error only at the
next forward.
"""
from __future__ import annotations

import weakref

import numpy as np

from ...autograd.engine import queue_callback
from ...autograd.grad_mode import no_grad
from ...distributed.collectives import _wire
from ...distributed.process_group import ProcessGroup, _mpi
from ...distributed.work import Work
from ...ops.creation import from_numpy, zeros
from ...ops.joins import cat

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`clgrad.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate "
    "in calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` function. Please include the "
    "loss function and the structure of the return value of `forward` of your module when reporting this issue "
    "(e.g. list, dict, iterable).")
_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of a "
    "module parameter outside the `forward` function. Please make sure model parameters are not shared across "
    "multiple concurrent forward-backward passes. 2) Reused parameters in multiple reentrant backward passes. For "
    "example, if you use multiple `checkpoint` functions to wrap the same part of your model, it would result in the "
    "same set of parameters been used by different reentrant backward passes multiple times, and hence marking a "
    "variable ready multiple times. DDP does not support such use cases in default.")


class _Bucket:
    """Some parameters' gradients, reduced together in one flat host buffer."""

    __slots__ = ("params", "offsets", "buf", "device", "dtype", "pending", "work", "grads")

    def __init__(self, params: list, idx: list[int]):
        sizes = [params[i].numel() for i in idx]
        self.params = idx
        self.offsets = np.cumsum([0] + sizes).tolist()
        self.device, self.dtype = params[idx[0]].device, params[idx[0]].dtype
        self.buf = np.zeros(self.offsets[-1], _wire(self.dtype, True))
        self.pending = len(idx)
        self.work: Work | None = None
        self.grads: list = [None] * len(idx)  # this iteration's gradients until the bucket is full

    def reset(self) -> None:
        self.pending, self.work, self.grads = len(self.params), None, [None] * len(self.params)

    def to_host(self) -> None:
        """The gradients into ``buf``: one copy from the device (None counts as zeros)."""
        parts = [zeros(self.offsets[k + 1] - self.offsets[k], dtype=self.dtype, device=self.device)
                 if g is None else g.reshape(-1) for k, g in enumerate(self.grads)]
        self.grads = [None] * len(self.grads)
        flat = parts[0] if len(parts) == 1 else cat(parts)
        self.buf[:] = flat._host()

    def result(self, k: int, shape, device_copy):
        """Parameter ``k``'s averaged gradient as a tensor on the bucket's device."""
        flat = device_copy if device_copy is not None else from_numpy(self.buf)
        return flat[self.offsets[k]:self.offsets[k + 1]].view(shape)


def assign_buckets(params, cap_bytes: int, first_cap_bytes: int) -> list[list[int]]:
    """Parameter indices per bucket: reverse order, one (device, dtype) per bucket, the first bucket small
    so that communication starts early in backward."""
    buckets: list[list[int]] = []
    open_: dict = {}  # (device, dtype) -> (its open bucket, bytes in it, how many buckets it has had)
    for i in reversed(range(len(params))):
        p = params[i]
        key = (str(p.device), p.dtype.name)
        b, size, nth = open_.get(key, (None, 0, 0))
        if b is None or size >= (first_cap_bytes if nth == 1 else cap_bytes):
            buckets.append([])
            b, size, nth = len(buckets) - 1, 0, nth + 1
        buckets[b].append(i)
        open_[key] = (b, size + p.numel() * p.dtype.itemsize, nth)
    return buckets


class Reducer:
    """The buckets and per-iteration state of one DDP model.

    The state follows PyTorch's reducer: ``expect_hooks`` is set by a synchronized forward and cleared when
    the iteration's reduction is finalized (so ``no_sync()`` backwards, and a second backward through a
    finished iteration's graph, only accumulate locally); ``require_finalize`` is set by the first parameter
    marked ready and cleared by the final callback (while it is set, the next forward raises).
    """

    def __init__(self, params: list, names: list[str], pg: ProcessGroup, cap_bytes: int, first_cap_bytes: int,
                 find_unused: bool = False):
        self.params = params
        self.names = names
        self.pg = pg
        self.find_unused = find_unused
        self.buckets: list[_Bucket] = []
        self.where: list[tuple[int, int]] = [(0, 0)] * len(params)
        for b, idx in enumerate(assign_buckets(params, cap_bytes, first_cap_bytes)):
            self.buckets.append(_Bucket(params, idx))
            for k, i in enumerate(idx):
                self.where[i] = (b, k)
        me = weakref.ref(self)  # a parameter outliving its DDP wrapper keeps a harmless no-op hook
        self.handles = [p.register_post_accumulate_grad_hook(_hook(me, i)) for i, p in enumerate(params)]
        self.expect_hooks = False
        self.require_finalize = False
        self.callback_queued = False
        self.ready = [False] * len(params)
        self.remaining = len(params)
        self.next_launch = 0
        self.launched_in_backward = 0  # buckets whose all-reduce started before the last gradient (overlap)
        self.unused: list[int] = []  # found unused by the forward; marked ready at the first hook
        # parameters that got a gradient since the last reduction, no_sync() backwards included (as in PyTorch)
        self.local_used = np.zeros(len(params), np.uint8)
        self._used = self.local_used.copy()  # its all-reduced (MAX) copy
        self._used_work: Work | None = None

    # ---- per iteration -------------------------------------------------------------------------------
    def check_finished(self) -> None:
        """PyTorch's check at every forward with grad mode on: the previous reduction must have finished."""
        if self.require_finalize:
            raise RuntimeError(self._unfinished_message())

    def prepare(self, unused: set[int] | None) -> None:
        """Expect the hooks of the next backward; ``unused`` parameters (find_unused_parameters) will be
        marked ready by its first hook."""
        self.check_finished()
        self.expect_hooks, self.callback_queued = True, False
        self.ready = [False] * len(self.params)
        self.remaining = len(self.params)
        self.next_launch = 0
        self.launched_in_backward = 0
        for b in self.buckets:
            b.reset()
        self.unused = sorted(unused or ())

    def on_ready(self, i: int) -> None:
        """The post-accumulate-grad hook of parameter ``i``: its ``.grad`` is final for this backward."""
        if self.find_unused:
            self.local_used[i] = 1
        if not self.expect_hooks:
            return  # no_sync(), or the iteration is already reduced: the gradient only accumulates locally
        if not self.callback_queued:
            queue_callback(self._on_backward_end)
            self.callback_queued = True
        unused, self.unused = self.unused, []
        for j in unused:  # PyTorch marks them at the first hook: zero_grad() may run between forward and backward
            self._mark_ready(j, True)
        self._mark_ready(i, True)
        for b in self.buckets[:self.next_launch]:  # MPI advances nonblocking collectives only when asked
            b.work.is_completed()

    def _mark_ready(self, i: int, in_backward: bool) -> None:
        """Parameter ``i``'s ``.grad`` goes into its bucket; full buckets start their all-reduce in order."""
        if self.ready[i]:
            raise RuntimeError(f"{_TWICE}\nParameter at index {i} with name {self.names[i]} has been marked as ready "
                               "twice. This means that multiple autograd engine  hooks have fired for this particular "
                               "parameter during this iteration.")
        self.require_finalize = True
        b, k = self.where[i]
        bucket = self.buckets[b]
        bucket.grads[k] = self.params[i].grad
        self.ready[i] = True
        self.remaining -= 1
        bucket.pending -= 1
        with no_grad():
            while self.next_launch < len(self.buckets) and self.buckets[self.next_launch].pending == 0:
                nb = self.buckets[self.next_launch]
                nb.to_host()
                req = self.pg.comm.Iallreduce(_mpi().IN_PLACE, nb.buf, op=_mpi().SUM)
                nb.work = Work([req], None, self.pg, f"DDP gradient all_reduce (bucket {self.next_launch})")
                self.next_launch += 1
                self.launched_in_backward += in_backward and self.remaining > 0
        if self.next_launch == len(self.buckets) and self.find_unused:
            # after the last bucket, as in PyTorch, so that every rank issues the same sequence of collectives
            self._used[:] = self.local_used
            req = self.pg.comm.Iallreduce(_mpi().IN_PLACE, self._used, op=_mpi().MAX)
            self._used_work = Work([req], None, self.pg, "DDP unused-parameter map")

    def _on_backward_end(self) -> None:
        """The final callback: parameters still without a gradient are unused (find_unused_parameters) or
        an error; then the reduction is finalized."""
        self.callback_queued = False
        if self.remaining:
            if not self.find_unused:
                raise RuntimeError(self._unfinished_message())
            # reachable from the output but not from the loss: PyTorch's hooks fire for them with no gradient
            for i in [i for i, r in enumerate(self.ready) if not r]:
                self._mark_ready(i, False)
        self._finalize()

    def _finalize(self) -> None:
        """Wait for every bucket, average, and write the gradients into ``.grad``."""
        for b in self.buckets:
            b.work.wait()
            np.divide(b.buf, self.pg.size(), out=b.buf)
        used = None
        if self._used_work is not None:
            self._used_work.wait()
            self._used_work, used = None, self._used
        with no_grad():
            for b in self.buckets:
                # one transfer back to the device; the per-parameter copies then stay on the device
                on_device = None if b.device.type == "cpu" else from_numpy(b.buf).to(b.device, b.dtype)
                for k, i in enumerate(b.params):
                    p = self.params[i]
                    if used is not None and not used[i]:
                        continue  # unused on every rank: its gradient stays as it was, as in PyTorch
                    avg = b.result(k, p.shape, on_device)
                    if p.grad is None:
                        p.grad = avg.to(p.dtype, copy=True)
                    else:
                        p.grad.copy_(avg)
        self.local_used[:] = 0
        self.expect_hooks = self.require_finalize = False

    def _unfinished_message(self) -> str:
        missing = [i for i, r in enumerate(self.ready) if not r]
        rank = self.pg.rank()
        return (f"{_UNFINISHED}\nParameters which did not receive grad for rank {rank}: "
                f"{', '.join(self.names[i] for i in missing)}\nParameter indices which did not receive grad for rank "
                f"{rank}: {' '.join(map(str, missing))}")

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _hook(ref, i: int):
    def hook(param) -> None:
        reducer = ref()
        if reducer is not None:
            reducer.on_ready(i)

    return hook
