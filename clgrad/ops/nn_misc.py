"""The smaller nn.functional ops, composed from clgrad ops: ``local_response_norm`` (and the CrossMapLRN2d form),
``instance_norm``, ``gumbel_softmax``, ``linear_cross_entropy``, and the torch-level functions op_db names:
``conv_tbc``, ``native_batch_norm``, ``_native_batch_norm_legit``, ``_batch_norm_with_update``, ``_chunk_cat``.
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import creation
from .conv import conv1d
from .joins import cat
from .linalg import matmul
from .losses import cross_entropy
from .nnops import softmax
from .norms import batch_norm
from .padding import pad

__all__ = ["conv_tbc", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update", "_chunk_cat",
           "instance_norm"]
FUNCTIONAL = ["local_response_norm", "instance_norm", "gumbel_softmax", "linear_cross_entropy"]


def _channel_window_sum(sq, before: int, after: int):
    """Per channel (dim 1) c, the sum of sq over channels c - before .. c + after (zero outside)."""
    c = sq.shape[1]
    spatial = sq.dim() - 2
    padded = pad(sq, (0, 0) * spatial + (before, after))
    total = None
    for j in range(before + after + 1):
        part = padded.narrow(1, j, c)
        total = part if total is None else total + part
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalize each channel by its neighbours across channels:
    ``x / (k + alpha * mean over the size-window of x^2) ** beta``.

    >>> F.local_response_norm(x, 2).shape == x.shape
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    div = _channel_window_sum(input * input, size // 2, (size - 1) // 2) * (1.0 / size)
    return input / (div * alpha + k) ** beta


def cross_map_lrn2d(input, size: int, alpha=1e-4, beta=0.75, k=1.0):
    """nn.CrossMapLRN2d's forward: ``x * (k + alpha / size * sum of x^2 over the channel window) ** -beta``, the
    window reaching ``half = int((size - 1) / 2)`` channels each side (Lua Torch's SpatialCrossMapLRN).

    PyTorch's running-window loop never subtracts channel 0 (it subtracts channel c - half - 1 only for
    c > half + 1), so channels past the first window also count channel 0; this keeps that quirk, so the values
    are PyTorch's (its hand-written backward differentiates the window without it)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    half = int((size - 1) / 2 + 1) - 1
    sq = input * input
    total = _channel_window_sum(sq, half, half)
    if input.shape[1] > half + 1:
        far = creation.tensor([c > half for c in range(input.shape[1])], device=input.device).reshape(1, -1, 1, 1)
        total = total + sq.narrow(1, 0, 1) * far
    scale = total * (alpha / size) + k
    return input * scale ** -beta


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each sample's channels over their own spatial positions: a batch norm of the input viewed as one
    sample of N*C channels; running statistics, if given, are updated with the mean over the N samples."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    size = list(input.shape)
    if math.prod(size[2:]) <= 1 and use_input_stats:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    n, c = size[0], size[1]
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)

    def per_sample(t):
        return t.repeat(n) if t is not None else None

    rm, rv = per_sample(running_mean), per_sample(running_var)
    out = batch_norm(input.reshape(1, n * c, *size[2:]), rm, rv, per_sample(weight), per_sample(bias), True,
                     momentum, eps)
    with no_grad():
        if rm is not None:
            running_mean.copy_(rm.view(n, c).mean(0))
        if rv is not None:
            running_var.copy_(rv.view(n, c).mean(0))
    return out.reshape(size)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with g ~ Gumbel(0, 1); with
    ``hard``, the one-hot of its argmax whose gradient is the soft sample's (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = creation.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; linear_weight is (C, *out, in)
    for a K-dimensional loss. ``options`` (PyTorch's chunking of the classes, a memory saving) is accepted and
    the logits are computed whole."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    logits = matmul(input, linear_weight.reshape(-1, in_features).t()).reshape(logits_shape)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over (time, batch, channel) input with a (kernel, in, out) weight (``torch.conv_tbc``)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _saved_stats(input, training: bool, eps: float):
    """(save_mean, save_invstd) of a batch norm: the batch's per-channel mean and 1/sqrt(biased var + eps), or
    empty tensors in eval; PyTorch's backward ignores their gradients, so they are constants."""
    if not training:
        empty = creation.empty((0,), dtype=input.dtype, device=input.device)
        return empty, empty.clone()
    with no_grad():
        dims = (0,) + tuple(range(2, input.dim()))
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        return mean, (var + eps).rsqrt()


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``torch.native_batch_norm``: (output, save_mean, save_invstd)."""
    stats = _saved_stats(input, training, eps)
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return (out, *stats)


def _native_batch_norm_legit(input, weight, bias, *args):
    """``torch._native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps)``,
    or without the running statistics ``(input, weight, bias, training, momentum, eps)``."""
    if len(args) == 3:
        running_mean = running_var = None
        training, momentum, eps = args
    elif len(args) == 5:
        running_mean, running_var, training, momentum, eps = args
    else:
        raise TypeError("_native_batch_norm_legit() takes (input, weight, bias, [running_mean, running_var,] "
                        "training, momentum, eps)")
    return native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """``aten._batch_norm_with_update``: a training batch norm that updates the running statistics;
    (output, save_mean, save_invstd, reserve) with an empty uint8 reserve."""
    out, mean, invstd = native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, mean, invstd, creation.empty((0,), dtype=D.uint8, device=input.device)


def _chunk_cat(tensors, dim, num_chunks, *, out=None):
    """Each tensor split into ``num_chunks`` chunks along ``dim`` (padded with zeros to equal chunks), flattened
    after dim, and the chunks of all tensors concatenated chunk by chunk: (*leading, num_chunks, sum of sizes)."""
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    ref = tensors[0]
    dim = dim + ref.dim() if dim < 0 else dim
    parts = []
    for t in tensors:
        if t.dim() <= dim or tuple(t.shape[:dim]) != tuple(ref.shape[:dim]):
            raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors")
        size = t.shape[dim]
        chunk = -(-size // num_chunks)
        if chunk * num_chunks != size:
            widths = [0, 0] * (t.dim() - dim - 1) + [0, chunk * num_chunks - size]
            t = pad(t, tuple(widths))
        parts.append(t.reshape(*t.shape[:dim], num_chunks, -1))
    result = cat(parts, dim + 1)
    if out is not None:
        out.copy_(result)
        return out
    return result
