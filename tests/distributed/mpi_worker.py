"""The program the distributed tests run under ``mpiexec``: ``python mpi_worker.py SCENARIO DEVICE...``.

``checks`` runs every entry of COLLECTIVES and DDP_CASES on every device and prints one line per case
and rank (``RESULT <case> <device> <rank> ok``, ``... FAIL <why>``, or ``... skip <why>`` for a case that does
not apply to the device, such as float64 without cl_khr_fp64), which the pytest side parses; a
failed comparison is reported and the run goes on (it happens after the collective, so the ranks stay
in step), anything else ends the job through clgrad's abort-on-uncaught-exception hook.
``raise`` and ``timeout`` are the failure scenarios.
"""
from __future__ import annotations

import sys
import time
import traceback
from datetime import timedelta

import numpy as np

import clgrad
import clgrad.distributed as dist
import clgrad.nn as nn
from clgrad.nn.parallel import DistributedDataParallel as DDP

R = dist.ReduceOp
NP_REDUCE = {R.SUM: np.sum, R.PRODUCT: np.prod, R.MIN: np.min, R.MAX: np.max, R.AVG: np.mean}


def data(rank: int, shape=(3, 4), dtype=np.float32, salt: int = 0) -> np.ndarray:
    """What rank ``rank`` contributes: every rank can compute every other rank's data, hence the references."""
    rng = np.random.RandomState(1000 * salt + rank)
    if np.dtype(dtype).kind == "f":
        return (rng.rand(*shape) + 0.5).astype(dtype)  # in [0.5, 1.5): products stay tame
    if np.dtype(dtype).kind == "b":
        return rng.rand(*shape) < 0.5
    return rng.randint(-5, 6, shape).astype(dtype)


def close(got, want, rtol=1e-5, atol=1e-6) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


class Skip(Exception):
    """A case that does not apply to a device; reported as ``RESULT <case> <device> <rank> skip <why>``."""


def fp64_ok(dev) -> bool:
    return dev == "cpu" or clgrad.opencl.get_device_properties(dev).fp64


def t(arr, dev, layout="contiguous"):
    """A tensor of ``arr`` on ``dev``; 'transposed' gives a non-contiguous one with the same values."""
    if layout == "transposed":
        return clgrad.tensor(np.ascontiguousarray(arr.T), device=dev).t()
    return clgrad.tensor(arr, device=dev)


# ---- collectives: each takes (device, rank, world) and checks against numpy ---------------------------
def _all_reduce(op, dtype=np.float32, layout="contiguous"):
    def case(dev, r, n):
        if np.dtype(dtype) == np.float64 and not fp64_ok(dev):
            try:  # the library refuses float64 there, naming the device and the extension
                t(data(r, dtype=dtype), dev)
            except TypeError as exc:
                assert dev in str(exc) and "cl_khr_fp64" in str(exc), f"unclear float64 error: {exc}"
                raise Skip(f"{dev} has no cl_khr_fp64") from None
            raise AssertionError(f"float64 on {dev}, which lacks cl_khr_fp64, raised no TypeError")
        x = t(data(r, dtype=dtype), dev, layout)
        assert dist.all_reduce(x, op=op) is None
        ref = NP_REDUCE[op](np.stack([data(k, dtype=dtype) for k in range(n)]), axis=0)
        if np.dtype(dtype).kind == "i" and op is R.AVG:
            ref = np.trunc(ref)
        close(x.cpu().numpy(), ref.astype(dtype), rtol=1e-3 if dtype == np.float16 else 1e-5)
    return case


def _all_reduce_bool(dev, r, n):
    x, y = t(data(r, dtype=bool), dev), t(data(r, dtype=bool), dev)
    dist.all_reduce(x, op=R.SUM)  # "or"
    dist.all_reduce(y, op=R.PRODUCT)  # "and"
    every = np.stack([data(k, dtype=bool) for k in range(n)])
    assert x.dtype is clgrad.bool
    close(x.cpu().numpy(), every.any(0))
    close(y.cpu().numpy(), every.all(0))


def _broadcast(dev, r, n):
    src = n - 1
    x = t(data(r), dev, "transposed")
    dist.broadcast(x, src=src)
    close(x.cpu().numpy(), data(src))


def _all_gather(dev, r, n):
    outs = [clgrad.zeros(3, 4, device=dev) for _ in range(n)]
    dist.all_gather(outs, t(data(r), dev))
    for k, o in enumerate(outs):
        close(o.cpu().numpy(), data(k))


