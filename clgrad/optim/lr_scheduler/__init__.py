"""Learning-rate schedulers with PyTorch's formulas (its recursive forms, so values match bit for bit).

A scheduler rewrites ``group['lr']`` of its optimizer's parameter groups (Python floats) at each ``step()``;
``state_dict()`` is every attribute but the optimizer, as in PyTorch.
"""
from __future__ import annotations

from .base import LRScheduler
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts, OneCycleLR
from .decay import ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR, StepLR
from .plateau import ReduceLROnPlateau
from .sequential import SequentialLR

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ReduceLROnPlateau",
           "CosineAnnealingWarmRestarts", "OneCycleLR"]
