"""clgrad.multiprocessing: shared cpu storage, tensors through queues by handle, Hogwild training with fork and
spawn, both sharing strategies, torch's spawn() and its error reporting."""
from __future__ import annotations

import multiprocessing as std_mp
import pickle

import numpy as np
import pytest

import clgrad
import clgrad.multiprocessing as mp
from clgrad.multiprocessing import reductions

STRATEGIES = sorted(mp.get_all_sharing_strategies())


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(before)


def _hogwild(rank, model, steps, done):
    """SGD with lr=1 on sum(weights): every step subtracts exactly 1 from every shared entry."""
    opt = clgrad.optim.SGD(model.parameters(), lr=1.0)
    for _ in range(steps):
        opt.zero_grad()
        (model.weight.sum() + model.bias.sum()).backward()
        opt.step()
    done.put(rank)


def _run_hogwild(method: str):
    ctx = mp.get_context(method)
    model = clgrad.nn.Linear(3, 2)
    with clgrad.no_grad():
        model.weight.fill_(0.5)
        model.bias.zero_()
    assert model.share_memory() is model and all(p.is_shared() for p in model.parameters())
    done = ctx.Queue()
    procs = [ctx.Process(target=_hogwild, args=(r, model, 2 + r, done)) for r in range(2)]
    for p in procs:
        p.start()
    ranks = sorted(done.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert ranks == [0, 1] and [p.exitcode for p in procs] == [0, 0]
    # 2 + 3 steps, one from each process: the parent's model took all of them
    np.testing.assert_array_equal(model.weight.numpy(), np.full((2, 3), 0.5 - 5, np.float32))
    np.testing.assert_array_equal(model.bias.numpy(), np.full(2, -5.0, np.float32))


def test_hogwild_fork(strategy):
    _run_hogwild("fork")


def test_hogwild_spawn():
    """The model reaches the spawned children as handles (pickled arguments, the default strategy; by name is
    covered by the queue tests), not as copies."""
    _run_hogwild("spawn")


OPTIMIZERS = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "LBFGS"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizers_write_into_shared_memory(name):
    """Hogwild needs every optimizer to update parameters in place: the shared block must see each step."""
    model = clgrad.nn.Linear(2, 2).share_memory()
    blocks = [p._storage.data for p in model.parameters()]
    before = [b.copy() for b in blocks]
    kwargs = {"momentum": 0.9} if name == "SGD" else {}
    opt = getattr(clgrad.optim, name)(model.parameters(), lr=0.1, **kwargs)

    def closure():
        opt.zero_grad()
        loss = (model(clgrad.ones(3, 2)) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    for p, block, old in zip(model.parameters(), blocks, before):
        assert p._storage.data is block and p.is_shared()
        assert not np.array_equal(block, old)


def test_share_memory_keeps_values_views_and_version(strategy):
    base = clgrad.arange(10.0)
    view = base[2:6]
    version = base._version
    assert not base.is_shared()
    assert view.share_memory_() is view
    assert base.is_shared() and view.is_shared() and base._version == version
    np.testing.assert_array_equal(base.numpy(), np.arange(10.0, dtype=np.float32))
    view.add_(1)  # in-place writes land in the shared block, seen through every view
    assert base[2].item() == 3.0
    assert base.share_memory_()._storage.shared is view._storage.shared  # sharing twice keeps the block
    assert base.data.is_shared()


def test_from_numpy_array_is_left_behind():
    """As in torch: the storage moves into shared memory, so the numpy array no longer aliases the tensor."""
    arr = np.zeros(3, np.float32)
    t = clgrad.from_numpy(arr).share_memory_()
    t.add_(1)
    assert arr.tolist() == [0, 0, 0] and t.tolist() == [1, 1, 1]


def test_opencl_cannot_share(device):
    t = clgrad.zeros(2, device=device)
    if device == "cpu":
        return
    with pytest.raises(RuntimeError, match=f"{device} memory cannot be shared between processes.*'cpu'"):
        t.share_memory_()
    assert not t.is_shared()


def _roundtrip(obj):
    """What a multiprocessing queue does to ``obj``, in one process."""
    return pickle.loads(std_mp.reduction.ForkingPickler.dumps(obj))


def test_queue_pickling_is_by_handle(strategy):
    t = clgrad.arange(6.0).view(2, 3).t()  # a non-contiguous view with an offset-free transpose
    back = _roundtrip(t)
    assert t.is_shared() and back._storage is t._storage  # the same process maps one Storage per block
    assert back.shape == (3, 2) and back.stride() == t.stride()
    p = clgrad.nn.Parameter(clgrad.ones(2))
    q = _roundtrip(p)
    assert type(q) is clgrad.nn.Parameter and q.requires_grad and q._storage is p._storage
    # plain pickle still stores values
    assert pickle.loads(pickle.dumps(clgrad.ones(2)))._storage is not None


def test_non_leaf_requiring_grad_is_refused():
    x = clgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        _roundtrip(x * 2)


def test_opencl_tensor_travels_as_a_copy(device):
    t = clgrad.tensor([1.0, 2.0], device=device)
    back = _roundtrip(t)
    assert back.device == t.device and back.tolist() == [1.0, 2.0]
    if device != "cpu":
        assert back._storage is not t._storage and not t.is_shared()


def _fill_and_reply(inbox, outbox, release):
    t = inbox.get(timeout=60)
    t.fill_(7)  # the parent's tensor: written in place
    outbox.put(clgrad.full((2,), 3.0))  # a tensor this child made, sent back by handle
    release.wait(60)  # the descriptor is served from this process until the parent has it


def test_queue_both_ways_fork(strategy):
    ctx = mp.get_context("fork")
    inbox, outbox, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_fill_and_reply, args=(inbox, outbox, release))
    proc.start()
    t = clgrad.zeros(4)
    inbox.put(t)
    got = outbox.get(timeout=60)
    release.set()
    proc.join(timeout=60)
    assert proc.exitcode == 0 and t.is_shared()
    assert t.tolist() == [7.0] * 4 and got.tolist() == [3.0, 3.0] and got.is_shared()


def _train_rank(rank, shared):
    shared[rank].add_(rank + 1)


def _fail(rank):
    if rank == 1:
        raise ValueError("boom in rank 1")


def test_spawn_runs_each_rank_and_reraises():
    shared = clgrad.zeros(2).share_memory_()
    assert mp.spawn(_train_rank, args=(shared,), nprocs=2, start_method="fork") is None
    assert shared.tolist() == [1.0, 2.0]
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: boom in rank 1") as info:
        mp.spawn(_fail, nprocs=2, start_method="fork")
    assert info.value.error_index == 1
    ctx = mp.start_processes(_train_rank, args=(shared,), nprocs=2, join=False, start_method="fork")
    assert len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert shared.tolist() == [2.0, 4.0]


def test_namespace_and_strategies():
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "get_context", "set_start_method", "cpu_count",
                 "current_process", "Event"):
        assert getattr(mp, name) is getattr(std_mp, name)
    assert clgrad.multiprocessing is mp
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    with pytest.raises(ValueError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("nope")
    assert reductions.reduce_tensor is std_mp.reduction.ForkingPickler._extra_reducers[clgrad.Tensor]


def test_torch_parity_of_names():
    tmp = pytest.importorskip("torch.multiprocessing")

    missing = [n for n in tmp.__all__ if not hasattr(mp, n)]
    assert not missing
    assert mp.get_all_sharing_strategies() <= tmp.get_all_sharing_strategies()