def _all_gather_into_tensor(dev, r, n):
    out = clgrad.zeros(n * 3, 4, dtype=clgrad.int64, device=dev)
    dist.all_gather_into_tensor(out, t(data(r, dtype=np.int64), dev))
    close(out.cpu().numpy(), np.concatenate([data(k, dtype=np.int64) for k in range(n)]))


def _reduce_scatter(op):
    def case(dev, r, n):
        out = clgrad.zeros(3, 4, device=dev)
        dist.reduce_scatter(out, [t(data(r, salt=j), dev) for j in range(n)], op=op)
        close(out.cpu().numpy(), NP_REDUCE[op](np.stack([data(k, salt=r) for k in range(n)]), axis=0))
    return case


def _reduce_scatter_tensor(dev, r, n):
    out = clgrad.zeros(2, 4, device=dev)
    dist.reduce_scatter_tensor(out, t(data(r, shape=(2 * n, 4)), dev))
    full = np.sum([data(k, shape=(2 * n, 4)) for k in range(n)], axis=0)
    close(out.cpu().numpy(), full[2 * r:2 * r + 2])


def _reduce(dev, r, n):
    x = t(data(r), dev)
    dist.reduce(x, dst=1, op=R.MAX)
    want = np.max([data(k) for k in range(n)], axis=0) if r == 1 else data(r)
    close(x.cpu().numpy(), want)


def _send_recv(dev, r, n):
    right, left = (r + 1) % n, (r - 1) % n
    x = clgrad.zeros(3, 4, device=dev)
    if r % 2 == 0:  # blocking calls in an order that can't deadlock on a ring of any size
        dist.send(t(data(r), dev), right)
        src = dist.recv(x, left)
    else:
        src = dist.recv(x)
        dist.send(t(data(r), dev), right)
    assert src == left, f"recv reported sender {src}, expected {left}"
    close(x.cpu().numpy(), data(left))
    y = clgrad.zeros(3, 4, device=dev)
    works = [dist.irecv(y, left, tag=7), dist.isend(t(data(r, salt=2), dev), right, tag=7)]
    for w in works:
        w.wait()
    close(y.cpu().numpy(), data(left, salt=2))


def _async_op(dev, r, n):
    xs = [t(data(r, salt=s), dev) for s in range(3)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    assert all(isinstance(w, dist.Work) for w in works)
    for s in reversed(range(3)):  # waiting out of order is fine
        assert works[s].wait() is True and works[s].is_completed()
        close(xs[s].cpu().numpy(), np.sum([data(k, salt=s) for k in range(n)], axis=0))
    outs = [clgrad.zeros(3, 4, device=dev) for _ in range(n)]
    w = dist.all_gather(outs, t(data(r), dev), async_op=True)
    while not w.is_completed():
        time.sleep(1e-4)
    close(outs[n - 1].cpu().numpy(), data(n - 1))
    assert dist.barrier(async_op=True).wait()


def _subgroup(dev, r, n):
    ranks = [0, n - 1]
    g = dist.new_group(ranks)
    x = t(data(r), dev)
    dist.all_reduce(x, group=g)
    if r in ranks:
        assert dist.get_world_size(g) == 2 and dist.get_rank(g) == ranks.index(r)
        close(x.cpu().numpy(), data(0) + data(n - 1))
        dist.destroy_process_group(g)
    else:
        assert g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
        close(x.cpu().numpy(), data(r))  # untouched: not a member


COLLECTIVES = {
    **{f"all_reduce_{op.name.lower()}": _all_reduce(op) for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX)},
    "all_reduce_strided": _all_reduce(R.SUM, layout="transposed"),
    "all_reduce_int64_avg": _all_reduce(R.AVG, np.int64),
    "all_reduce_float64": _all_reduce(R.MAX, np.float64),
    "all_reduce_float16": _all_reduce(R.SUM, np.float16),
    "all_reduce_bool": _all_reduce_bool,
    "broadcast": _broadcast,
    "all_gather": _all_gather,
    "all_gather_into_tensor": _all_gather_into_tensor,
    "reduce_scatter_sum": _reduce_scatter(R.SUM),
    "reduce_scatter_avg": _reduce_scatter(R.AVG),
    "reduce_scatter_tensor": _reduce_scatter_tensor,
    "reduce": _reduce,
    "send_recv": _send_recv,
    "async_op": _async_op,
    "subgroup": _subgroup,
}


