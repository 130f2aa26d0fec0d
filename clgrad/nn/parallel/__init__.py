"""``clgrad.nn.parallel``: data parallelism across devices of one process (``DataParallel``) and
across MPI ranks (``DistributedDataParallel``)."""
from __future__ import annotations

from .data_parallel import DataParallel, parallel_apply, replicate
from .distributed import DistributedDataParallel
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "DistributedDataParallel", "gather", "parallel_apply", "replicate", "scatter"]
