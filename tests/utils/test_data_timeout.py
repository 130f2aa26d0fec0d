"""Issue 19 item 11: ``DataLoader(timeout=...)`` bounds the wait for a worker's batch, as in PyTorch."""
from __future__ import annotations

import threading
import time

import pytest

import clgrad
from clgrad.utils.data import DataLoader, Dataset, IterableDataset


class _Stuck(Dataset):
    """Item ``stuck`` blocks until released (a worker hung on I/O); the others are instant."""

    def __init__(self, n: int = 4, stuck: int = 1):
        self.n, self.stuck, self.release = n, stuck, threading.Event()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.stuck:
            self.release.wait(10)
        return clgrad.tensor([float(i)])


class _StuckStream(IterableDataset):
    def __init__(self):
        self.release = threading.Event()

    def __iter__(self):
        yield clgrad.tensor([0.0])
        self.release.wait(10)
        yield clgrad.tensor([1.0])


@pytest.mark.parametrize("make", [_Stuck, _StuckStream], ids=["map", "iterable"])
def test_stuck_worker_times_out(make):
    ds = make()
    it = iter(DataLoader(ds, batch_size=1, num_workers=2, timeout=1))
    try:
        assert next(it).tolist() == [[0.0]]  # batches that arrive in time are yielded
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 1 seconds$"):
            next(it)
        assert 0.9 < time.monotonic() - start < 3, "the wait was not bounded by the 1 s timeout"
    finally:
        ds.release.set()  # let the stuck thread go


def test_timeout_is_per_batch():
    """A slow but not stuck loader finishes: each batch gets its own ``timeout``, not the whole epoch."""
    class Slow(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            time.sleep(0.2)
            return i

    assert [b.tolist() for b in DataLoader(Slow(), batch_size=2, num_workers=1, timeout=1)] == [[0, 1], [2, 3]]


def test_timeout_errors_match_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(list(range(4)), timeout=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        torch.utils.data.DataLoader(list(range(4)), timeout=-1)
    # PyTorch's single-process iterator refuses a timeout with an AssertionError when iteration starts
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(torch.utils.data.DataLoader(list(range(4)), timeout=1))
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(list(range(4)), timeout=1))
