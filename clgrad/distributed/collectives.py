"""Collectives on tensors of any device, as ``torch.distributed``'s (same names, arguments and errors).

Data travels through host memory: a cpu tensor's own numpy memory when it is contiguous (zero copy),
otherwise a contiguous host copy that is written back when the operation completes. MPI sees only
numpy buffers through mpi4py's buffer interface (the uppercase, nonblocking ``Iallreduce``,
``Ibcast``, ...), never pickled objects. Reductions of float16 run in float32 on the host (MPI has no
portable half type); bool reductions run on bytes (SUM and MAX are "or", PRODUCT and MIN "and").
"""
from __future__ import annotations

import enum

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from ..backends.cpu import view_of
from ..ops.creation import from_numpy
from ..tensor import Tensor
from .process_group import ProcessGroup, _mpi, _resolve
from .work import Work

__all__ = [
    "ReduceOp", "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast", "irecv", "isend",
    "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "send",
]


class ReduceOp(enum.Enum):
    """How ``all_reduce``, ``reduce`` and ``reduce_scatter`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_MPI_OPS = {"sum": "SUM", "avg": "SUM", "product": "PROD", "min": "MIN", "max": "MAX", "band": "BAND",
            "bor": "BOR", "bxor": "BXOR"}
# bool values travel as bytes 0/1: "or" is MAX, "and" is MIN
_BOOL_OPS = {"sum": "MAX", "avg": "MAX", "max": "MAX", "bor": "MAX", "product": "MIN", "min": "MIN", "band": "MIN",
             "bxor": "BXOR"}


# ---- host staging --------------------------------------------------------------------------------------
def _check_tensor(t, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type Tensor but got {type(t)} "
                        "instead.")


def _wire(dt: D.dtype, reducing: bool) -> np.dtype:
    """The host dtype MPI works on: float16 is summed in float32, bool reduced as bytes."""
    if reducing and dt in D.HALF_FLOATS:
        return np.dtype(np.float32)
    if reducing and dt is D.bool:
        return np.dtype(np.uint8)
    return np.dtype(dt.np)


def _store(t: Tensor, flat: np.ndarray) -> None:
    """Write host values back into ``t`` (any device, layout or dtype), outside autograd like PyTorch's
    collectives."""
    with no_grad():
        t.copy_(from_numpy(flat.reshape(t.shape)))


def _bump(t: Tensor) -> None:
    t._storage.version += 1  # MPI wrote the tensor's memory in place


def _stage(t: Tensor, wire: np.dtype, read: bool = True):
    """A flat contiguous host array of ``t``'s values and the function that stores it back into ``t``."""
    if t.device.type == "cpu" and t.is_contiguous() and np.dtype(t.dtype.np) == wire and t.numel():
        return view_of(t).reshape(-1), lambda: _bump(t)
    if read:
        flat = np.ascontiguousarray(t._host(), dtype=wire).reshape(-1)
    else:
        flat = np.empty(t.numel(), wire)
    return flat, lambda: _store(t, flat)


def _bytes(a: np.ndarray) -> np.ndarray:
    """Copying collectives move raw bytes: any dtype (bool, float16) goes as MPI_BYTE."""
    return a.reshape(-1).view(np.uint8)


def _mpi_op(op, dt: D.dtype):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, not {type(op).__name__}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dt.is_floating_point:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with {dt}")
    name = (_BOOL_OPS if dt is D.bool else _MPI_OPS)[op.value]
    return getattr(_mpi(), name)


