"""GEMM tile autotuning: measured per device on request, stored on disk, used by later products; untuned devices
and damaged files fall back to the tables' defaults. Every choice still computes correct products."""
from __future__ import annotations

import json

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import autotune, matmul, runtime


@pytest.fixture
def cl_dev(device, tmp_path, monkeypatch):
    if device == "cpu":
        pytest.skip("tiling tables are an OpenCL matter")
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CLGRAD_NO_CACHE", raising=False)
    monkeypatch.setattr(autotune, "_tuned", None)
    yield runtime.get(int(device.split(":")[1]))
    autotune._tuned = None  # the next test reads its own file


def test_autotune_stores_and_uses_its_choice(cl_dev, tmp_path):
    table = "cpu_short" if cl_dev.rank >= 2 else "gpu"
    default = matmul.tiling(cl_dev, "float", short=True)
    chosen = autotune.autotune(f"opencl:{cl_dev.index}", tables=[table], repeats=1, sizes={table: (8, 64, 96)})
    tiling, seconds = chosen[table]
    assert seconds > 0 and tiling in matmul.TILINGS[table] + autotune.EXTRA.get(table, ())
    saved = json.loads((tmp_path / "tuning.json").read_text())
    assert saved[autotune.identity(cl_dev)][f"{table}/float"] == list(tiling)
    autotune._tuned = None  # a new process reads the file
    assert matmul.tiling(cl_dev, "float", short=True) == (tiling if table == "cpu_short" else default)
    a, b = np.random.default_rng(0).standard_normal((2, 8, 70)).astype(np.float32)[0], np.ones((70, 33), np.float32)
    out = clgrad.tensor(a, device=f"opencl:{cl_dev.index}") @ clgrad.tensor(b, device=f"opencl:{cl_dev.index}")
    np.testing.assert_allclose(out.cpu().numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_untuned_and_damaged_files_use_the_defaults(cl_dev, tmp_path):
    first = matmul.TILINGS["cpu" if cl_dev.rank >= 2 else "gpu"][0]
    assert matmul.tiling(cl_dev, "float") == first
    (tmp_path / "tuning.json").write_text("{not json")
    autotune._tuned = None
    assert matmul.tiling(cl_dev, "float") == first
    (tmp_path / "tuning.json").write_text(json.dumps({autotune.identity(cl_dev): {"cpu/float": [0, "x"]}}))
    autotune._tuned = None
    assert matmul.tiling(cl_dev, "float") == first
