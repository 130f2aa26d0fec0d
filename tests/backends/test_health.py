"""The device health check (backends/opencl/health.py), device choice by verdict, and a first run that talks:
no compiler output, a notice for slow waits, CLGRAD_LAUNCH_BLOCKING."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import clgrad
from clgrad.backends.opencl import health, runtime
from clgrad.device import resolve

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pocl():
    """A healthy PoCL device (the checks that run real kernels need a fast one), or skip."""
    found = [d for d in runtime.devices() if "pocl" in d.props.platform_version.lower() and d.usable]
    if not found:
        pytest.skip("no healthy PoCL device")
    return sorted(found, key=lambda d: d.preference)[0]


# ---- reading what the child printed --------------------------------------------------------------------------


JUDGE = [
    # (child's output, return code, hung, expected ok, expected words in the reason)
    ("case elementwise\ncase reduction\nok\n", 0, False, True, ""),
    ("case elementwise\n127 warnings generated.\nLLVM ERROR: Do not know how to split this operator's operand!\n",
     -6, False, False, "crashed (SIGABRT) during 'elementwise': LLVM ERROR: Do not know how to split"),
    ("case elementwise\ncase training step (program group)\n", None, True, False,
     "hung: no result after 300 s during 'training step (program group)'"),
    ("case matmul tile\nfail matmul tile: wrong results in matmul tile (output 0): 3 of 9100 values differ\n", 1,
     False, False, "wrong results in matmul tile (output 0): 3 of 9100 values differ"),
    ("case elementwise\nfail elementwise: RuntimeError: clCreateKernel failed: INVALID_KERNEL_NAME\n", 1, False,
     False, "elementwise: RuntimeError: clCreateKernel failed: INVALID_KERNEL_NAME"),
    ("Traceback (most recent call last):\nImportError: libOpenCL.so.1: cannot open shared object file\n", 1, False,
     False, "exited with status 1 before the first case: ImportError: libOpenCL.so.1"),
    ("case half loads/stores\n", -11, False, False, "crashed (SIGSEGV) during 'half loads/stores'"),
    # a build failure reports the compiler's diagnostic line (the child trusts its devices: no probe verdict wraps it)
    ("case elementwise\nfail elementwise: RuntimeError: error: unknown target CPU 'generic'\n", 1, False, False,
     "elementwise: RuntimeError: error: unknown target CPU 'generic'"),
]


@pytest.mark.parametrize("text, code, hung, ok, reason", JUDGE)
def test_judge(text, code, hung, ok, reason):
    verdict = health._judge(text, code, hung, 300, 1.0)
    assert verdict.ok == ok
    assert reason in verdict.reason
    assert str(verdict) == ("healthy" if ok else f"unusable: {verdict.reason}")


def test_key_covers_driver_and_host():
    """The verdict's key changes with anything that changes what the compiler does."""
    props = _pocl().props
    import dataclasses

    base = health.key(props)
    assert base == health.key(props)
    for field in ("platform", "platform_version", "name", "driver_version"):
        assert health.key(dataclasses.replace(props, **{field: getattr(props, field) + "x"})) != base
    assert health._host_cpu().strip()


# ---- the child: a fake probe for every way a device can fail --------------------------------------------------

FAKE_PROBE = """
import os, sys, time
mode = os.environ["FAKE_PROBE_MODE"]
print("case elementwise", flush=True)
if mode == "abort":
    print("LLVM ERROR: Do not know how to split this operator's operand!", file=sys.stderr, flush=True)
    os.abort()
if mode == "hang":
    time.sleep(600)
if mode == "wrong":
    print("fail elementwise: wrong results in elementwise (output 0): 5 of 34023 values differ", flush=True)
    sys.exit(1)
print("127 warnings generated.", file=sys.stderr)
print("ok", flush=True)
"""


