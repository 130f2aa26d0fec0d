"""CTCLoss and LinearCrossEntropyLoss (the other losses are in loss.py)."""
from __future__ import annotations

import math

from .. import functional as F
from .linear import Linear
from .loss import _Loss, _WeightedLoss

__all__ = ["CTCLoss", "LinearCrossEntropyLoss"]


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss of (T, N, C) log-probabilities (``F.ctc_loss``)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A bias-free (by default) Linear layer followed by cross-entropy (``F.linear_cross_entropy``); the linear
    weight is kept 2-D as ``linear.weight`` (num_classes * prod(out_features), in_features), as in PyTorch."""

    def __init__(self, in_features: int, num_classes: int, *, out_features=(), bias: bool = False, device=None,
                 dtype=None, reduction: str = "mean", weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)

    def forward(self, input, target):
        weight = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        bias = self.linear.bias
        bias = bias.reshape(self.num_classes, *self.out_features) if bias is not None else None
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)
