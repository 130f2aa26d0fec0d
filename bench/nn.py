"""NN ops at the MNIST net's shapes (batch 64): conv2d forward and forward+backward, max_pool2d, softmax,
log_softmax and cross-entropy; also the convs of PyTorch's MNIST example (1->32, 32->64 3x3) and of a ResNet basic
block (64->64 3x3, padding 1, batch 32 at 16x16: the implicit-GEMM path on CPU devices).

    python bench/nn.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

numpy has no conv2d: its column is a sliding-window ``tensordot`` (forward only). "fwd+bwd" cases run the forward
and ``backward`` with the gradients reset to None first, in clgrad and torch alike.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, rand, rng  # noqa: E402

import clgrad  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402


def np_conv2d(x, w, bias, pad=0):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    windows = sliding_window_view(x, w.shape[2:], axis=(2, 3))  # (N, C, OH, OW, kh, kw)
    return np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2) + bias[:, None, None]


def np_softmax(x, log=False):
    z = x - x.max(1, keepdims=True)
    if log:
        return z - np.log(np.exp(z).sum(1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def np_cross_entropy(x, target):
    return -np_softmax(x, log=True)[np.arange(len(target)), target].mean()


class Pair:
    """The same tensor in clgrad (``.c``) and torch (``.t``, None without torch), from one numpy array ``.n``;
    ``.cd``/``.td`` are detached views for forward-only timings."""

    def __init__(self, b: Bench, array, requires_grad=False):
        self.n = array
        self.c = clgrad.tensor(array, device=b.device, requires_grad=requires_grad)
        self.t = b.torch.tensor(array, requires_grad=requires_grad) if b.torch else None
        self.cd = self.c.detach()
        self.td = self.t.detach() if b.torch else None


def backward_fn(fn, leaves, grad):
    """One forward+backward: gradients reset to None, then ``fn(...).backward(grad)``."""

    def run():
        for leaf in leaves:
            leaf.grad = None
        fn(*leaves).backward(grad)

    return run


def conv_case(b: Bench, label: str, batch: int, cin: int, cout: int, hw: int, k: int = 5, pad: int = 0) -> None:
    T = b.torch
    TF = T.nn.functional if T else None
    shape = f"{batch}x{cin}x{hw}x{hw} * {cout}x{cin}x{k}x{k}" + (f" pad {pad}" if pad else "")
    x, w, bias = (Pair(b, rand(s, seed), True)
                  for s, seed in (((batch, cin, hw, hw), 1), ((cout, cin, k, k), 2), ((cout,), 3)))
    o = hw + 2 * pad - k + 1
    g = Pair(b, rand((batch, cout, o, o), 4))
    name = f"conv2d {label} fwd {shape}"
    if b.wants(name):
        b.add(name, b.measure(clgrad=lambda: F.conv2d(x.cd, w.cd, bias.cd, padding=pad),
                              numpy=lambda: np_conv2d(x.n, w.n, bias.n, pad),
                              torch=T and (lambda: TF.conv2d(x.td, w.td, bias.td, padding=pad))))
    name = f"conv2d {label} fwd+bwd {shape}"
    if b.wants(name):
        b.add(name, b.measure(clgrad=backward_fn(lambda *a: F.conv2d(*a, padding=pad), [x.c, w.c, bias.c], g.c),
                              torch=T and backward_fn(lambda *a: TF.conv2d(*a, padding=pad), [x.t, w.t, bias.t], g.t)))


def pool_case(b: Bench, batch: int) -> None:
    T = b.torch
    y = Pair(b, rand((batch, 10, 24, 24), 5))
    name = f"max_pool2d(2) fwd {batch}x10x24x24"
    if b.wants(name):
        b.add(name, b.measure(clgrad=lambda: F.max_pool2d(y.c, 2),
                              numpy=lambda: y.n.reshape(batch, 10, 12, 2, 12, 2).max((3, 5)),
                              torch=T and (lambda: T.nn.functional.max_pool2d(y.t, 2))))


def softmax_cases(b: Bench, rows: int, cols: int) -> None:
    T = b.torch
    TF = T.nn.functional if T else None
    x = Pair(b, rand((rows, cols), 6), True)
    target = rng(7).integers(0, cols, rows)
    ct = clgrad.tensor(target, device=b.device)
    tt = T.from_numpy(target) if T else None
    size = f"{rows}x{cols}"
    cases = [
        (f"softmax(dim=1) {size}", lambda: F.softmax(x.cd, 1), lambda: np_softmax(x.n),
         T and (lambda: TF.softmax(x.td, 1))),
        (f"log_softmax(dim=1) {size}", lambda: F.log_softmax(x.cd, 1), lambda: np_softmax(x.n, True),
         T and (lambda: TF.log_softmax(x.td, 1))),
        (f"cross_entropy fwd {size}", lambda: F.cross_entropy(x.cd, ct), lambda: np_cross_entropy(x.n, target),
         T and (lambda: TF.cross_entropy(x.td, tt))),
        (f"cross_entropy fwd+bwd {size}", backward_fn(lambda v: F.cross_entropy(v, ct), [x.c], None), None,
         T and backward_fn(lambda v: TF.cross_entropy(v, tt), [x.t], None)),
    ]
    for name, cfn, nfn, tfn in cases:
        if b.wants(name):
            b.add(name, b.measure(clgrad=cfn, numpy=nfn, torch=tfn or None))


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    batch = b.pick(4, 64, 64)
    conv_case(b, "conv1", batch, 1, 10, 28)
    conv_case(b, "conv2", batch, 10, 20, 12)
    conv_case(b, "example conv1", batch, 1, 32, 28, k=3)
    conv_case(b, "example conv2", batch, 32, 64, 26, k=3)
    conv_case(b, "resnet", b.pick(2, 32, 32), 64, 64, b.pick(8, 16, 16), k=3, pad=1)
    pool_case(b, batch)
    for rows, cols in b.pick(((4, 10),), ((64, 10), (1024, 1000)), ((64, 10), (4096, 1000))):
        softmax_cases(b, rows, cols)
    b.finish()
    return b


if __name__ == "__main__":
    main()
