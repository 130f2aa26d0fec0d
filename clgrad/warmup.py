"""Pre-build the kernels of the example networks into the on-disk caches, so that a later process starts warm.

    clgrad-warmup [--device opencl:N] [--networks mnist,rnn,two_layer,lstm,resnet_block]
    python -m clgrad.warmup

A cold process pays the OpenCL compiler for every kernel it launches first (on PoCL: a front end per program, then
code generation per kernel and work-group size, 0.05-3 s each, one after another); that is most of a cold first
MNIST step. Each network here runs one training step (forward, backward, optimizer) and one evaluation forward pass
with the shapes and batch sizes of ``examples/`` and ``bench/train.py``, so the exact kernel specializations those
programs use land in PoCL's cache (``POCL_CACHE_DIR``) and clgrad's (``CLGRAD_CACHE_DIR``, other platforms).
``start_background()`` does the same in a daemon thread (``CLGRAD_WARMUP=background`` starts it on import; off by
default: it competes with the program for the cores and the compiler).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F


class _MnistNet(nn.Module):
    """examples/mnist.py's Net (classic=True)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 10, kernel_size=5), nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop, self.fc1, self.fc2 = nn.Dropout2d(0.5), nn.Linear(320, 50), nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = F.relu(self.fc1(x.view(-1, 320)))
        return F.log_softmax(self.fc2(F.dropout(x, training=self.training)), dim=1)


class _Block(nn.Module):
    """A ResNet basic block (bench/train.py): conv3x3-BN-ReLU-conv3x3-BN, identity shortcut, ReLU."""

    def __init__(self, ch=64):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)
        self.conv2, self.bn2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)

    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + x)


class _Recurrent(nn.Module):
    """bench/train.py's recurrent step: an RNN or LSTM of 128 over 32 features, a linear head on the last step."""

    def __init__(self, cell: str):
        super().__init__()
        self.rnn, self.head = getattr(nn, cell)(32, 128), nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0][-1])


def _data(shape, device, seed=0):
    return clgrad.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), device=device)


def _labels(n, device):
    return clgrad.tensor(np.arange(n) % 10, device=device)


def _networks(device) -> dict:
    """name -> (model, optimizer, input, loss of the output)."""
    mse = nn.MSELoss(reduction="sum")
    two = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
    found = {
        "mnist": (_MnistNet(), "sgd", (64, 1, 28, 28), lambda out: F.nll_loss(out, _labels(64, device))),
        "rnn": (_Recurrent("RNN"), "sgd", (50, 32, 32), lambda out: F.cross_entropy(out, _labels(32, device))),
        "lstm": (_Recurrent("LSTM"), "sgd", (50, 32, 32), lambda out: F.cross_entropy(out, _labels(32, device))),
        "two_layer": (two, "adam", (64, 1000), lambda out: mse(out, _data((64, 10), device, 1))),
        "resnet_block": (_Block(), "sgd", (32, 64, 16, 16), lambda out: out.mean()),
    }
    return found


NETWORKS = ("mnist", "rnn", "lstm", "two_layer", "resnet_block")


def warm(network: str, device=None) -> float:
    """One training step and one evaluation pass of ``network`` on ``device``; returns the seconds it took."""
    device = device or "opencl"  # the default OpenCL device
    start = time.perf_counter()
    model, opt_name, shape, loss_fn = _networks(device)[network]
    model = model.to(device)
    params = list(model.parameters())
    opt = clgrad.optim.SGD(params, lr=0.01, momentum=0.5) if opt_name == "sgd" else clgrad.optim.Adam(params, lr=1e-4)
    x = _data(shape, device)
    opt.zero_grad()
    loss_fn(model(x)).backward()
    opt.step()
    model.eval()
    with clgrad.no_grad():
        model(x)
    clgrad.opencl.synchronize()
    return time.perf_counter() - start


def warmup(device=None, networks=NETWORKS, log=None) -> dict:
    """Build the kernels of ``networks`` on ``device`` (default: clgrad's default OpenCL device); returns the seconds
    each took. ``log(name, seconds)`` is called after each."""
    times = {}
    for name in networks:
        if name not in NETWORKS:
            raise ValueError(f"unknown network {name!r}: expected one of {', '.join(NETWORKS)}")
        times[name] = warm(name, device)
        if log is not None:
            log(name, times[name])
    return times


def start_background(device=None, networks=NETWORKS) -> threading.Thread:
    """``warmup`` in a daemon thread (errors are dropped: a failed warm-up only leaves the caches cold)."""

    def run():
        try:
            warmup(device, networks)
        except Exception:  # noqa: BLE001 - best effort by design
            pass

    thread = threading.Thread(target=run, name="clgrad-warmup", daemon=True)
    thread.start()
    return thread


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="clgrad-warmup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="an OpenCL device, e.g. opencl:2 (default: clgrad's choice)")
    parser.add_argument("--networks", default=",".join(NETWORKS), help=f"comma-separated, of {', '.join(NETWORKS)}")
    args = parser.parse_args(argv)
    if not clgrad.opencl.is_available():
        print("clgrad-warmup: no OpenCL device", file=sys.stderr)
        return 1
    start = time.perf_counter()
    names = [n.strip() for n in args.networks.split(",") if n.strip()]
    warmup(args.device, names, log=lambda n, s: print(f"{n:14s} {s:6.2f} s", flush=True))
    cache = os.environ.get("POCL_CACHE_DIR", "PoCL's default cache")
    print(f"built in {time.perf_counter() - start:.1f} s (kernel caches: {cache}; clgrad's: CLGRAD_CACHE_DIR)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
