"""What a cold first training step is made of: in a fresh process with empty kernel caches, the time of every
program build (the compiler's front end) and of every kernel's first launch (where PoCL generates its code, per
kernel and work-group size), each followed by a queue finish so that the times do not overlap.

    python bench/coldstart.py [--device opencl:N] [--step mnist|rnn|resnet_block|...] [--warm]

``--warm`` keeps the caches of a previous run (``--cache DIR``) to see what a warm process still pays. The step is
clgrad.warmup's network of that name. The numbers add up to more than an unmeasured cold step, since the finishes
stop the host from queueing ahead, but the split between programs and kernels is the point.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(device: str, step: str) -> None:
    import clgrad
    from clgrad import warmup
    from clgrad.backends.opencl import programs

    builds, launches = [], {}
    original_build = programs._build

    def timed_build(dev, source, name):
        start = time.perf_counter()
        try:
            return original_build(dev, source, name)
        finally:
            builds.append((name, time.perf_counter() - start))

    original_call = programs.LockedKernel.__call__

    def timed_call(self, queue, *args, **kwargs):
        key = (self.name, tuple(args[1]) if len(args) > 1 and args[1] is not None else None)
        if key in launches:
            return original_call(self, queue, *args, **kwargs)
        queue.finish()
        start = time.perf_counter()
        event = original_call(self, queue, *args, **kwargs)
        queue.finish()
        launches[key] = time.perf_counter() - start
        return event

    programs._build = timed_build
    programs.LockedKernel.__call__ = timed_call
    start = time.perf_counter()
    warmup.warm(step, device)
    clgrad.opencl.synchronize()
    total = time.perf_counter() - start
    print("RESULT " + json.dumps({"total": total, "builds": builds,
                                  "launches": [[f"{n} local={loc}", s] for (n, loc), s in launches.items()]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="opencl")
    parser.add_argument("--step", default="mnist")
    parser.add_argument("--cache", default=None, help="cache folder to use (default: a new empty one)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    if args.child:
        child(args.device, args.step)
        return
    with tempfile.TemporaryDirectory(prefix="clgrad-cold-") as tmp:
        folder = args.cache or tmp
        env = {**os.environ, "CLGRAD_CACHE_DIR": os.path.join(folder, "clgrad"),
               "POCL_CACHE_DIR": os.path.join(folder, "pocl"), "CLGRAD_HEALTH_CHECK": "0"}
        for key in ("CLGRAD_CACHE_DIR", "POCL_CACHE_DIR"):
            os.makedirs(env[key], exist_ok=True)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--device", args.device,
                               "--step", args.step], env=env, capture_output=True, text=True, timeout=900)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    r = json.loads(line[len("RESULT "):])
    b, k = sum(s for _, s in r["builds"]), sum(s for _, s in r["launches"])
    print(f"{args.step} on {args.device}: {r['total']:.2f} s in all; {len(r['builds'])} program builds "
          f"{b:.2f} s; {len(r['launches'])} first launches (kernel x local size) {k:.2f} s; rest "
          f"{r['total'] - b - k:.2f} s")
    for name, s in sorted(r["launches"], key=lambda e: -e[1])[: args.top]:
        print(f"  {s:7.3f} s  first launch  {name}")
    for name, s in sorted(r["builds"], key=lambda e: -e[1])[:5]:
        print(f"  {s:7.3f} s  build         {name}")


if __name__ == "__main__":
    main()
