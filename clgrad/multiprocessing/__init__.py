"""``clgrad.multiprocessing``: Python's multiprocessing, with tensors that share memory across processes.

Everything of ``multiprocessing`` is here (``Process``, ``Queue``, ``Pool``, ``get_context``, ``set_start_method``,
``cpu_count``...), plus torch's ``spawn``/``start_processes`` and sharing strategies. Importing clgrad registers
the tensor reduction (``reductions.py``): a cpu tensor put on a queue or passed to a spawned process moves into
shared memory and the receiver views the same memory. With ``model.share_memory()`` before the processes start,
Hogwild training works with either start method::

    model = Net().share_memory()
    procs = [mp.Process(target=train, args=(model,)) for _ in range(4)]

OpenCL tensors cannot be shared (``share_memory_`` raises; on a queue they travel as copies); train Hogwild on cpu.
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .. import storage as _storage
from .reductions import init_reductions
from .spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = list(multiprocessing.__all__) + [
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
]


def set_sharing_strategy(new_strategy: str) -> None:
    """``file_descriptor`` (Linux, the default there: memory passed as a descriptor, freed with its last user) or
    ``file_system`` (a named shared-memory block)."""
    if new_strategy not in _storage.STRATEGIES:
        raise ValueError(f"invalid sharing strategy {new_strategy!r}; expected one of {_storage.STRATEGIES}")
    _storage.sharing["strategy"] = new_strategy


def get_sharing_strategy() -> str:
    return _storage.sharing["strategy"]


def get_all_sharing_strategies() -> set[str]:
    return set(_storage.STRATEGIES)


init_reductions()
