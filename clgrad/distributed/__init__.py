"""``clgrad.distributed``: ``torch.distributed``'s API on MPI (mpi4py), for data-parallel training.

    mpiexec -n 2 python train.py

    >>> import clgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = clgrad.ones(3, device="opencl")
    >>> dist.all_reduce(t)                  # every rank now holds world_size * ones
    >>> work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True); work.wait()

mpi4py is imported only by ``init_process_group``, so ``import clgrad.distributed`` works without it.
See docs/distributed.md for the design.
"""
from __future__ import annotations

from .collectives import (
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    send,
)
from .process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
)
from .work import Work

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
    "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend", "get_global_rank",
    "get_node_local_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "isend",
    "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "send",
]
