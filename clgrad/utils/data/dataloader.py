"""``DataLoader`` and the default collate functions, as in ``torch.utils.data``.

Workers are threads, not processes: tensors and OpenCL contexts are not fork-safe, and the heavy work
(numpy, kernels) releases the GIL anyway.
"""
from __future__ import annotations

import collections
import collections.abc as abc
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from ... import dtypes as D
from ...device import resolve
from ...ops.creation import as_tensor, tensor
from ...ops.joins import stack
from ...tensor import Tensor
from .dataset import IterableDataset
from .prefetch import to_device_ahead
from .sampler import BatchSampler, RandomSampler, SequentialSampler

_COLLATE_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Numpy arrays and scalars inside ``data`` (recursively) become tensors; everything else is kept."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind not in "SUO":
        return as_tensor(np.ascontiguousarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, abc.Mapping):
        return {key: default_convert(data[key]) for key in data}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch returns a list here too
    if isinstance(data, abc.Sequence):
        converted = [default_convert(d) for d in data]
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data


def _collate_sequences(batch):
    elem = batch[0]
    if any(len(e) != len(elem) for e in batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    columns = [default_collate(samples) for samples in zip(*batch)]  # tuples, as PyTorch passes them
    if _is_namedtuple(elem):
        return type(elem)(*columns)
    if isinstance(elem, tuple):
        return columns  # PyTorch's backwards-compatible choice: tuples collate to lists
    try:
        return type(elem)(columns)
    except TypeError:
        return columns


def default_collate(batch):
    """Merge a list of samples into a batch: tensors, numpy arrays and numbers are stacked into a tensor
    with a new first dimension; dicts, tuples, lists and namedtuples are collated field by field;
    strings are kept as a list."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, (np.ndarray, np.generic)) and not isinstance(elem, (np.str_, np.bytes_)):
        if elem.dtype.kind in "SUO":
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return as_tensor(np.ascontiguousarray(np.stack(batch)))
    if isinstance(elem, float):
        return tensor(batch, dtype=D.float64)
    if isinstance(elem, int):  # bool included: PyTorch then gives a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        merged = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(merged)
        except TypeError:
            return merged
    if isinstance(elem, abc.Sequence):
        return _collate_sequences(batch)
    raise TypeError(_COLLATE_ERR.format(type(elem)))


def _check_args(loader, shuffle, sampler, batch_sampler, batch_size, drop_last, num_workers, prefetch_factor,
                persistent_workers, timeout):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if isinstance(loader.dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
            if value not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                 f"but got {name}={value}")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                         "and drop_last")
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")


class DataLoader:
    """Iterate over ``dataset`` in batches: ``for x, y in DataLoader(ds, batch_size=64, shuffle=True)``.

    With ``num_workers > 0``, that many background threads load and collate up to
    ``prefetch_factor * num_workers`` batches ahead, yielded in order; waiting more than ``timeout`` seconds
    (if positive) for a batch raises ``RuntimeError``, as in PyTorch. ``pin_memory`` and ``in_order`` are
    accepted and ignored (batches always come in order, which ``in_order=False`` allows).

    clgrad extension: with ``device="opencl"``, batches arrive with their tensors already on that device, and
    the next batch's host->device copy is issued while the current one is being computed, so ``.to(device)``
    in the loop becomes a no-op: ``for x, y in DataLoader(ds, batch_size=64, device="opencl"): ...``.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, device=None):
        self.dataset = dataset
        self.device = None if device is None else resolve(device)  # checked now, not at the first batch
        _check_args(self, shuffle, sampler, batch_sampler, batch_size, drop_last, num_workers, prefetch_factor,
                    persistent_workers, timeout)
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last, self.sampler, self.batch_sampler = batch_size, drop_last, sampler, batch_sampler
        self.num_workers, self.generator, self.pin_memory = num_workers, generator, pin_memory
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.persistent_workers, self.timeout, self.worker_init_fn = persistent_workers, timeout, worker_init_fn
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation or batch_size is not None else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler if self._auto_collation else self.sampler)

    def _fetch(self, index):
        if self._auto_collation:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])

    def _iterable_batches(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            yield from (self.collate_fn(x) for x in it)
            return
        while True:
            batch = [x for _, x in zip(range(self.batch_size), it)]
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __iter__(self):
        batches = self._host_batches()
        return batches if self.device is None else to_device_ahead(batches, self.device)

    def _host_batches(self):
        if self.num_workers == 0 and self.timeout != 0:  # PyTorch: the same AssertionError, from its iterator
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0: with num_workers=0 the batches "
                                 "load in this thread, which cannot time itself out")
        if isinstance(self.dataset, IterableDataset):
            batches = self._iterable_batches()
            return batches if self.num_workers == 0 else _read_ahead(
                batches, self.prefetch_factor * self.num_workers, self.timeout)
        indices = self.batch_sampler if self._auto_collation else self.sampler
        if self.num_workers == 0:
            return (self._fetch(index) for index in indices)
        return _ordered_pool(self._fetch, indices, self.num_workers, max(1, self.prefetch_factor * self.num_workers),
                             self.timeout)


def _timed_out(timeout) -> RuntimeError:
    """PyTorch's error when a worker's batch takes longer than ``timeout`` seconds to arrive."""
    return RuntimeError(f"DataLoader timed out after {timeout} seconds")


def _ordered_pool(fetch, indices, num_workers, depth, timeout=0):
    """Run ``fetch`` over ``indices`` on a thread pool, at most ``depth`` ahead, yielding in order.

    An exception in a worker surfaces at the batch that raised it; closing the generator early (``break``)
    cancels what has not started. A batch not ready ``timeout`` seconds after it is asked for raises (the
    stuck thread can't be killed: it is left to finish in the background)."""
    pool = ThreadPoolExecutor(max_workers=num_workers, thread_name_prefix="clgrad-dataloader")
    pending: collections.deque = collections.deque()
    try:
        for index in indices:
            pending.append(pool.submit(fetch, index))
            if len(pending) >= depth:
                yield _result(pending.popleft(), timeout)
        while pending:
            yield _result(pending.popleft(), timeout)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _result(future, timeout):
    try:
        return future.result(timeout=timeout if timeout > 0 else None)
    except FutureTimeout:
        if future.done():  # the batch's own TimeoutError, not ours
            raise
        raise _timed_out(timeout) from None


_DONE = object()


def _read_ahead(batches, depth, timeout=0):
    """A stream can't be split among workers without duplicating it, so one thread reads it ahead."""
    q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item) -> bool:
        """Queue ``item`` unless the consumer has gone; False once it has."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for b in batches:
                if not put((b, None)):
                    return
            put((_DONE, None))
        except BaseException as e:  # handed to the consumer, raised there
            put((_DONE, e))

    threading.Thread(target=produce, daemon=True, name="clgrad-dataloader").start()
    try:
        while True:
            try:
                item, err = q.get(timeout=timeout if timeout > 0 else None)
            except queue.Empty:
                raise _timed_out(timeout) from None
            if err is not None:
                raise err
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
