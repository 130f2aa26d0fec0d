"""Cold and warm start: a fresh process doing its first MNIST training step (and first RNN step) with empty kernel
caches (CLGRAD_CACHE_DIR and POCL_CACHE_DIR pointing at new empty folders), then again with the caches it filled.

    python bench/startup.py [--device opencl:N] [--quick] [--smoke] [--json out.json]
    python bench/startup.py --record-groups [--device opencl:N]

"first step" is the time from after ``import clgrad`` (or ``import torch``) to the end of the first step, model
creation included; the imports are their own row. PyTorch has no kernel cache, so its cold and warm numbers are
the same kind of fresh process. ``--smoke`` does one ``a + b`` instead of a training step.
``--record-groups`` rewrites clgrad/backends/opencl/group_table.py with the kernels the two steps request (one
program group each, see groups.py); run it after changing a launcher's parameters that those steps use (adding or
changing an op in registry/ does not need it: members name their op, the kernels come from the tables at render).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(kind: str, device: str) -> None:
    """Runs in the fresh process: time the import, the first and the second step, print them as JSON."""
    start = time.perf_counter()
    lib_name = "clgrad" if kind.startswith("record-") else kind.split("-")[0]
    lib = __import__(lib_name)
    imported = time.perf_counter()
    sys.path.insert(0, HERE)
    import train  # noqa: E402  (after the timed import: it imports clgrad and the example)

    from clgrad.backends.opencl import programs

    if kind.startswith("record-"):
        programs._recording = []
    dev = device if lib_name == "clgrad" else "cpu"
    sync = lib.opencl.synchronize if lib_name == "clgrad" and dev.startswith("opencl") else (lambda: None)
    model_start = time.perf_counter()
    if kind.endswith("mnist"):
        step = train.mnist_step(lib, dev, 64)
    elif kind.endswith("rnn"):
        step = train.rnn_step(lib, dev, "RNN", 50, 32)
    else:
        a = lib.ones(16, device=dev)

        def step():
            return a + a
    times = []
    for _ in range(2):
        step()
        sync()
        times.append(time.perf_counter())
    print("RESULT " + json.dumps({"import": imported - start, "first": times[0] - model_start,
                                  "second": times[1] - times[0], **programs.stats,
                                  "recorded": repr(programs._recording)}))


def record_groups(device: str) -> None:
    """Run each step in a fresh process with kernel recording on and write the group table: one group per step,
    each with every kernel its step requests (a shared kernel comes from whichever group is built first)."""
    import ast

    from clgrad.backends.opencl import groups

    table = {}
    for kind in ("mnist", "rnn"):
        env = {**os.environ, "CLGRAD_PROGRAM_GROUPS": "0"}
        members = ast.literal_eval(run_child(f"record-{kind}", device, env)["recorded"])
        table[kind] = tuple(dict.fromkeys(members))
    path = os.path.join(HERE, "..", "clgrad", "backends", "opencl", "group_table.py")
    with open(path, "w") as f:
        f.write(groups.table_source(table))
    print(f"wrote {os.path.normpath(path)}: " + ", ".join(f"{k} {len(v)} kernels" for k, v in table.items()))


def programs_note(result: dict) -> str:
    """How the child got its programs: compiled from source (PoCL may still serve them from its own cache) or
    loaded from clgrad's binary cache."""
    return f"{result['builds']} programs from source, {result['disk_hits']} from clgrad's binary cache"


def run_child(kind: str, device: str, env: dict) -> dict:
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind, "--device", device],
                          env=env, capture_output=True, text=True, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"startup child {kind} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[len("RESULT "):])


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--child" in argv:
        child(argv[argv.index("--child") + 1], argv[argv.index("--device") + 1])
        return None
    if "--record-groups" in argv:
        sys.path.insert(0, HERE)
        from common import default_device  # noqa: E402

        record_groups(argv[argv.index("--device") + 1] if "--device" in argv else default_device())
        return None
    sys.path.insert(0, HERE)
    from common import Bench, at_most, fmt_time  # noqa: E402

    b = Bench(__doc__, __file__, argv)
    kinds = [("a+b op", "tiny", None, None)] if b.smoke else [
        ("MNIST step", "mnist", 5.0, 0.3), ("RNN step", "rnn", 3.0, None)]
    warm_runs = min(b.repeats, 3)
    with tempfile.TemporaryDirectory(prefix="clgrad-startup-") as tmp:
        for label, kind, cold_limit, warm_limit in kinds:
            names = [f"first {label}, cold caches", f"first {label}, warm caches"] + ["import (warm)"] * (kind != "rnn")
            if not any(b.wants(n) for n in names):
                continue
            caches = {"CLGRAD_CACHE_DIR": os.path.join(tmp, kind, "clgrad"),
                      "POCL_CACHE_DIR": os.path.join(tmp, kind, "pocl")}
            for folder in caches.values():
                os.makedirs(folder)
            # the health check (once per machine and driver) would warm the fresh PoCL cache before the first
            # step is timed; its own cost is its verdict's "seconds" in ~/.cache/clgrad/health
            env = {**os.environ, **caches, "CLGRAD_HEALTH_CHECK": "0"}
            env.pop("CLGRAD_NO_CACHE", None)
            cold = run_child(f"clgrad-{kind}", b.device, env)
            warm = [run_child(f"clgrad-{kind}", b.device, env) for _ in range(warm_runs)]
            warm = sorted(warm, key=lambda r: r["first"])[len(warm) // 2]
            theirs = run_child(f"torch-{kind}", b.device, env) if b.torch is not None else None
            torch_first = {"torch": theirs["first"]} if theirs else {}
            b.add(names[0], {"clgrad": cold["first"], **torch_first}, target=cold_limit and at_most(cold_limit),
                  note=f"{programs_note(cold)}; second step {fmt_time(cold['second'])}")
            b.add(names[1], {"clgrad": warm["first"], **torch_first},
                  target=warm_limit and at_most(warm_limit),
                  note=f"{programs_note(warm)}; second step {fmt_time(warm['second'])}")
            if kind != "rnn":
                b.add("import (warm)", {"clgrad": warm["import"], **({"torch": theirs["import"]} if theirs else {})})
    b.finish()
    return b


if __name__ == "__main__":
    main()
