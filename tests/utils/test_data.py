"""clgrad.utils.data: datasets, samplers, collate and DataLoader, compared with torch where deterministic."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import clgrad
from clgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def _ds(n=10):
    return TensorDataset(clgrad.arange(n), clgrad.arange(n) * 10)


def _batches(loader):
    return [[t.tolist() for t in b] for b in loader]


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (5, 1, False),
                                                     (4, 8, False), (4, 8, True)])
def test_batching_and_len_match_torch(n, batch_size, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TDL
    from torch.utils.data import TensorDataset as TDS
    ours = DataLoader(_ds(n), batch_size=batch_size, drop_last=drop_last)
    theirs = TDL(TDS(torch.arange(n), torch.arange(n) * 10), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert _batches(ours) == [[t.tolist() for t in b] for b in theirs]
    it_ours = DataLoader(_Stream(n), batch_size=batch_size, drop_last=drop_last)
    it_theirs = TDL(_TorchStream(torch, n), batch_size=batch_size, drop_last=drop_last)
    assert len(it_ours) == len(it_theirs)
    assert [b.tolist() for b in it_ours] == [b.tolist() for b in it_theirs]


def _TorchStream(torch, n):
    class S(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(n))

        def __len__(self):
            return n
    return S()


def test_shuffle_is_deterministic_per_seed_and_covers_every_sample():
    def epochs(seed):
        loader = DataLoader(_ds(23), batch_size=4, shuffle=True, generator=clgrad.Generator().manual_seed(seed))
        return [_batches(loader) for _ in range(2)]
    first = epochs(0)
    assert first == epochs(0) and first != epochs(1)
    assert first[0] != first[1]  # a new order each epoch
    for epoch in first:
        xs = [x for b in epoch for x in b[0]]
        assert sorted(xs) == list(range(23))
        assert all(y == 10 * x for b in epoch for x, y in zip(*b))
    clgrad.manual_seed(5)
    a = _batches(DataLoader(_ds(23), batch_size=4, shuffle=True))
    clgrad.manual_seed(5)
    assert a == _batches(DataLoader(_ds(23), batch_size=4, shuffle=True))


def test_random_sampler_options():
    g = clgrad.Generator().manual_seed(3)
    s = RandomSampler(range(5), num_samples=12, generator=g)
    out = list(s)
    assert len(s) == 12 and len(out) == 12 and sorted(out[:10]) == sorted(list(range(5)) * 2)
    r = list(RandomSampler(range(5), replacement=True, num_samples=70, generator=g))
    assert len(r) == 70 and set(r) <= set(range(5))
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2


@pytest.mark.parametrize("num_workers", [1, 3])
def test_workers_match_single_threaded(num_workers):
    kw = dict(batch_size=3, shuffle=True)
    ref = _batches(DataLoader(_ds(20), generator=clgrad.Generator().manual_seed(7), **kw))
    loader = DataLoader(_ds(20), generator=clgrad.Generator().manual_seed(7), num_workers=num_workers,
                        pin_memory=True, **kw)
    assert _batches(loader) == ref
    stream = DataLoader(_Stream(11), batch_size=4, num_workers=num_workers, prefetch_factor=1)
    assert [b.tolist() for b in stream] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    for _b in DataLoader(_ds(20), batch_size=2, num_workers=num_workers):  # breaking early must not hang
        break


def test_worker_errors_surface():
    class BadMap:
        def __getitem__(self, i):
            raise KeyError("boom")

        def __len__(self):
            return 4
    with pytest.raises(KeyError, match="boom"):
        list(DataLoader(BadMap(), batch_size=2, num_workers=2))

    class BadStream(IterableDataset):
        def __iter__(self):
            yield 1
            raise KeyError("boom")
    with pytest.raises(KeyError, match="boom"):
        list(DataLoader(BadStream(), num_workers=1))


Point = collections.namedtuple("Point", "x y")


def test_default_collate_nested():
    batch = [{"img": np.full((2,), i, np.float32), "label": i, "w": 0.5 * i, "name": f"s{i}",
              "pair": (clgrad.tensor([i, i]), Point(i, True)), "lst": [i, 2 * i]} for i in range(3)]
    out = default_collate(batch)
    assert out["img"].dtype is clgrad.float32 and out["img"].shape == (3, 2)
    assert out["label"].dtype is clgrad.int64 and out["label"].tolist() == [0, 1, 2]
    assert out["w"].dtype is clgrad.float64 and out["w"].tolist() == [0.0, 0.5, 1.0]
    assert out["name"] == ["s0", "s1", "s2"]
    assert isinstance(out["pair"], list) and out["pair"][0].tolist() == [[0, 0], [1, 1], [2, 2]]
    assert isinstance(out["pair"][1], Point) and out["pair"][1].y.dtype is clgrad.bool
    assert [t.tolist() for t in out["lst"]] == [[0, 1, 2], [0, 2, 4]]
    assert default_collate([np.int32(1), np.int32(2)]).dtype is clgrad.int32
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object()])


def test_default_collate_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as tcollate
    batch = [(i, 1.5 * i, np.arange(3) + i, "a") for i in range(4)]
    ours, theirs = default_collate(batch), tcollate(batch)
    assert type(ours) is type(theirs) and ours[3] == theirs[3]
    for a, b in zip(ours[:3], theirs[:3]):
        assert a.tolist() == b.tolist() and str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]


def test_datasets():
    ds = _ds(6)
    assert [t.item() for t in ds[2]] == [2, 20] and len(ds) == 6
    sub = Subset(ds, [4, 1])
    assert len(sub) == 2 and sub[0][0].item() == 4
    cat = ConcatDataset([range(3), range(10, 12)])
    assert len(cat) == 5 and [cat[i] for i in range(5)] == [0, 1, 2, 10, 11] and cat[-1] == 11
    assert len(_ds(2) + _ds(3)) == 5
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-6]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(clgrad.zeros(3), clgrad.zeros(4))
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([_Stream(3)])


def test_random_split():
    parts = random_split(range(10), [3, 7], generator=clgrad.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(range(10), [3, 7], generator=clgrad.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])


@pytest.mark.parametrize("n,fractions", [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.7])])
def test_random_split_fraction_sizes_match_torch(n, fractions):
    pytest.importorskip("torch")
    from torch.utils.data import random_split as trs
    parts = random_split(range(n), fractions)
    assert [len(p) for p in parts] == [len(p) for p in trs(range(n), fractions)]
    assert sorted(i for p in parts for i in p) == list(range(n))


def _error_cases(S, B, ds, stream):
    seq = S(ds)
    return [
        (dict(batch_size=2, batch_sampler=B(seq, 2, False)), ValueError),
        (dict(shuffle=True, batch_sampler=B(seq, 2, False)), ValueError),
        (dict(drop_last=True, batch_sampler=B(seq, 2, False)), ValueError),
        (dict(shuffle=True, sampler=seq), ValueError),
        (dict(num_workers=-1), ValueError),
        (dict(prefetch_factor=2), ValueError),
        (dict(persistent_workers=True), ValueError),
        (dict(batch_size=None, drop_last=True), ValueError),
        (dict(dataset=stream, shuffle=True), ValueError),
    ]


def test_loader_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tud
    ours = _error_cases(SequentialSampler, BatchSampler, _ds(4), _Stream(3))
    theirs = _error_cases(tud.SequentialSampler, tud.BatchSampler, tud.TensorDataset(torch.arange(4)),
                          _TorchStream(torch, 3))
    for (kw, exc), (tkw, _) in zip(ours, theirs):
        with pytest.raises(exc) as e_ours:
            DataLoader(**{"dataset": _ds(4), **kw})
        with pytest.raises(exc) as e_theirs:
            tud.DataLoader(**{"dataset": tud.TensorDataset(torch.arange(4)), **tkw})
        assert str(e_ours.value).split("=")[0] == str(e_theirs.value).split("=")[0]
    for args in [(0, False), (2, 1)]:
        with pytest.raises(ValueError) as e_ours:
            BatchSampler(range(3), *args)
        with pytest.raises(ValueError) as e_theirs:
            tud.BatchSampler(range(3), *args)
        assert str(e_ours.value) == str(e_theirs.value)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)


def test_loader_on_device(device):
    ds = TensorDataset(clgrad.arange(6, device=device).reshape(3, 2), clgrad.arange(3, device=device))
    batches = list(DataLoader(ds, batch_size=2, num_workers=2))
    assert [str(b[0].device) for b in batches] == [str(clgrad.device(device))] * 2
    assert [b[0].tolist() for b in batches] == [[[0, 1], [2, 3]], [[4, 5]]]
    assert [b[1].tolist() for b in batches] == [[0, 1], [2]]


class _Logged:
    """A map dataset of nested samples that records when each index is fetched."""

    def __init__(self, n, log=None, fail_at=None):
        self.n, self.log, self.fail_at = n, log, fail_at

    def __getitem__(self, i):
        if i == self.fail_at:
            raise KeyError(f"bad sample {i}")
        if self.log is not None:
            self.log.append(("fetch", i))
        # no Python floats (they collate to float64, which some devices lack)
        return {"x": np.full((2, 3), i, np.float32), "pair": (i, Point(3 * i, f"s{i}"))}

    def __len__(self):
        return self.n


def _plain(batch, devices: set):
    """A batch as plain Python values (collecting each tensor's device), so two loaders' outputs compare."""
    if isinstance(batch, clgrad.Tensor):
        devices.add(str(batch.device))
        return str(batch.dtype), batch.tolist()
    if isinstance(batch, dict):
        return {k: _plain(v, devices) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch).__name__, [_plain(b, devices) for b in batch]
    return batch


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("stream", [False, True])
def test_device_prefetch_matches_host_path(device, num_workers, stream):
    def run(devices, **kw):
        if stream:
            loader = DataLoader(_Stream(11), batch_size=4, num_workers=num_workers, **kw)
            return [_plain(b, devices) for b in loader]
        gen = clgrad.Generator().manual_seed(3)
        loader = DataLoader(_Logged(11), batch_size=4, shuffle=True, generator=gen, num_workers=num_workers, **kw)
        return [[_plain(b, devices) for b in loader] for _epoch in range(2)]
    on_host, on_device = set(), set()
    ref = run(on_host)
    moved = run(on_device, device=device)
    assert moved == ref  # same order, types and values
    assert moved == run(set(), device=device)  # deterministic for a seed
    assert on_host == {"cpu"} and on_device == {str(clgrad.device(device))}


def test_device_prefetch_issues_next_copy_before_yielding(device):
    log: list = []
    loader = DataLoader(_Logged(6, log), batch_size=2, device=device)
    for b in loader:
        log.append(("use", int(b["pair"][0][0].item())))
    # batch i+1 is fetched (and its copy issued) before the consumer gets batch i
    assert log == [("fetch", 0), ("fetch", 1), ("fetch", 2), ("fetch", 3), ("use", 0), ("fetch", 4), ("fetch", 5),
                   ("use", 2), ("use", 4)]


def test_device_prefetch_errors_propagate(device, monkeypatch):
    # a failing sample: the batches before it still arrive, then its error
    got = []
    with pytest.raises(KeyError, match="bad sample 5"):
        for b in DataLoader(_Logged(8, fail_at=5), batch_size=2, device=device):
            got.append(b["pair"][0].tolist())
    assert got == [[0, 1], [2, 3]]
    with pytest.raises(KeyError, match="bad sample 1"):
        list(DataLoader(_Logged(8, fail_at=1), batch_size=2, num_workers=2, device=device))
    with pytest.raises(RuntimeError, match="Expected one of cpu"):
        DataLoader(_ds(4), device="tpu")
    if device == "cpu":
        return  # nothing is copied
    real = clgrad.Tensor.copy_

    def copy_failing_on_batch_2(self, src, non_blocking=False):
        if src.dtype is clgrad.float32 and src.shape[0] == 2 and src[0, 0, 0].item() == 4:
            raise RuntimeError("transfer failed")
        return real(self, src, non_blocking)
    monkeypatch.setattr(clgrad.Tensor, "copy_", copy_failing_on_batch_2)
    got = []
    with pytest.raises(RuntimeError, match="transfer failed"):
        for b in DataLoader(_Logged(8), batch_size=2, device=device):
            got.append(b["x"][:, 0, 0].tolist())
    assert got == [[0, 1], [2, 3]]


def test_device_prefetch_break_early_frees_and_stops(device):
    import threading
    loader = DataLoader(_Logged(40), batch_size=4, device=device)
    list(loader)  # warm the allocator's pool
    before = clgrad.opencl.memory_allocated(device) if device != "cpu" else 0
    for _ in range(3):
        for i, _b in enumerate(loader):
            if i == 2:
                break
    del _b
    assert not any(t.name.startswith("clgrad-h2d") for t in threading.enumerate())
    if device != "cpu":
        assert clgrad.opencl.memory_allocated(device) == before