# ---- DDP: the replicas' training equals one process training on the whole global batch ------------------
def _mlp(seed: int, dev):
    clgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3)).to(dev)


def _batch(step: int, rows: int):
    rng = np.random.RandomState(50 + step)
    return rng.randn(rows, 5).astype(np.float32), rng.randint(0, 3, rows)


def _train(model, opt, batches, dev, shard=None, no_sync_micro=False):
    """Steps of SGD; ``shard`` = (rank, world) trains DDP on this rank's rows of each global batch. With
    ``no_sync_micro`` each step is two micro-batches, the first under ``no_sync``."""
    loss_fn = nn.CrossEntropyLoss()
    for x, y in batches:
        if shard is not None:
            r, n = shard
            rows = len(x) // n
            x, y = x[r * rows:(r + 1) * rows], y[r * rows:(r + 1) * rows]
        opt.zero_grad()
        if no_sync_micro:
            half = len(x) // 2
            with model.no_sync():
                loss_fn(model(t(x[:half], dev)), clgrad.tensor(y[:half], device=dev)).backward()
            loss_fn(model(t(x[half:], dev)), clgrad.tensor(y[half:], device=dev)).backward()
        else:
            loss_fn(model(t(x, dev)), clgrad.tensor(y, device=dev)).backward()
        opt.step()


def _weights(model) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def _same_on_every_rank(arrays, dev) -> None:
    flat = np.concatenate([a.reshape(-1) for a in arrays])
    hi, lo = t(flat, dev), t(flat, dev)
    dist.all_reduce(hi, op=R.MAX)
    dist.all_reduce(lo, op=R.MIN)
    close(hi.cpu().numpy(), lo.cpu().numpy(), rtol=0, atol=0)


def _ddp_equivalence(no_sync_micro: bool, momentum: float):
    def case(dev, r, n):
        local = _mlp(seed=r, dev=dev)  # different init on each rank: DDP broadcasts rank 0's
        ref = _mlp(seed=0, dev=dev)
        ddp = DDP(local, bucket_cap_mb=2e-4)  # ~200-byte buckets: several all-reduces per backward
        assert len(ddp.reducer.buckets) > 1
        _same_on_every_rank(_weights(local), dev)
        batches = [_batch(s, 4 * n) for s in range(3)]
        _train(ddp, clgrad.optim.SGD(ddp.parameters(), lr=0.2, momentum=momentum), batches, dev, (r, n),
               no_sync_micro)
        if no_sync_micro:
            _train_micro_ref(ref, batches, dev, n, momentum)
        else:
            _train(ref, clgrad.optim.SGD(ref.parameters(), lr=0.2, momentum=momentum), batches, dev)
        for got, want in zip(_weights(local), _weights(ref)):
            close(got, want, rtol=1e-4, atol=1e-5)
        _same_on_every_rank(_weights(local), dev)
        assert ddp.reducer.launched_in_backward >= 1, "no bucket was all-reduced while backward was running"
    return case


def _train_micro_ref(model, batches, dev, n, momentum):
    """One process, same micro-batches: rank k's micro-batch j is rows [k*rows + j*half, ...) of the global batch."""
    loss_fn = nn.CrossEntropyLoss()
    opt = clgrad.optim.SGD(model.parameters(), lr=0.2, momentum=momentum)
    for x, y in batches:
        rows = len(x) // n
        half = rows // 2
        opt.zero_grad()
        for j in range(2):
            idx = np.concatenate([np.arange(k * rows + j * half, k * rows + (j + 1) * half) for k in range(n)])
            loss_fn(model(t(x[idx], dev)), clgrad.tensor(y[idx], device=dev)).backward()
        opt.step()


class _Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 2)
        self.unused = nn.Linear(4, 2)
        self.register_buffer("stamp", clgrad.tensor([float(dist.get_rank())]))

    def forward(self, x):
        return self.used(x)


def _ddp_unused_and_buffers(dev, r, n):
    model = _Branches().to(dev)
    ddp = DDP(model, device_ids=[dev], find_unused_parameters=True)
    assert model.stamp.item() == 0.0, "buffers were not broadcast from rank 0"
    assert all(k.startswith("module.") for k in ddp.state_dict())
    ddp(t(data(r, shape=(3, 4)), "cpu")).sum().backward()  # device_ids: the input moves to the module's device
    assert model.unused.weight.grad is None
    want = np.mean([data(k, shape=(3, 4)).sum(0) for k in range(n)], axis=0)
    close(model.used.weight.grad.cpu().numpy(), np.stack([want, want]))


