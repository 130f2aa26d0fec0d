"""Optimizer steps on ~1M parameters: SGD with momentum and Adam, as one 1M tensor and as 100 tensors of 10K
(where per-parameter launch overhead shows).

    python bench/optim.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

numpy's column is the same update written with in-place numpy ops.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, count, rand  # noqa: E402

import clgrad  # noqa: E402


def np_sgd(params, grads, lr=0.01, momentum=0.9):
    bufs = [np.zeros_like(p) for p in params]

    def step():
        for p, g, buf in zip(params, grads, bufs):
            buf *= momentum
            buf += g
            p -= lr * buf

    return step


def np_adam(params, grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    ms, vs, t = [np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params], [0]

    def step():
        t[0] += 1
        c1, c2 = 1 - b1 ** t[0], 1 - b2 ** t[0]
        for p, g, m, v in zip(params, grads, ms, vs):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= (lr / c1) * m / (np.sqrt(v / c2) + eps)

    return step


OPTIMIZERS = {
    "SGD(momentum=0.9)": (lambda lib, params: lib.optim.SGD(params, lr=0.01, momentum=0.9), np_sgd),
    "Adam": (lambda lib, params: lib.optim.Adam(params, lr=1e-3), np_adam),
}


def lib_step(lib, arrays, grads, factory, **where):
    """``optimizer.step`` of ``lib`` (clgrad or torch) on parameters with fixed gradients."""
    params = []
    for a, g in zip(arrays, grads):
        p = lib.tensor(a, requires_grad=True, **where)
        p.grad = lib.tensor(g, **where)
        params.append(p)
    return factory(lib, params).step


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    for label, (factory, np_factory) in OPTIMIZERS.items():
        for tensors, size in b.pick(((1, 4096), (10, 400)), ((1, 1 << 20), (100, 10_000)), ((1, 1 << 20), (100, 10_000))):
            name = f"{label} step, {tensors} x {count(size)} params"
            if not b.wants(name):
                continue
            arrays = [rand(size, seed=i) for i in range(tensors)]
            grads = [rand(size, seed=1000 + i) for i in range(tensors)]
            times = b.measure(clgrad=lib_step(clgrad, arrays, grads, factory, device=b.device),
                              numpy=np_factory([a.copy() for a in arrays], grads),
                              torch=b.torch and lib_step(b.torch, arrays, grads, factory))
            b.add(name, times)
    b.finish()
    return b


if __name__ == "__main__":
    main()
