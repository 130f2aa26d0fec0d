"""Determinism: the same seed on the same device gives a bit-identical training run, random state survives
``clgrad.save``/``clgrad.load``, and a run SIGKILLed mid-way and resumed from its last checkpoint ends with exactly the
weights of an uninterrupted run (tests/resume_script.py is the run: dropout, a shuffled DataLoader, Adam, StepLR)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad
from tests import resume_script

SCRIPT = Path(__file__).with_name("resume_script.py")
ROOT = SCRIPT.parent.parent


def _bits(state: dict) -> dict:
    """Each tensor's raw bytes: equal bits, not merely equal values (so -0.0 != 0.0 and NaN payloads count)."""
    return {k: np.ascontiguousarray(v.detach().cpu().numpy()).view(np.uint8).tobytes() for k, v in state.items()}


def _assert_bit_identical(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    differ = [k for k, v in _bits(a).items() if v != _bits(b)[k]]
    assert not differ, f"tensors differ in their bits: {differ}"


def test_same_seed_same_device_is_bit_identical(device, tmp_path):
    states = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        args = resume_script.parse(["--device", device, "--dir", str(tmp_path / run), "--epochs", "2"])
        states.append(resume_script.run(args))
    _assert_bit_identical(*states)
    # and a different seed really changes the run (the comparison above is not vacuous)
    (tmp_path / "c").mkdir()
    other = resume_script.run(resume_script.parse(["--device", device, "--dir", str(tmp_path / "c"), "--epochs", "2",
                                                   "--seed", "8"]))
    assert _bits(other) != _bits(states[0])


def test_rng_state_round_trips_through_a_checkpoint(device, tmp_path):
    clgrad.manual_seed(3)
    gen = clgrad.Generator().manual_seed(11)
    clgrad.rand(5, device=device)
    clgrad.save({"rng": clgrad.get_rng_state(), "gen": gen.get_state()}, tmp_path / "rng.safetensors")
    want = (clgrad.rand(7, device=device), clgrad.randn(3, generator=gen, device=device),
            clgrad.nn.functional.dropout(clgrad.ones(50, device=device), 0.5))
    clgrad.manual_seed(999)  # disturb both streams
    gen.manual_seed(0)
    ckpt = clgrad.load(tmp_path / "rng.safetensors", map_location=device)
    clgrad.set_rng_state(ckpt["rng"].cpu())  # generator states are host tensors, as in PyTorch
    gen.set_state(ckpt["gen"].cpu())
    got = (clgrad.rand(7, device=device), clgrad.randn(3, generator=gen, device=device),
           clgrad.nn.functional.dropout(clgrad.ones(50, device=device), 0.5))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.cpu().numpy(), w.cpu().numpy())


def test_rng_state_api():
    state = clgrad.get_rng_state()
    assert state.dtype is clgrad.uint8 and state.device.type == "cpu" and state.numel() == 16
    a = clgrad.rand(4)
    clgrad.set_rng_state(state)
    np.testing.assert_array_equal(clgrad.rand(4).numpy(), a.numpy())
    with pytest.raises(TypeError):
        clgrad.set_rng_state(clgrad.zeros(16))  # not uint8
    with pytest.raises(RuntimeError):
        clgrad.set_rng_state(clgrad.zeros(8, dtype=clgrad.uint8))  # wrong size
    g = clgrad.Generator().manual_seed(5)
    s = g.get_state()
    first = clgrad.rand(3, generator=g)
    assert g.set_state(s) is g
    np.testing.assert_array_equal(clgrad.rand(3, generator=g).numpy(), first.numpy())


def _script(device, folder, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return [sys.executable, str(SCRIPT), "--device", device, "--dir", str(folder), *extra], env


def _run(device, folder, *extra) -> str:
    cmd, env = _script(device, folder, *extra)
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _run_and_kill(device, folder, at_step: int, *extra) -> str:
    """Start the run and SIGKILL it as soon as it reports ``at_step`` (it is then in the next step or saving)."""
    cmd, env = _script(device, folder, *extra)
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if line.startswith(f"step {at_step} "):
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"the run ended by itself ({proc.returncode}): {proc.stderr.read()}"
    return "".join(seen)


@pytest.mark.parametrize("sampler", ["generator", "global"])
def test_killed_and_resumed_run_ends_bit_identical(device, tmp_path, sampler):
    full, cut = tmp_path / "full", tmp_path / "cut"
    full.mkdir()
    cut.mkdir()
    common = ("--sampler", sampler, "--save-interval", "4", "--step-delay", "0.02")
    out = _run(device, full, *common)
    total = int(out.strip().splitlines()[-1].split()[2])  # "done after N steps"
    kill_at = total // 2 + 1  # mid-epoch, between two checkpoints (6 batches an epoch, a checkpoint every 4 steps)
    _run_and_kill(device, cut, kill_at, *common)
    assert not (cut / resume_script.FINAL).exists()
    assert (cut / resume_script.CKPT).exists(), "no checkpoint was written before the kill"
    resumed = _run(device, cut, *common, "--resume")
    first = resumed.splitlines()[0]
    assert first.startswith("resumed from step "), first
    assert 0 < int(first.split()[3].rstrip(":")) < total
    assert resumed.strip().endswith(f"done after {total} steps")
    _assert_bit_identical(clgrad.load(cut / resume_script.FINAL), clgrad.load(full / resume_script.FINAL))


def test_every_header_length_loads():
    """Regression: a header whose length starts with the byte 0x80 (128, 384, ... bytes: one length in 32) was taken
    for a pickle and refused, so some checkpoints could not be loaded back."""
    import io

    lengths = set()
    for extra in range(300):
        buf = io.BytesIO()
        clgrad.save({"k" * (1 + extra): clgrad.zeros(2, dtype=clgrad.uint8)}, buf)
        lengths.add(int.from_bytes(buf.getvalue()[:8], "little") % 256)
        buf.seek(0)
        assert clgrad.load(buf)["k" * (1 + extra)].tolist() == [0, 0]
    assert 0x80 in lengths