def _finish_reduce(buf: np.ndarray, op, dt: D.dtype, n: int, store):
    """After MPI's sum: AVG divides (truncating toward zero for integers, like NCCL); then store."""
    def finish():
        if op is ReduceOp.AVG and dt is not D.bool:
            if buf.dtype.kind == "f":
                np.divide(buf, n, out=buf)
            else:
                buf[...] = np.sign(buf) * (np.abs(buf) // n)
        store()

    return finish


def _run(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _same_kind(t: Tensor, like: Tensor, what: str, i: int) -> None:
    if t.numel() != like.numel() or t.dtype is not like.dtype:
        raise RuntimeError(f"{what}: tensor {i} has {t.numel()} elements of {t.dtype} but the other argument has "
                           f"{like.numel()} of {like.dtype}; every rank's tensors must match")


def _per_rank(tensors, like: Tensor, n: int, what: str, name: str) -> None:
    """``tensors`` is a list of one tensor per rank, each shaped and typed like ``like``."""
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        got = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise RuntimeError(f"{what}: {name} must hold one tensor per rank (expected {n}, got {got})")
    for i, t in enumerate(tensors):
        _check_tensor(t, name)
        _same_kind(t, like, what, i)


# ---- collectives ---------------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` over every rank with ``op``, in place on each.

        >>> t = clgrad.tensor([float(dist.get_rank())], device="opencl")
        >>> dist.all_reduce(t)            # t == 0 + 1 + ... on every rank
    """
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    mop = _mpi_op(op, tensor.dtype)
    buf, store = _stage(tensor, _wire(tensor.dtype, True))
    req = pg.comm.Iallreduce(_mpi().IN_PLACE, buf, op=mop)
    finish = _finish_reduce(buf, op, tensor.dtype, pg.size(), store)
    return _run(Work([req], finish, pg, "all_reduce", [tensor]), async_op)


def reduce(tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` over every rank into rank ``dst``'s tensor; the others' are left unchanged."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    root = pg.group_rank(dst, "dst")
    mop = _mpi_op(op, tensor.dtype)
    buf, store = _stage(tensor, _wire(tensor.dtype, True))
    if pg.rank() == root:
        req = pg.comm.Ireduce(_mpi().IN_PLACE, buf, op=mop, root=root)
        finish = _finish_reduce(buf, op, tensor.dtype, pg.size(), store)
    else:
        req, finish = pg.comm.Ireduce(buf, None, op=mop, root=root), None
    return _run(Work([req], finish, pg, "reduce", [tensor]), async_op)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """Copy rank ``src``'s ``tensor`` into every other rank's ``tensor`` (same shape and dtype)."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    root = pg.group_rank(src, "src")
    is_root = pg.rank() == root
    buf, store = _stage(tensor, np.dtype(tensor.dtype.np), read=is_root)
    req = pg.comm.Ibcast(_bytes(buf), root=root)
    return _run(Work([req], None if is_root else store, pg, "broadcast", [tensor]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[i]`` receives rank ``i``'s ``tensor``."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    n = pg.size()
    _per_rank(tensor_list, tensor, n, "all_gather", "tensor_list")
    send, _ = _stage(tensor, np.dtype(tensor.dtype.np))
    recv = np.empty((n, tensor.numel()), tensor.dtype.np)
    req = pg.comm.Iallgather(_bytes(send), _bytes(recv))

    def finish():
        for out, row in zip(tensor_list, recv):
            _store(out, row)

    return _run(Work([req], finish, pg, "all_gather", tensor_list), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Rank ``i``'s ``input_tensor`` lands in the ``i``-th slice of ``output_tensor`` (concatenated or stacked)."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    if output_tensor.numel() != pg.size() * input_tensor.numel() or output_tensor.dtype is not input_tensor.dtype:
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    send, _ = _stage(input_tensor, np.dtype(input_tensor.dtype.np))
    recv, store = _stage(output_tensor, np.dtype(output_tensor.dtype.np), read=False)
    req = pg.comm.Iallgather(_bytes(send), _bytes(recv))
    return _run(Work([req], store, pg, "all_gather_into_tensor", [output_tensor]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` on rank ``i`` receives the reduction over ranks of their ``input_list[i]``."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(output, "output")
    _per_rank(input_list, output, pg.size(), "reduce_scatter", "input_list")
    wire = _wire(output.dtype, True)
    send = np.concatenate([np.ascontiguousarray(x._host(), dtype=wire).reshape(-1) for x in input_list])
    return _reduce_scatter(output, send, op, pg, async_op, "reduce_scatter")


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Like ``reduce_scatter`` with the per-rank inputs concatenated in one tensor."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if input.numel() != pg.size() * output.numel() or input.dtype is not output.dtype:
        raise ValueError("input tensor must be the same size as output size times world size")
    send = np.ascontiguousarray(input._host(), dtype=_wire(input.dtype, True)).reshape(-1)
    return _reduce_scatter(output, send, op, pg, async_op, "reduce_scatter_tensor")


def _reduce_scatter(output, send, op, pg: ProcessGroup, async_op: bool, what: str):
    mop = _mpi_op(op, output.dtype)
    recv, store = _stage(output, send.dtype, read=False)
    req = pg.comm.Ireduce_scatter_block(send, recv, op=mop)
    finish = _finish_reduce(recv, op, output.dtype, pg.size(), store)
    return _run(Work([req], finish, pg, what, [output]), async_op)


def isend(tensor, dst: int, group=None, tag: int = 0):
    """Start sending ``tensor`` to rank ``dst``; the returned ``Work`` completes when it may be reused."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    peer = pg.group_rank(dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the current process.")
    buf, _ = _stage(tensor, np.dtype(tensor.dtype.np))
    return Work([pg.comm.Isend(_bytes(buf), dest=peer, tag=tag)], None, pg, f"send to rank {dst}")


def irecv(tensor, src: int | None = None, group=None, tag: int = 0):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None)."""
    pg = _resolve(group)
    if pg is None:
        return None
    _check_tensor(tensor, "tensor")
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None else pg.group_rank(src, "src")
    if peer == pg.rank():
        raise ValueError("Invalid source rank: should not be the same as the rank of the current process.")
    buf, store = _stage(tensor, np.dtype(tensor.dtype.np), read=False)
    statuses = [MPI.Status()]

    def finish():
        got = statuses[0].Get_count(MPI.BYTE)
        if got != buf.nbytes:
            raise RuntimeError(f"recv: expected {buf.nbytes} bytes ({tensor.numel()} elements of {tensor.dtype}) but "
                               f"rank {pg.ranks[statuses[0].Get_source()]} sent {got}")
        store()

    req = pg.comm.Irecv(_bytes(buf), source=peer, tag=tag)
    work = Work([req], finish, pg, f"recv from rank {'any' if src is None else src}", [tensor], statuses)
    work.source_rank = lambda: pg.ranks[statuses[0].Get_source()]
    return work


def send(tensor, dst: int, group=None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (which calls ``recv``)."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of ``group`` has reached this call."""
    pg = _resolve(group)
    if pg is None:
        return None
    return _run(Work([pg.comm.Ibarrier()], None, pg, "barrier"), async_op)


def broadcast_coalesced(tensors, src: int = 0, group=None) -> None:
    """Broadcast many tensors with one message per (device, dtype): how DDP syncs parameters and buffers."""
    pg = _resolve(group)
    if pg is None:
        return
    root = pg.group_rank(src, "src")
    groups: dict = {}
    for t in tensors:
        groups.setdefault((str(t.device), t.dtype.name), []).append(t)
    works = []
    for ts in groups.values():
        if pg.rank() == root:
            flat = np.concatenate([np.ascontiguousarray(t._host()).reshape(-1) for t in ts])
        else:
            flat = np.empty(sum(t.numel() for t in ts), ts[0].dtype.np)
        works.append(Work([pg.comm.Ibcast(_bytes(flat), root=root)], _scatter_back(ts, flat, pg.rank() == root),
                          pg, "broadcast"))
    for w in works:
        w.wait()


def _scatter_back(ts, flat: np.ndarray, is_root: bool):
    def finish():
        if is_root:
            return
        at = 0
        for t in ts:
            _store(t, flat[at:at + t.numel()])
            at += t.numel()

    return finish
