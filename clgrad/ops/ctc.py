"""``ctc_loss``: the Connectionist Temporal Classification loss, as a log-space alpha recursion composed from
clgrad ops over the time steps (one gather of the extended labels' log-probabilities, then per step a shifted
three-way log-sum-exp), so autograd differentiates it.

The lengths and targets are read on the host (PyTorch's CPU kernel reads them too) to build the extended label
sequences (blank, l1, blank, l2, ..., blank) and the masks of allowed transitions. PyTorch's gradient w.r.t.
``log_probs`` is ``exp(log_probs) - posterior``, the gradient w.r.t. the logits of a log_softmax; it equals the
true gradient of the loss only after log_softmax's backward. To give the same numbers for any ``log_probs``, the
loss adds ``E - E.detach()`` (zero) with ``E`` the sum of ``exp(log_probs)`` over each sample's valid time steps.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import creation
from .joins import cat

__all__: list[str] = []
FUNCTIONAL = ["ctc_loss"]

_NEG = float("-inf")


def _lse(*terms):
    """log(sum(exp(terms))) elementwise, -inf (with a zero gradient, never NaN) where every term is -inf."""
    m = terms[0]
    for t in terms[1:]:
        m = m.maximum(t)
    with no_grad():
        alive = m > _NEG
        shift = m.where(alive, 0.0)
    total = None
    for t in terms:
        e = (t - shift).exp()
        total = e if total is None else total + e
    return (shift + total.where(alive, 1.0).log()).where(alive, _NEG)


def _host_ints(x, name: str) -> np.ndarray:
    if hasattr(x, "cpu"):
        if x.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return np.asarray(x.cpu().numpy(), dtype=np.int64).reshape(-1)
    return np.asarray(list(x), dtype=np.int64).reshape(-1)


def _targets_matrix(targets, tl: np.ndarray, n: int) -> np.ndarray:
    """Targets as an (N, max length) int matrix, from the padded (N, S) or the concatenated 1-D form."""
    tg = np.asarray(targets.cpu().numpy(), dtype=np.int64)
    width = int(tl.max()) if tl.size else 0
    if tg.ndim == 2:
        if tg.shape[1] < width:
            raise RuntimeError(f"Expected tensor to have size at least {width} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
        return tg[:, :width]
    if tg.size < tl.sum():
        raise RuntimeError(f"Expected tensor to have size at least {int(tl.sum())} at dimension 0, but got size "
                           f"{tg.size} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
    out = np.zeros((n, width), np.int64)
    starts = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
    for i in range(n):
        out[i, :tl[i]] = tg[starts[i]:starts[i] + tl[i]]
    return out


def _extended(tm: np.ndarray, tl: np.ndarray, blank: int):
    """(labels (N, 2S+1), can-skip mask, valid mask): blank-interleaved labels; a state may come from two back
    when it is a label different from the label two back."""
    n, width = tm.shape
    ext = np.full((n, 2 * width + 1), blank, np.int64)
    ext[:, 1::2] = tm
    states = np.arange(2 * width + 1)
    skip = np.zeros_like(ext, dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid = states[None, :] <= 2 * tl[:, None]
    return ext, skip, valid


def _shift(alpha, k: int, neg):
    """alpha moved k states to the right, -inf coming in."""
    return cat([neg[:, :k], alpha[:, :-k]], 1) if alpha.shape[1] > k else neg[:, :alpha.shape[1]]


def _alpha_final(lp_ext, il: np.ndarray, skip, valid, init):
    """The forward variables after each sample's last time step, (N, 2S+1). Masks are folded in once: states
    past a target's end get -inf log-probabilities, a forbidden skip an additive -inf, and a finished sample's
    row is kept by one ``where`` per step (the per-step masks are views of one host-made tensor)."""
    dev = lp_ext.device
    lp_ext = lp_ext.where(valid, _NEG)
    skip_bias = creation.zeros(tuple(skip.shape), dtype=lp_ext.dtype, device=dev).masked_fill(skip.logical_not(),
                                                                                              _NEG)
    neg = creation.full(tuple(lp_ext.shape[1:]), _NEG, dtype=lp_ext.dtype, device=dev)
    alpha = lp_ext[0].where(init, _NEG)
    steps = int(il.max()) if il.size else 0
    running = creation.tensor((np.arange(steps)[:, None] < il[None, :])[:, :, None], device=dev)
    for t in range(1, steps):
        step = _lse(alpha, _shift(alpha, 1, neg), _shift(alpha, 2, neg) + skip_bias) + lp_ext[t]
        alpha = step if bool(il.min() > t) else step.where(running[t], alpha)
    return alpha


def _check(log_probs, blank: int, il: np.ndarray, tl: np.ndarray, n: int):
    T, C = log_probs.shape[0], log_probs.shape[-1]
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if il.size != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {il.size} and {n}")
    if tl.size != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {tl.size} and {n}")
    if il.size and il.max() > T:
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {int(il.max())} "
                           f"(while checking arguments for ctc_loss_cpu)")


def _reduce(nll, tl: np.ndarray, reduction: str):
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    lengths = creation.tensor(np.maximum(tl, 1), dtype=nll.dtype, device=nll.device)
    return (nll / lengths).mean()


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of ``log_probs`` (T, N, C) (or unbatched (T, C)) against ``targets`` (padded (N, S) or
    concatenated), with the per-sample lengths; ``reduction`` 'mean' divides by the target lengths first.

    >>> F.ctc_loss(logits.log_softmax(2), targets, [50] * 16, target_lengths)
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected a 2-D or 3-D log_probs, got {log_probs.dim()}-D")
    T, n, C = log_probs.shape
    il, tl = _host_ints(input_lengths, "input_lengths"), _host_ints(target_lengths, "target_lengths")
    _check(log_probs, blank, il, tl, n)
    tm = _targets_matrix(targets, tl, n)
    ext, skip, valid = _extended(tm, tl, blank)
    dev = log_probs.device
    index = creation.tensor(ext, dtype=D.int64, device=dev).unsqueeze(0).expand(T, n, ext.shape[1])
    lp_ext = log_probs.gather(2, index)
    init = creation.tensor(np.arange(ext.shape[1]) < 2, device=dev)
    to_dev = lambda a: creation.tensor(a, device=dev)  # noqa: E731
    alpha = _alpha_final(lp_ext, il, to_dev(skip), to_dev(valid), init)
    ends = creation.tensor(np.stack([2 * tl, np.maximum(2 * tl - 1, 0)], 1), dtype=D.int64, device=dev)
    last = alpha.gather(1, ends).where(to_dev(np.stack([tl >= 0, tl > 0], 1)), _NEG)
    nll = -_lse(last[:, 0], last[:, 1])
    steps = to_dev((np.arange(T)[:, None] < il[None, :])[:, :, None])
    mass = log_probs.exp().where(steps, 0.0).sum((0, 2))
    nll = nll + (mass - mass.detach())  # PyTorch's gradient formula (see the module docstring); value unchanged
    if zero_infinity:
        nll = nll.where(nll != float("inf"), 0.0)
    loss = _reduce(nll, tl, reduction)
    return loss.squeeze(0) if unbatched and reduction == "none" else loss
