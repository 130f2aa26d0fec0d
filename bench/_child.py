"""One framework's timings of bench/train.py's cases in a process of its own, one JSON line per case on stdout.

    python bench/_child.py KEY [KEY ...] --framework clgrad|torch [--device D] [--size smoke|quick|full]
                           [--samples N] [--min-time S]

bench/train.py runs it once per case, framework and round, so that neither framework shares its process (nor its
settings) with the other: torch keeps its OpenMP defaults, and both get the same thread count (bench/common.py sets
OMP_NUM_THREADS and friends to the core count, torch's own default). A case's step runs twice to warm up (kernels,
optimizer state), then ``N`` samples of enough steps to fill ``S`` seconds, each ending with a synchronize.
``--framework captured`` is clgrad with the step compiled by ``clgrad.compile(step, mode="reduce-overhead")``: the
first warm-up call runs eagerly, the second captures the step and replays it (captured.py).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402
from common import THREADS  # noqa: E402  (common sets the thread counts before numpy and torch load)


def measure(step, sync, samples: int, min_time: float) -> list:
    for _ in range(2):
        step()
    sync()
    n = 1
    if min_time > 0:
        start = time.perf_counter()
        step()
        sync()
        n = max(1, int(min_time / max(time.perf_counter() - start, 1e-7)))
    out = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        out.append((time.perf_counter() - start) / n)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("keys", nargs="+")
    ap.add_argument("--framework", choices=("clgrad", "captured", "torch"), required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", choices=("smoke", "quick", "full"), default="full")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1)
    args = ap.parse_args(argv)
    table = train.case_table(args.size)
    if args.framework == "torch":
        import torch as lib

        lib.set_num_threads(THREADS)

        def sync():
            pass
    else:
        lib = train.clgrad

        def sync():
            if args.device.startswith("opencl"):
                lib.opencl.synchronize(args.device)

    if args.framework == "captured" and args.device.startswith("opencl"):
        lib.opencl.set_device(args.device)  # the graph captures the current device's launches
    for key in args.keys:
        name, make, _ = table[key]
        lib.manual_seed(0)
        step = make(lib, args.device)
        if args.framework == "captured":  # warm-up call eager, the next captured, then one replay per call
            step = lib.compile(step, mode="reduce-overhead")
        samples = measure(step, sync, args.samples, args.min_time)
        print(json.dumps({"key": key, "name": name, "framework": args.framework, "samples": samples,
                          "threads": THREADS, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}), flush=True)


if __name__ == "__main__":
    main()