def _raises(fn, *matches: str) -> None:
    try:
        fn()
    except RuntimeError as exc:
        assert all(m in str(exc) for m in matches), f"wrong error: {exc}"
        return
    raise AssertionError(f"no RuntimeError matching {matches!r}")


def _drain(ddp) -> None:
    """Wait for the all-reduces an aborted iteration left in flight, before its buffers can be freed."""
    for b in ddp.reducer.buckets:
        if b.work is not None:
            b.work.wait()


def _ddp_errors(dev, r, n):
    ddp = DDP(_Branches().to(dev))  # an unused parameter, and no find_unused_parameters
    x = t(data(r, shape=(3, 4)), dev)
    missing = (f"Parameters which did not receive grad for rank {r}: unused.weight, unused.bias",
               f"Parameter indices which did not receive grad for rank {r}: 2 3")
    # raised when backward ends (PyTorch: at the next forward), and again at the next forward
    _raises(lambda: ddp(x).sum().backward(), "Expected to have finished reduction in the prior iteration", *missing)
    _raises(lambda: ddp(x), "Expected to have finished reduction in the prior iteration", *missing)
    with clgrad.no_grad():
        ddp(x)  # PyTorch checks only forwards that record a graph
    ddp = DDP(_Branches().to(dev), find_unused_parameters=True)  # used outside forward: its hook fires anyway
    _raises(lambda: (ddp(x).sum() + ddp.module.unused.weight.sum()).backward(),
            "Expected to mark a variable ready only once", "Parameter at index 2 with name unused.weight has been "
            "marked as ready twice")
    _drain(ddp)
    extra = nn.Linear(4, 2, bias=r != n - 1).to(dev)  # the last rank wraps a different model
    _raises(lambda: DDP(extra), "DDP expects same model across all ranks")


def _linear_grad(r: int) -> np.ndarray:
    """d(sum(x @ W.T + b))/dW of rank r's data for a Linear(4, 2): each row is the column sums of x."""
    col = data(r, shape=(3, 4)).sum(0)
    return np.stack([col, col])


def _ddp_iteration_boundaries(dev, r, n):
    clgrad.manual_seed(0)
    ddp = DDP(nn.Linear(4, 2).to(dev))
    w = ddp.module.weight
    x = t(data(r, shape=(3, 4)), dev)
    avg = np.mean([_linear_grad(k) for k in range(n)], axis=0)
    out = ddp(x).sum()
    with clgrad.no_grad():
        ddp(x)  # as in PyTorch, a forward without graph doesn't cancel the pending reduction
    out.backward()
    close(w.grad.cpu().numpy(), avg)
    # a second backward through a reduced iteration's graph only accumulates locally (PyTorch: the same, silently)
    w.grad = None
    out = ddp(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    close(w.grad.cpu().numpy(), avg + _linear_grad(r))
    # ... and without retain_graph autograd refuses it, before any parameter hook runs
    w.grad = None
    out = ddp(x).sum()
    out.backward()
    _raises(out.backward, "Trying to backward through the graph a second time")
    w.grad = None
    ddp(x).sum().backward()  # the next iteration reduces as usual
    close(w.grad.cpu().numpy(), avg)


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)

    def forward(self, x):
        return self.a(x), self.b(x)


def _ddp_outputs_not_in_loss(dev, r, n):
    """find_unused_parameters: head b is reachable from the outputs but only rank 0's loss uses it, so the
    other ranks' b parameters get no hook and are reduced as zeros when backward ends."""
    clgrad.manual_seed(0)
    ddp = DDP(_TwoHeads().to(dev), find_unused_parameters=True, bucket_cap_mb=2e-5)  # two buckets
    x = t(data(r, shape=(3, 4)), dev)
    for step in range(2):
        ddp.zero_grad()
        a, b = ddp(x)
        (a.sum() + b.sum() if r == 0 and step == 0 else a.sum()).backward()
        close(ddp.module.a.weight.grad.cpu().numpy(), np.mean([_linear_grad(k) for k in range(n)], axis=0))
        if step == 0:
            close(ddp.module.b.weight.grad.cpu().numpy(), _linear_grad(0) / n)
        else:
            assert ddp.module.b.weight.grad is None, "a parameter unused on every rank must keep its .grad"