@pytest.fixture
def fake_probe(tmp_path, monkeypatch):
    """Run the check with a fake probe module, verdicts in a fresh folder; restores the device's verdict."""
    (tmp_path / "fake_probe_mod.py").write_text(FAKE_PROBE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(health, "PROBE", "fake_probe_mod")
    dev = _pocl()
    saved = dev.health
    yield dev
    dev.health = saved


@pytest.mark.parametrize("mode, ok, words", [
    ("ok", True, ""),
    ("abort", False, "crashed (SIGABRT) during 'elementwise': LLVM ERROR: Do not know how to split"),
    ("hang", False, "hung: no result after 3 s during 'elementwise'"),
    ("wrong", False, "wrong results in elementwise (output 0): 5 of 34023 values differ"),
])
def test_check_in_child(fake_probe, monkeypatch, capfd, mode, ok, words):
    monkeypatch.setenv("FAKE_PROBE_MODE", mode)
    monkeypatch.setenv("CLGRAD_HEALTH_TIMEOUT", "3")
    start = time.monotonic()
    verdict = health.check([fake_probe], force=True)[fake_probe.index]
    assert time.monotonic() - start < 30  # a hung child is killed at its limit
    assert verdict.ok == ok and words in verdict.reason and verdict.checked == "now"
    assert fake_probe.health is verdict
    err = capfd.readouterr().err
    assert f"clgrad: checking {fake_probe.describe()}" in err
    assert "warnings generated" not in err  # the child's compiler chatter stays in the child
    assert (f"is unusable: {verdict.reason}" in err) == (not ok)
    # cached: the next process (here: the next call) reads the verdict and runs nothing
    monkeypatch.setenv("FAKE_PROBE_MODE", "abort" if ok else "ok")
    again = health.check([fake_probe])[fake_probe.index]
    assert (again.ok, again.reason, again.checked) == (ok, verdict.reason, "cached")
    record = json.loads((health.folder() / f"{health.key(fake_probe.props)}.json").read_text())
    assert record["ok"] == ok and record["device"] == fake_probe.describe()


def test_broken_verdict_file_is_rechecked(fake_probe, monkeypatch):
    monkeypatch.setenv("FAKE_PROBE_MODE", "ok")
    path = health.folder() / f"{health.key(fake_probe.props)}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"ok": tr')  # half-written by a process killed mid-write
    assert health.check([fake_probe])[fake_probe.index].checked == "now"


def test_concurrent_processes_check_once(fake_probe, tmp_path, monkeypatch):
    """Two processes needing one device's verdict at once (pytest workers): one runs the child, the other waits
    on the lock and reads its verdict."""
    monkeypatch.setenv("FAKE_PROBE_MODE", "ok")
    code = textwrap.dedent(f"""
        import clgrad
        from clgrad.backends.opencl import health, runtime
        health.PROBE = "fake_probe_mod"
        dev = runtime.get({fake_probe.index})
        print(health.check([dev])[dev.index].checked)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              text=True) for _ in range(2)]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["cached", "now"]


# ---- choosing devices by verdict ------------------------------------------------------------------------------


@pytest.fixture
def broken_device():
    """A real device given a failed verdict for the length of a test."""
    dev = _pocl()
    saved = dev.health
    dev.health = health.Verdict(False, "crashed (SIGABRT) during 'elementwise': LLVM ERROR: boom")
    yield dev
    dev.health = saved


def test_naming_a_broken_device_raises(broken_device, monkeypatch):
    name = f"opencl:{broken_device.index}"
    with pytest.raises(RuntimeError) as info:
        clgrad.zeros(2, device=name)
    text = str(info.value)
    assert broken_device.describe() in text and "LLVM ERROR: boom" in text and "cpu" in text
    for d in runtime.devices():
        if d.usable:
            assert f"opencl:{d.index} ({d.props.name}" in text
    with pytest.raises(RuntimeError, match="LLVM ERROR: boom"):
        resolve(broken_device.index)
    monkeypatch.setenv("CLGRAD_DEVICE", str(broken_device.index))
    with pytest.raises(RuntimeError, match="failed clgrad's health check"):
        resolve("opencl")
    # its properties and verdict can still be asked for
    assert clgrad.opencl.get_device_properties(name).name == broken_device.props.name
    assert clgrad.opencl.health_check(name) == "unusable: crashed (SIGABRT) during 'elementwise': LLVM ERROR: boom"
    assert any(line.endswith("unusable: crashed (SIGABRT) during 'elementwise': LLVM ERROR: boom")
               for line in clgrad.opencl.devices())


def test_child_trusts_its_devices_without_a_probe(monkeypatch):
    """Inside the health check's own child a device is trusted without the in-process probe build, so a case that
    fails reports the compiler's error, not a probe verdict wrapped in ``require``'s advice."""
    dev = _pocl()
    saved = dev.health
    monkeypatch.setenv(health._CHILD_ENV, "1")
    monkeypatch.setattr(type(dev), "_build_probe", lambda self: pytest.fail("the child built a probe"))
    try:
        dev.health = None
        assert dev.usable and dev.health.checked == "skipped"
    finally:
        dev.health = saved


def test_default_skips_broken(broken_device, monkeypatch):
    monkeypatch.delenv("CLGRAD_DEVICE", raising=False)
    others = [d for d in runtime.devices() if d.usable]
    if others:
        assert runtime.default_index() != broken_device.index
        assert runtime.default_index() == sorted(others, key=lambda d: d.preference)[0].index
    else:
        with pytest.raises(RuntimeError, match="no OpenCL device passed"):
            runtime.default_index()


# ---- a first run that talks ---------------------------------------------------------------------------------


def _run(code: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full,
                          timeout=300)


def test_cold_build_prints_no_compiler_output(tmp_path):
    """A cold cache: one line says kernels are being built; the compiler's warnings are never echoed."""
    dev = _pocl()
    proc = _run(f"""
        import clgrad
        a = clgrad.arange(1000, dtype=clgrad.float32, device="opencl:{dev.index}")
        print(float(((a * 2 + 1) / 3).relu().sum()))
    """, CLGRAD_CACHE_DIR=str(tmp_path / "c"), POCL_CACHE_DIR=str(tmp_path / "p"), CLGRAD_HEALTH_CHECK="0")
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == pytest.approx(sum((2 * i + 1) / 3 for i in range(1000)), rel=1e-5)
    assert "warning" not in proc.stderr.lower()
    assert all(line.startswith("clgrad: building OpenCL kernels for") for line in proc.stderr.splitlines())


def test_slow_wait_is_reported_once(capfd, monkeypatch):
    dev = _pocl()
    clgrad.ones(3, device=f"opencl:{dev.index}").sum()  # a kernel was launched: the report names it
    monkeypatch.setattr(runtime, "SLOW_WAIT", 0.2)
    with runtime.waiting(dev):
        time.sleep(1.2)
    err = capfd.readouterr().err
    assert err.count(f"clgrad: still waiting for {dev.describe()} after") == 1
    assert f"last kernel launched: {dev.last_kernel}" in err and dev.last_kernel


def test_launch_blocking_raises_at_the_op():
    """With CLGRAD_LAUNCH_BLOCKING=1 an out-of-range target raises at nll_loss itself, not at a later read."""
    dev = _pocl()
    code = f"""
        import clgrad, clgrad.nn.functional as F
        x = clgrad.zeros(4, 3, device="opencl:{dev.index}")
        try:
            loss = F.nll_loss(x, clgrad.tensor([0, 1, 7, 2], device="opencl:{dev.index}"))
        except IndexError as exc:
            print("raised at the op:", exc)
        else:
            print("deferred")
    """
    blocking = _run(code, CLGRAD_LAUNCH_BLOCKING="1")
    assert blocking.stdout.startswith("raised at the op:") and "7" in blocking.stdout, blocking.stderr
    assert _run(code).stdout.strip() == "deferred"
