"""The benchmark scripts run: each bench/*.py in --smoke mode (tiny sizes, one repeat) as a subprocess on the default
device prints its table and writes its JSON; run_all merges results and regenerates the doc block, with the torch
comparisons exercised in one process. Speed itself is never asserted here."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
from run_all import BEGIN, END, SCRIPTS  # noqa: E402


def run(args, timeout=180):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke(script, tmp_path):
    out = tmp_path / "out.json"
    stdout = run([os.path.join(BENCH, f"{script}.py"), "--smoke", "--json", str(out)])
    lines = stdout.splitlines()
    assert lines[0].startswith("device: ")
    header = next(i for i, ln in enumerate(lines) if ln.startswith("case "))
    assert "clgrad" in lines[header] and "vs torch" in lines[header]
    assert "cases; targets missed" in lines[-1]
    result = json.loads(out.read_text())
    assert result["script"] == f"bench/{script}.py" and result["smoke"]
    assert "--json" not in result["command"] and "--device" in result["command"]
    cases = result["cases"]
    assert cases and len(lines) - header - 2 == len(cases)  # one table row per case
    assert all(c["times"].get("clgrad", 1) > 0 for c in cases)


def test_bare_opencl_device_and_training_children(tmp_path):
    """``--device opencl`` (no index) means the default OpenCL device; bench/train.py's cases each come from child
    processes, one per framework (torch with its default OpenMP settings), whose samples the JSON keeps."""
    opencl = subprocess.run([sys.executable, "-c", "import clgrad; print(clgrad.opencl.is_available())"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() == "True"
    out = tmp_path / "out.json"
    device = ["--device", "opencl"] if opencl else []
    run([os.path.join(BENCH, "dispatch.py"), "--smoke", "--only", "a + b (16", *device, "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["device"].startswith("opencl:" if opencl else "cpu")
    run([os.path.join(BENCH, "train.py"), "--smoke", "--only", "ResNet", "--memory-steps", "0", *device,
         "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["own_processes"] and result["cases"][0]["name"].startswith("ResNet basic block")
    assert len(result["cases"][0]["samples"]["clgrad"]) == 1 and "own processes" in result["cases"][0]["note"]
    assert all(t > 0 for t in result["cases"][0]["samples"]["clgrad"])

def test_run_all_merges_and_writes_doc(tmp_path):
    """All scripts but startup (its own subprocesses are covered above) in one process, with torch when
    installed; a second partial run replaces only its own entries and keeps the doc's hand-written text."""
    results, doc = tmp_path / "results.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nhand-written notes\n")
    scripts = [s for s in SCRIPTS if s != "startup"]
    torch_flag = "--torch" if importlib.util.find_spec("torch") else "--no-torch"
    common = ["--smoke", "--in-process", "--results", str(results), "--doc", str(doc)]
    run([os.path.join(BENCH, "run_all.py"), "--scripts", ",".join(scripts), torch_flag, *common])
    first = json.loads(results.read_text())
    assert [r["script"] for r in first["runs"]] == [f"bench/{s}.py" for s in scripts]
    if torch_flag == "--torch":
        train = next(r for r in first["runs"] if r["script"] == "bench/train.py")
        assert all("torch" in c["times"] for c in train["cases"] if c["times"])
    run([os.path.join(BENCH, "run_all.py"), "--scripts", "dispatch", "--no-torch", *common])
    second = json.loads(results.read_text())
    assert len(second["runs"]) == len(scripts)
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written notes\n") and text.count(BEGIN) == 1 and END in text
    assert "bench/gemm.py" in text and "| case |" in text
