"""Scaling of DDP training of the MNIST CNN from 1 to 2 (or more) MPI ranks, plus all_reduce timings.

    python bench/distributed.py                      # cpu and opencl (first usable), 1 and 2 ranks
    python bench/distributed.py --devices cpu --ranks 1 2 3 --steps 30

Launches itself under mpiexec once per (device, ranks). Each rank trains the examples/mnist.py CNN with
DistributedDataParallel on synthetic 1x28x28 batches; "weak" scaling keeps the per-rank batch (the global
batch grows), "strong" keeps the global batch (split over ranks). Efficiency = throughput(N) / (N *
throughput(1)). "sync" is the time a step spends in DDP's reducer: gradients to the host (on OpenCL
including the wait for backward's kernels), the end-of-backward all-reduce wait, and the write-back.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(args) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import clgrad
    import clgrad.distributed as dist
    import clgrad.nn.functional as F
    from clgrad.nn.parallel import DistributedDataParallel as DDP
    from clgrad.nn.parallel import reducer as R

    sys.path.insert(0, str(ROOT / "examples"))
    from mnist import Net  # the example's model, with its classic dropouts

    comm = {"s": 0.0}
    finalize, mark = R.Reducer._finalize, R.Reducer._mark_ready

    def timed(fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                comm["s"] += time.perf_counter() - t0
        return wrapper

    R.Reducer._finalize, R.Reducer._mark_ready = timed(finalize), timed(mark)
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    dev = args.device
    rows = args.batch if args.mode == "weak" else args.batch // n
    clgrad.manual_seed(r)
    model = DDP(Net(classic=True).to(dev))
    opt = clgrad.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    rng = np.random.RandomState(r)
    x = clgrad.tensor(rng.randn(rows, 1, 28, 28).astype(np.float32), device=dev)
    y = clgrad.tensor(rng.randint(0, 10, rows), device=dev)

    def step():
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step().item()
    dist.barrier()
    comm["s"] = 0.0
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss.item()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    sizes = {}
    for numel in (1 << 10, 1 << 14, 21840, 1 << 18, 1 << 20):  # 21840 = the CNN's parameter count
        buf = clgrad.ones(numel, device=dev)
        dist.all_reduce(buf)
        t1 = time.perf_counter()
        for _ in range(10):
            dist.all_reduce(buf)
        sizes[numel] = (time.perf_counter() - t1) / 10
    if r == 0:
        print("RESULT " + json.dumps({"device": dev, "ranks": n, "mode": args.mode, "rows": rows,
                                      "step_s": elapsed / args.steps, "img_s": n * rows * args.steps / elapsed,
                                      "comm_s": comm["s"] / args.steps, "allreduce_s": sizes}), flush=True)
    dist.destroy_process_group()


def launch(ranks, device, mode, args) -> dict:
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    if not os.path.exists(mpiexec):
        mpiexec = shutil.which("mpiexec")
    cmd = [mpiexec, "--oversubscribe", "-n", str(ranks), sys.executable, __file__, "--worker", "--device", device,
           "--mode", mode, "--steps", str(args.steps), "--batch", str(args.batch)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900).stdout
    line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"no result from {' '.join(cmd)}:\n{out}")
    return json.loads(line[7:])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true")
    p.add_argument("--device", default="cpu")
    p.add_argument("--devices", nargs="+", default=["cpu", "opencl:2"])
    p.add_argument("--ranks", nargs="+", type=int, default=[1, 2])
    p.add_argument("--modes", nargs="+", default=["weak", "strong"])
    p.add_argument("--mode", default="weak")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    print(f"{'device':9} {'mode':6} {'ranks':>5} {'rows/rank':>9} {'step ms':>8} {'sync ms':>8} {'img/s':>8} "
          f"{'effic.':>7}   all_reduce us (1K, 16K, 21840, 256K, 1M floats)")
    for device in args.devices:
        for mode in args.modes:
            base = None
            for ranks in args.ranks:
                res = launch(ranks, device, mode, args)
                base = base or res["img_s"]
                eff = res["img_s"] / (ranks * base)
                ar = ", ".join(f"{v * 1e6:.0f}" for v in res["allreduce_s"].values())
                print(f"{device:9} {mode:6} {ranks:5d} {res['rows']:9d} {res['step_s'] * 1e3:8.1f} "
                      f"{res['comm_s'] * 1e3:8.1f} {res['img_s']:8.0f} {eff:7.2f}   {ar}", flush=True)


if __name__ == "__main__":
    main()
