"""examples/mnist.py end to end on small generated IDX files: trains, checkpoints, resumes."""
from __future__ import annotations

import gzip
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import mnist  # noqa: E402


def _write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def data_dir(tmp_path):
    rng = np.random.default_rng(0)
    for split, n in (("train", 96), ("t10k", 64)):
        labels = rng.integers(0, 10, n)
        # images whose brightest column encodes the label, so a few steps can learn something
        images = rng.integers(0, 40, (n, 28, 28))
        images[np.arange(n), :, 4 + 2 * labels] = 255
        _write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        _write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
    return tmp_path


def test_mnist_trains_checkpoints_and_resumes(device, data_dir, tmp_path, capsys):
    if device.startswith("opencl") and device != f"opencl:{mnist.torch.opencl.current_device()}":
        pytest.skip("one OpenCL device is enough for the end-to-end example")
    ck = tmp_path / "ck"
    common = ["--data-dir", str(data_dir), "--device", device, "--batch-size", "16", "--test-batch-size", "32",
              "--checkpoint-dir", str(ck), "--log-interval", "1"]
    accuracy = mnist.main(common + ["--epochs", "1", "--save-interval", "2"])
    assert 0.0 <= accuracy <= 1.0
    assert (ck / "mnist.safetensors").exists()
    out = capsys.readouterr().out
    assert "Train epoch 1" in out and "Test set:" in out
    mnist.main(common + ["--epochs", "2", "--resume"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "epoch 2, batch 0" in out and "Train epoch 2" in out
