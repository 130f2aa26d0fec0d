"""A tiny training run that checkpoints everything a bit-exact resume needs (used by tests/test_resume_exact.py).

    python tests/resume_script.py --device opencl:2 --dir DIR [--resume] [--sampler generator|global]

A 2-layer MLP with dropout learns a synthetic 4-class problem with Adam and a StepLR schedule, reading a shuffled
DataLoader; every ``--save-interval`` steps and at each epoch's end it writes ``DIR/ckpt.safetensors`` (atomically)
holding the model, the optimizer and scheduler states, the epoch and the number of batches done in it, and the random
state: the global generator's state now (dropout draws from it) and the shuffle's state at the epoch's start (the
sampler draws its permutation when the epoch's first batch is fetched). ``--resume`` restores all of it, replays the
epoch's order and skips the batches already trained. The final weights go to ``DIR/final.safetensors``. Each step
prints ``step N`` so that a test can SIGKILL the run at a known point.

``--sampler generator`` shuffles with an explicit ``clgrad.Generator`` (as examples/mnist.py does); ``--sampler
global`` lets the sampler seed itself from the global generator (PyTorch's default when no generator is given).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
from clgrad import nn  # noqa: E402
from clgrad.optim.lr_scheduler import StepLR  # noqa: E402
from clgrad.utils.data import DataLoader, TensorDataset  # noqa: E402

CKPT, FINAL = "ckpt.safetensors", "final.safetensors"


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dir", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--save-interval", type=int, default=2)
    p.add_argument("--sampler", choices=("generator", "global"), default="generator")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--step-delay", type=float, default=0.0, help="seconds to sleep after each step (for kill tests)")
    p.add_argument("--resume", action="store_true")
    return p.parse_args(argv)


def build(args):
    """Data, model, optimizer, scheduler, loader and shuffle generator, all from the seed."""
    clgrad.manual_seed(args.seed)
    data_gen = clgrad.Generator().manual_seed(1234)
    x = clgrad.randn(96, 8, generator=data_gen)
    y = (x[:, :4] * clgrad.tensor([1.0, -1.0, 0.5, 2.0])).argmax(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 4)).to(args.device)
    opt = clgrad.optim.Adam(model.parameters(), lr=0.01)
    sched = StepLR(opt, step_size=1, gamma=0.5)
    shuffle = clgrad.Generator() if args.sampler == "generator" else None
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=shuffle)
    return model, opt, sched, loader, shuffle


def save_checkpoint(path, model, opt, sched, epoch, batch, step, epoch_start):
    clgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                 "epoch": epoch, "batch": batch, "step": step, "rng_state": clgrad.get_rng_state(),
                 "epoch_start": epoch_start}, path)


def _random_state(shuffle) -> dict:
    """What decides an epoch's order and dropout masks, taken at the epoch's start."""
    state = {"rng_state": clgrad.get_rng_state()}
    if shuffle is not None:
        state["shuffle_state"] = shuffle.get_state()
    return state


def run(args) -> dict:
    """Train (or resume) to the end; returns the final state_dict (also written to DIR/final.safetensors)."""
    model, opt, sched, loader, shuffle = build(args)
    path = os.path.join(args.dir, CKPT)
    epoch, skip, step, resume_rng = 1, 0, 0, None
    restart = None
    if args.resume and os.path.exists(path):
        ckpt = clgrad.load(path, map_location=args.device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        epoch, skip, step = int(ckpt["epoch"]), int(ckpt["batch"]), int(ckpt["step"])
        resume_rng = ckpt["rng_state"].cpu()  # generator states live on the host; map_location moved it
        restart = ckpt["epoch_start"]
        print(f"resumed from step {step}: epoch {epoch}, batch {skip}", flush=True)
    model.train()
    for ep in range(epoch, args.epochs + 1):
        if restart is not None:  # replay this epoch's order: the random state as it was at its start
            clgrad.set_rng_state(restart["rng_state"].cpu())
            if shuffle is not None:
                shuffle.set_state(restart["shuffle_state"].cpu())
            start, restart = {k: v.cpu() for k, v in restart.items()}, None
        else:
            start = _random_state(shuffle)
        for batch, (x, y) in enumerate(loader):
            if batch < skip:
                continue  # trained before the checkpoint (fetching it drew the epoch's permutation, as before)
            if resume_rng is not None:  # from here on, dropout continues from the checkpoint's draw
                clgrad.set_rng_state(resume_rng)
                resume_rng = None
            x, y = x.to(args.device), y.to(args.device)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            step += 1
            print(f"step {step} loss {loss.item():.6f}", flush=True)
            if args.step_delay:
                time.sleep(args.step_delay)
            if args.save_interval and step % args.save_interval == 0:
                save_checkpoint(path, model, opt, sched, ep, batch + 1, step, start)
        skip = 0
        sched.step()
        save_checkpoint(path, model, opt, sched, ep + 1, 0, step, _random_state(shuffle))
    state = model.state_dict()
    clgrad.save(state, os.path.join(args.dir, FINAL))
    print(f"done after {step} steps", flush=True)
    return state


if __name__ == "__main__":
    run(parse())
