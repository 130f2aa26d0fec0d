"""Deferred device-side errors (backends/opencl/pending.py): issue 19 items 7 and 9.

A failed check belongs to the thread that launched the op and is raised at that thread's next host read or
synchronize; every failed check of a sync is named in the one exception raised; checks never looked at are printed
at interpreter exit. Integer division by zero raises PyTorch's ``RuntimeError('ZeroDivisionError')`` (at the call on
cpu, at the next sync on OpenCL) and leaves the defined result 0.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.backends.opencl import pending, runtime
from tests.helpers import make

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = re.escape("Target 7 is out of bounds.")


def _opencl(device):
    if device == "cpu":
        pytest.skip("deferred errors are an OpenCL matter: cpu raises at the call")


def _logits(device):
    return make(np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5), device)


def test_error_is_raised_in_the_launching_thread(device):
    """Thread B's bad target is raised at B's own read; the main thread's reads in between raise nothing."""
    _opencl(device)
    x = _logits(device)
    launched, release, seen = threading.Event(), threading.Event(), {}

    def worker():
        loss = F.cross_entropy(x, clgrad.tensor([1, 7, 2], device=device))
        launched.set()
        release.wait(60)
        try:
            loss.item()
            seen["b"] = "silent"
        except IndexError as exc:
            seen["b"] = str(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    launched.wait(60)
    clgrad.opencl.synchronize(device)  # the main thread's sync: B's error is not its own
    assert np.isfinite(F.cross_entropy(x, clgrad.tensor([1, 0, 2], device=device)).item())
    release.set()
    thread.join(60)
    assert seen["b"] == "Target 7 is out of bounds."


def test_every_failed_check_is_named_and_all_are_cleared(device):
    _opencl(device)
    x = _logits(device)
    first = F.nll_loss(x, clgrad.tensor([1, 7, 2], device=device))
    F.embedding(clgrad.tensor([0, 12], device=device), clgrad.ones(10, 2, device=device))
    with pytest.raises(IndexError, match=BAD) as info:
        first.item()
    message = str(info.value)
    assert "1 more deferred error" in message and "embedding: IndexError" in message and "12" in message
    assert first.detach().cpu().shape == ()  # reported once: a later read raises nothing


def test_unreported_errors_are_printed_at_exit():
    """A program that ends without a sync reports each failed check on stderr (it used to exit silently)."""
    devs = sorted((d for d in runtime.devices() if "pocl" in d.props.platform_version.lower() and d.usable),
                  key=lambda d: d.preference)
    if not devs:
        pytest.skip("no healthy PoCL device")
    code = f"""
        import clgrad, clgrad.nn.functional as F
        d = "opencl:{devs[0].index}"
        x = clgrad.zeros(3, 5, device=d)
        F.cross_entropy(x, clgrad.tensor([1, 7, 2], device=d))
        clgrad.tensor([3, 4], device=d) // clgrad.tensor([0, 1], device=d)
        print("done")
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "unreported deferred error" in ln]
    assert len(lines) == 2, proc.stderr
    assert "cross_entropy: IndexError: Target 7 is out of bounds." in lines[0]
    assert "floor_divide: IntegerDivisionByZero: ZeroDivisionError" in lines[1]


DIVISIONS = [
    ("floor_divide", lambda a, b: a // b),
    ("remainder", lambda a, b: a % b),
    ("fmod", clgrad.fmod),
    ("trunc", lambda a, b: clgrad.div(a, b, rounding_mode="trunc")),
    ("floor", lambda a, b: clgrad.div(a, b, rounding_mode="floor")),
    ("scalar", lambda a, b: a // 0),
]


@pytest.mark.parametrize("name,fn", DIVISIONS, ids=[n for n, _ in DIVISIONS])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_division_by_zero_raises(device, name, fn, dtype):
    a = make(np.array([7, 9, 3], dtype), device)
    b = make(np.array([2, 0, 1], dtype), device)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$") as info:
        fn(a, b).cpu()  # cpu: raised at the call; OpenCL: at the read
    assert isinstance(info.value, ZeroDivisionError)


def test_integer_division_by_zero_matches_torch_and_keeps_values_defined(device):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1, 2]) // torch.tensor([0, 1])
    if device == "cpu":
        return
    a, b = make(np.array([7, -7, 5], np.int32), device), make(np.array([0, 2, 0], np.int32), device)
    out = a // b
    with pytest.raises(ZeroDivisionError):
        clgrad.opencl.synchronize(device)
    assert out.tolist() == [0, -4, 0]  # the defined result, readable once the error is reported
    assert (a // make(np.array([1, 2, 3], np.int32), device)).tolist() == [7, -4, 1]  # later launches are fine
    assert (make(np.array([1.0, -1.0], np.float32), device) // 0).tolist() == [float("inf"), float("-inf")]


def test_slots_are_reused(device):
    """More checks than the error buffer has words: finished ones give their slot back, nothing is lost."""
    _opencl(device)
    a, b = make(np.array([4, 6], np.int32), device), make(np.array([2, 3], np.int32), device)
    for _ in range(3 * pending.SLOTS):
        out = a // b
    assert out.tolist() == [2, 2]
    a // make(np.array([2, 0], np.int32), device)
    with pytest.raises(ZeroDivisionError):
        out.tolist()
