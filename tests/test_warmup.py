"""clgrad.warmup: one training step and one evaluation pass per example network, the CLI and the background
thread (the kernels they build are the same ones the networks' tests build, so this adds little time)."""
from __future__ import annotations

import pytest

import clgrad
from clgrad import warmup

logged: list = []


def test_warm_two_layer_builds_and_runs(device):
    if device == "cpu":
        pytest.skip("warm-up builds OpenCL kernels")
    seconds = warmup.warmup(device, ["two_layer"], log=lambda name, s: logged.append((name, s)))
    assert list(seconds) == ["two_layer"] and seconds["two_layer"] > 0
    assert logged == [("two_layer", seconds["two_layer"])]


def test_unknown_network_is_rejected():
    with pytest.raises(ValueError, match="unknown network 'vgg'"):
        warmup.warmup("opencl", ["vgg"])


def test_every_network_is_defined():
    nets = warmup._networks("cpu")
    assert set(nets) == set(warmup.NETWORKS)
    for model, opt, shape, _ in nets.values():
        assert isinstance(model, clgrad.nn.Module) and opt in ("sgd", "adam") and len(shape) >= 2


def test_cli(device, capsys):
    if device == "cpu":
        pytest.skip("warm-up builds OpenCL kernels")
    assert warmup.main(["--device", device, "--networks", "two_layer"]) == 0
    out = capsys.readouterr().out
    assert "two_layer" in out and "built in" in out


def test_background_thread(device):
    if device == "cpu":
        pytest.skip("warm-up builds OpenCL kernels")
    thread = warmup.start_background(device, ["two_layer"])
    thread.join(120)
    assert not thread.is_alive()
