"""Every example runs as a user runs it, in its ``--smoke`` mode (seconds each), and learns.

Each script exits 1 when its run did not learn (its final loss or accuracy misses the bar it states), so
exit status 0 is the first check; the table below adds what each one must print on top of that. Runs on
cpu and on the first usable OpenCL device only, to bound the run time.
"""
from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEVICES

import clgrad
from clgrad.backends.opencl import runtime

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LOSSES = re.compile(r"initial loss (\S+), final loss (\S+)")


def losses_fall(count: int = 1):
    """The run printed ``count`` "initial loss X, final loss Y" lines, and every Y is below its X."""
    def check(out: str) -> None:
        pairs = [(float(a), float(b)) for a, b in LOSSES.findall(out)]
        assert len(pairs) == count, out
        assert all(final < initial for initial, final in pairs), pairs
    return check


def accuracy_above(pattern: str, bar: float):
    """The accuracy captured by ``pattern`` (its first group) beats ``bar``; 10 classes, so chance is 0.1."""
    def check(out: str) -> None:
        found = re.search(pattern, out)
        assert found, out
        assert float(found.group(1)) > bar, found.group(0)
    return check


def prints(text: str, times: int | None = None):
    """``text`` is in the output (exactly ``times`` times, when given)."""
    def check(out: str) -> None:
        assert (text in out) if times is None else out.count(text) == times, out
    return check


def mnist_loss_below_chance(out: str) -> None:
    """After 20 batches the test loss is below that of a uniform guess over the 10 classes."""
    found = re.search(r"Test set: average loss (\S+),", out)
    assert found and float(found.group(1)) < math.log(10), out


GRADCHECKS = 4  # custom_function.py checks P3 (and its double backward), Exp and Clamp

# script -> the checks its smoke run's output must pass (besides exit status 0)
SMOKE = {
    "two_layer_net_numpy.py": [losses_fall()],
    "two_layer_net_tensor.py": [losses_fall()],
    "two_layer_net_autograd.py": [losses_fall()],
    "two_layer_net_custom_function.py": [losses_fall()],
    "two_layer_net_nn.py": [losses_fall()],
    "two_layer_net_optim.py": [losses_fall()],
    "two_layer_net_module.py": [losses_fall()],
    "dynamic_net.py": [losses_fall()],
    "quickstart.py": [prints("matmul + relu matches numpy"), prints("\nok\n")],
    "custom_function.py": [losses_fall(), prints("in float64: ok", times=GRADCHECKS)],
    "rnn.py": [losses_fall(2), prints("sample:\nShall I")],
    "blitz.py": [losses_fall(), accuracy_above(r"on the \d+ test images: (\S+) %", 30.0),
                 prints("x.grad = tensor([[4.5000, 4.5000]")],
    "mnist.py": [accuracy_above(r"accuracy \d+/\d+ \((\S+)\)", 0.15), mnist_loss_below_chance],
}


@pytest.fixture
def example_device(device):
    """cpu, or the first usable OpenCL device the ``device`` fixture selects; the others are skipped."""
    opencl = [p.values[0] for p in DEVICES if p.values[0] != "cpu"]
    usable = [name for name in opencl if runtime.get(int(name.split(":")[1])).usable]
    if device != "cpu" and device != usable[0]:
        pytest.skip("examples run on the first usable OpenCL device only")
    return device


@functools.cache
def fashion_mnist_missing() -> str | None:
    try:
        clgrad.datasets.FashionMNIST(train=False)
    except (RuntimeError, OSError) as e:
        return str(e)
    return None


def run_example(script: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    # PYTHONPATH: the examples import clgrad from this checkout. One BLAS thread: the examples' matrices are
    # small, and on a busy machine (tests in parallel) OpenBLAS threads made small matmuls up to 30x slower.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)


def test_every_example_has_a_smoke_test():
    assert sorted(SMOKE) == sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_example_smoke(script, example_device, tmp_path):
    device = example_device
    if script.endswith("numpy.py") and device != "cpu":
        pytest.skip("numpy only runs on the cpu")
    if script == "mnist.py" and fashion_mnist_missing():
        pytest.skip(f"Fashion-MNIST is not installed: {fashion_mnist_missing()}")
    # cwd: mnist.py writes its checkpoints to ./checkpoints
    proc = run_example(script, "--smoke", "--device", device, cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for check in SMOKE[script]:
        check(out)


def test_custom_function_gradchecks_on_cpu_without_fp64(monkeypatch, capsys):
    """A device without fp64 cannot run float64 central differences: the example says so and uses the cpu."""
    if not clgrad.opencl.is_available():
        pytest.skip("needs an OpenCL device")
    custom_function = import_example("custom_function")
    monkeypatch.setattr(clgrad.opencl, "get_device_properties", lambda device: SimpleNamespace(fp64=False))
    custom_function.check_gradients(clgrad.device("opencl"))
    out = capsys.readouterr().out
    assert "has no fp64: gradcheck runs on the cpu instead" in out
    assert out.count("on cpu in float64: ok") == GRADCHECKS


def import_example(name: str):
    sys.path.insert(0, str(EXAMPLES))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(EXAMPLES))


def test_autograd_matches_torch(example_device):
    """Same start, same steps: clgrad's loss curve on each device follows PyTorch's on the cpu."""
    torch = pytest.importorskip("torch")
    train = import_example("two_layer_net_autograd").train
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(shape).astype(np.float32) for shape in [(64, 1000), (64, 10), (1000, 100), (100, 10)]]
    ours = train(clgrad, clgrad.device(example_device), 60, 0, init=init)
    theirs = train(torch, "cpu", 60, 0, init=init)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)
