"""The tutorial examples run as a user runs them, and learn: each exits 0 only when its final loss is below
10% of its initial loss. Runs on cpu and on the first usable OpenCL device only, to bound the run time."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import DEVICES

import clgrad
from clgrad.backends.opencl import runtime

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# script -> steps: enough to fall below 10% of the initial loss; dynamic_net's random depth makes it noisier.
SCRIPTS = {
    "two_layer_net_numpy.py": 60,
    "two_layer_net_tensor.py": 60,
    "two_layer_net_autograd.py": 60,
    "two_layer_net_custom_function.py": 60,
    "two_layer_net_nn.py": 60,
    "two_layer_net_optim.py": 60,
    "two_layer_net_module.py": 60,
    "dynamic_net.py": 100,
}

FINAL = re.compile(r"initial loss (\S+), final loss (\S+)")


@pytest.fixture
def example_device(device):
    """cpu, or the first usable OpenCL device the ``device`` fixture selects; the others are skipped."""
    opencl = [p.values[0] for p in DEVICES if p.values[0] != "cpu"]
    usable = [name for name in opencl if runtime.get(int(name.split(":")[1])).usable]
    if device != "cpu" and device != usable[0]:
        pytest.skip("examples run on the first usable OpenCL device only")
    return device


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_example_learns(script, example_device):
    device = example_device
    if script.endswith("numpy.py") and device != "cpu":
        pytest.skip("numpy only runs on the cpu")
    cmd = [sys.executable, str(EXAMPLES / script), "--steps", str(SCRIPTS[script]), "--device", device]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    initial, final = map(float, FINAL.search(proc.stdout).groups())
    assert final < initial


def test_autograd_matches_torch(example_device):
    """Same start, same steps: clgrad's loss curve on each device follows PyTorch's on the cpu."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(EXAMPLES))
    try:
        from two_layer_net_autograd import train
    finally:
        sys.path.remove(str(EXAMPLES))
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(shape).astype(np.float32) for shape in [(64, 1000), (64, 10), (1000, 100), (100, 10)]]
    ours = train(clgrad, clgrad.device(example_device), 60, 0, init=init)
    theirs = train(torch, "cpu", 60, 0, init=init)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)
