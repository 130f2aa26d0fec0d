"""Data loading mirroring ``torch.utils.data``: datasets, samplers and ``DataLoader``."""
from __future__ import annotations

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
    "SequentialSampler", "Subset", "TensorDataset", "default_collate", "default_convert", "random_split",
]