class _Pair(nn.Module):
    """Two bias-free Linears, registered in the order given."""

    def __init__(self, *shapes, names=("a", "b")):
        super().__init__()
        for name, (i, o) in zip(names, shapes):
            setattr(self, name, nn.Linear(i, o, bias=False))


def _ddp_model_mismatch(dev, r, n):
    """Issue 19 item 6: the last rank wraps a model with the same parameter count and numel but different
    shapes, a different order or a different dtype; every rank raises, naming what differs (PyTorch's text)."""
    last = n - 1
    where = "this process" if r == last else f"process {last}"
    count = nn.Linear(4, 2, bias=r != last).to(dev)
    _raises(lambda: DDP(count), f"DDP expects same model across all ranks, but Rank {r} has "
            + ("1 params, while rank 0 has inconsistent 2 params." if r == last else
               f"2 params, while rank {last} has inconsistent 1 params."))
    # 6*8 + 8*4 == 4*10 + 10*4 elements: the old check (counts and numels) let this train
    shapes = _Pair((4, 10), (10, 4)) if r == last else _Pair((6, 8), (8, 4))
    _raises(lambda: DDP(shapes.to(dev)), f"[{r}]: params[0] in {where} with sizes [10, 4] appears not to match "
            "sizes of the same param in process 0. Process 0 has sizes [8, 6].")
    # the same modules registered in another order
    order = _Pair((6, 4), (4, 6), names=("b", "a")) if r == last else _Pair((4, 6), (6, 4))
    _raises(lambda: DDP(order.to(dev)), f"[{r}]: params[0] in {where} with sizes [4, 6] appears not to match")
    if fp64_ok(dev):  # MPI used to abort with only MPI_ERR_IN_STATUS here
        typed = nn.Linear(4, 2).to(dev)
        typed = typed.double() if r == last else typed
        _raises(lambda: DDP(typed), f"[{r}]: params[0] in {where} with dtype clgrad.float64 appears not to match "
                "dtype of the same param in process 0. Process 0 has dtype clgrad.float32.")
    clgrad.manual_seed(0)
    ddp = DDP(_Pair((4, 6), (6, 4)).to(dev))  # the ranks are still in step: a matching model works
    assert ddp.module.a.weight.shape == (6, 4)


DDP_CASES = {
    "ddp_equivalence": _ddp_equivalence(no_sync_micro=False, momentum=0.0),
    "ddp_equivalence_momentum": _ddp_equivalence(no_sync_micro=False, momentum=0.9),
    "ddp_no_sync_accumulation": _ddp_equivalence(no_sync_micro=True, momentum=0.0),
    "ddp_unused_and_buffers": _ddp_unused_and_buffers,
    "ddp_errors": _ddp_errors,
    "ddp_iteration_boundaries": _ddp_iteration_boundaries,
    "ddp_outputs_not_in_loss": _ddp_outputs_not_in_loss,
    "ddp_model_mismatch": _ddp_model_mismatch,
}
CASES = {**COLLECTIVES, **DDP_CASES}


def run_checks(devices) -> None:
    # generous: the first run after a kernel change compiles on every rank while the others wait
    dist.init_process_group("mpi", timeout=timedelta(seconds=180))
    r, n = dist.get_rank(), dist.get_world_size()
    for dev in devices:
        for name, case in CASES.items():
            try:
                case(dev, r, n)
                line = "ok"
            except Skip as exc:
                line = f"skip {exc}"
            except AssertionError as exc:
                where = traceback.extract_tb(exc.__traceback__)[-1]
                line = f"FAIL line {where.lineno}: " + " ".join(str(exc).split())[:300]
            print(f"RESULT {name} {dev} {r} {line}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def run_raise() -> None:
    """Rank 1 dies before a collective the others are already waiting in."""
    dist.init_process_group("mpi")
    if dist.get_rank() == 1:
        raise ValueError("boom from rank 1")
    dist.all_reduce(clgrad.ones(4))
    print("UNREACHABLE: all_reduce finished without rank 1", flush=True)


def run_timeout() -> None:
    """Rank 1 is stuck (not failing) outside the collective: rank 0's wait times out and ends the job."""
    dist.init_process_group("mpi", timeout=timedelta(seconds=2))
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.all_reduce(clgrad.ones(4))
    print("UNREACHABLE: all_reduce finished without rank 1", flush=True)


if __name__ == "__main__":
    scenario, devices = sys.argv[1], sys.argv[2:]
    {"checks": lambda: run_checks(devices), "raise": run_raise, "timeout": run_timeout}[scenario]()
