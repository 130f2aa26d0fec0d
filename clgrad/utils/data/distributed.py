"""``DistributedSampler``: each rank's share of a dataset's indices, exactly as PyTorch assigns them.

The shuffle reproduces ``torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))`` bit
for bit (the MT19937 stream PyTorch's CPU generator draws from, and its swap loop), so a job that
mixes clgrad and PyTorch ranks, or resumes a PyTorch run, sees the same samples on the same ranks.
"""
from __future__ import annotations

import math

import numpy as np

from ... import distributed as dist
from .sampler import Sampler


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()`` without PyTorch.

    PyTorch seeds a standard MT19937 with the seed's low 32 bits (numpy's legacy ``RandomState`` seeds
    identically) and, for n below 2**32 / 20, swaps element i with i + (next 32-bit draw) % (n - i).
    """
    if n >= (2**32 - 1) // 20:
        raise ValueError(f"DistributedSampler supports datasets of fewer than {(2**32 - 1) // 20} samples")
    draws = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=max(n - 1, 0), dtype=np.uint32)
    steps = (draws.astype(np.int64) % np.arange(n, 1, -1, dtype=np.int64) + np.arange(n - 1)).tolist()
    perm = list(range(n))
    for i, j in enumerate(steps):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


class DistributedSampler(Sampler):
    """Restricts loading to this rank's share of ``dataset`` (PyTorch's arguments and assignment).

    Ranks take every ``num_replicas``-th index of one permutation shared by all ranks (reshuffled per
    ``set_epoch``). Without ``drop_last`` the permutation is padded with its own head so every rank gets
    the same number of samples; with it, the tail is dropped.

        >>> sampler = DistributedSampler(dataset)        # rank and world size from the process group
        >>> loader = DataLoader(dataset, batch_size=64, sampler=sampler)
        >>> for epoch in range(epochs):
        ...     sampler.set_epoch(epoch)
        ...     train(loader)
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - n
            if padding <= n:
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / n))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle: every rank must call this with the same epoch before iterating."""
        self.epoch = epoch
