"""Device prefetch for ``DataLoader(..., device=...)``: the next batch's host->device copy overlaps this step.

A transfer into an in-order OpenCL queue blocks its caller until every kernel queued before it has run, so
``data.to(device)`` at the top of a training step waits for the previous step to finish. Here the loader
fetches and collates batch i+1 and hands its transfers to a copy thread before the consumer gets batch i;
the consumer's thread keeps queueing kernels while the copy thread waits.

Only transfers run on the copy thread. Allocation (the caching allocator is not thread-safe) and every
kernel stay on the consumer's thread, and the copy thread drops its references before it reports, so
device memory is also freed there.
"""
from __future__ import annotations

import collections.abc as abc
import traceback
from concurrent.futures import ThreadPoolExecutor

from ...device import resolve
from ...ops.creation import empty
from ...tensor import Tensor


def _plan(data, device, copies: list):
    """``data`` with each cpu tensor replaced by an uninitialised one on ``device``; the pending
    ``(destination, source)`` copies are appended to ``copies``. Other objects are kept as they are."""
    if isinstance(data, Tensor):
        if data.device == device:
            return data
        if data.device.type != "cpu":
            return data.to(device)  # device to device runs kernels, so it stays on this thread
        src = data.detach().contiguous()
        dst = empty(src.shape, dtype=src.dtype, device=device)
        copies.append((dst, src))
        return dst
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, abc.Mapping):
        moved = {key: _plan(value, device, copies) for key, value in data.items()}
        try:
            return type(data)(moved)
        except TypeError:
            return moved
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(_plan(d, device, copies) for d in data))
    if isinstance(data, tuple):
        return tuple(_plan(d, device, copies) for d in data)
    if isinstance(data, abc.Sequence):
        moved = [_plan(d, device, copies) for d in data]
        try:
            return type(data)(moved)
        except TypeError:
            return moved
    return data


def _upload(copies: list) -> None:
    """The copy thread's job: same-dtype contiguous copies, i.e. transfers only (no kernel, no allocation)."""
    dst = src = None
    try:
        while copies:
            dst, src = copies.pop()
            dst.copy_(src)
    except BaseException as e:
        traceback.clear_frames(e.__traceback__)  # the traceback must not keep the tensors alive here
        raise
    finally:
        dst = src = None
        copies.clear()


def _ready(batch, upload):
    if upload is not None:
        upload.result()  # re-raises the copy's error at the batch it belongs to
    return batch


def to_device_ahead(batches, device):
    """Yield ``batches`` moved to ``device``, each one's copy issued while the previous one is consumed.

    An error while fetching a batch is raised after the batches before it were yielded, as without
    prefetch."""
    device = resolve(device)
    copier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clgrad-h2d")
    it, pending, error = iter(batches), None, None
    try:
        while True:
            try:
                batch = next(it)
            except StopIteration:
                break
            except Exception as e:
                error = e
                break
            copies: list = []
            moved = _plan(batch, device, copies)
            issued = (moved, copier.submit(_upload, copies) if copies else None)
            if pending is not None:
                yield _ready(*pending)
            pending = issued
        if pending is not None:
            yield _ready(*pending)
        if error is not None:
            raise error
    finally:
        # wait for a copy still in flight (the consumer broke early), so that its tensors die on this thread
        copier.shutdown(wait=True, cancel_futures=True)
