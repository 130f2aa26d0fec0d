"""Datasets (MNIST, Fashion-MNIST) and small transforms, modelled on torchvision."""

from __future__ import annotations

from . import transforms
from .mnist import MNIST, FashionMNIST, read_idx

__all__ = ["MNIST", "FashionMNIST", "read_idx", "transforms"]
