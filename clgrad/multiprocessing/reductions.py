"""How tensors cross process boundaries through multiprocessing (queues, pipes, ``spawn`` arguments).

As in torch, a cpu tensor sent this way moves into shared memory first (``Storage.share_memory_``) and travels as a
handle to that memory, so the receiver's tensor views the sender's values and in-place writes on either side are
seen by both. The handle is a duplicated file descriptor (strategy ``file_descriptor``) or a block name
(``file_system``; a block sent by name stays until its creator exits). A process that receives the same block
twice, or gets back a block it sent, gets one Storage.
OpenCL tensors travel by value: OpenCL has no inter-process buffers, so the receiver gets a copy on the same device.
Plain ``pickle`` is untouched: it keeps storing values (``Tensor.__reduce_ex__``).
"""
from __future__ import annotations

import os
from multiprocessing.reduction import DupFd, ForkingPickler

from .. import backends
from .. import dtypes as D
from ..device import CPU, resolve
from ..storage import SharedBlock, Storage, blocks
from ..tensor import Tensor

_sent: dict = {}  # key -> SharedBlock: file_system blocks this process has sent
_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
             "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
             "before serializing (e.g., putting it on the queue).")


def reduce_tensor(t: Tensor):
    """The multiprocessing pickler's reduction of a Tensor: shared-memory handle on cpu, values elsewhere."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(_NON_LEAF)
    storage = t._storage
    if storage.device.type != "cpu":
        host = backends.get(storage.device).read(t)
        return (rebuild_copy, (host, str(storage.device), t.dtype.name, t.requires_grad))
    block = storage.share_memory_().shared
    if block.shm is not None:
        # a name is only good while it exists: once sent, the block outlives its storage until this process exits
        # (a queue pickles in a feeder thread, after the sender may have dropped the tensor); a descriptor is
        # duplicated as it is pickled, so it needs no such pin
        _sent[block.key] = block
    handle = (block.nbytes, block.key, DupFd(block.fd) if block.fd >= 0 else None,
              None if block.shm is None else block.shm.name)
    meta = (storage.dtype.name, storage.size, t.dtype.name, t._shape, t._strides, t._offset, t.requires_grad)
    return (rebuild_shared, (handle, meta))


def _storage(handle, dtype_name: str, size: int) -> Storage:
    """This process's Storage for a shared block: the one it already has, or a new mapping."""
    nbytes, key, dupfd, name = handle
    fd = dupfd.detach() if dupfd is not None else -1  # always taken, so the sender's copy is released
    found = blocks.get(key)
    if found is not None:
        if fd >= 0:
            os.close(fd)
        return found
    dt = D.as_dtype(dtype_name)
    block = SharedBlock.attach(nbytes, key, fd=fd, name=name)
    storage = Storage(CPU, dt, size, block.array(dt, size))
    storage.shared = block
    blocks[key] = storage
    return storage


def rebuild_shared(handle, meta) -> Tensor:
    storage_dtype, size, dtype_name, shape, strides, offset, requires_grad = meta
    storage = _storage(handle, storage_dtype, size)
    t = Tensor._make(storage, D.as_dtype(dtype_name), shape, strides, offset)
    return t.requires_grad_(True) if requires_grad else t


def rebuild_copy(host, dev: str, dtype_name: str, requires_grad: bool) -> Tensor:
    t = Tensor._empty(host.shape, D.as_dtype(dtype_name), resolve(dev))
    backends.get(t.device).write(t._storage, host)
    return t.requires_grad_(True) if requires_grad else t


def init_reductions() -> None:
    """Make multiprocessing pickle tensors through ``reduce_tensor`` (torch.multiprocessing does this on import)."""
    ForkingPickler.register(Tensor, reduce_tensor)
