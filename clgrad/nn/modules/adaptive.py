"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. (a head over the frequent classes and one
cluster token per tail, each tail a low-rank two-layer projection), with PyTorch's parameters and outputs."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...ops import creation
from ...ops.joins import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target)`` gives ``(output, loss)``: each target's log-probability and their negated mean;
    ``log_prob(input)`` the full (N, n_classes) log-probabilities and ``predict(input)`` their argmax."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _batched(self, input_, target_):
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
            return input_, target_
        if target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
            return input_.unsqueeze(0), target_.unsqueeze(0)
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_, target_):
        input, target = self._batched(input_, target_)
        tg = np.asarray(target.cpu().numpy(), np.int64)  # the cluster of each row decides which tail runs
        if tg.size and (tg.min() < 0 or tg.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{tg.min()}, {tg.max()}] were found. ")
        dev = input.device
        gather = tg.copy()
        output = creation.zeros((tg.size,), dtype=input.dtype, device=dev)
        for i in range(1, self.n_clusters + 1):
            lo, hi = self.cutoffs[i - 1], self.cutoffs[i]
            rows = np.nonzero((tg >= lo) & (tg < hi))[0]
            if rows.size == 0:
                continue
            gather[rows] = self.shortlist_size + i - 1
            where = creation.tensor(rows, device=dev)
            logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, where)), dim=1)
            local = logprob.gather(1, creation.tensor(tg[rows] - lo, device=dev).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, where, local)
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, creation.tensor(gather, device=dev).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if target_.dim() else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """The (N, n_classes) log-probabilities of every class (or (n_classes,) for a 1-D input)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row (argmax of ``log_prob``)."""
        return self.log_prob(input).argmax(dim=-1)
