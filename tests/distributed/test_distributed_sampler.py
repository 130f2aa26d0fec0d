"""DistributedSampler hands every rank exactly the indices PyTorch's does."""
from __future__ import annotations

import itertools

import pytest

import clgrad.distributed as dist
from clgrad.utils.data.distributed import DistributedSampler, torch_randperm

torch = pytest.importorskip("torch")
import torch.utils.data.distributed as tdist  # noqa: E402

# (dataset length, replicas): even, uneven, tiny, and more replicas than samples (padding repeats the data)
SIZES = [(10, 2), (11, 3), (7, 4), (1, 3), (2, 5), (64, 8), (0, 2)]


@pytest.mark.parametrize("n,replicas", SIZES)
@pytest.mark.parametrize("shuffle,drop_last", list(itertools.product([True, False], [True, False])))
def test_matches_torch(n, replicas, shuffle, drop_last):
    data = list(range(n))
    for rank, seed, epoch in itertools.product(range(replicas), (0, 7), (0, 3)):
        ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
        ref = tdist.DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
        ours.set_epoch(epoch)
        ref.set_epoch(epoch)
        assert list(ours) == list(ref), (rank, seed, epoch)
        assert len(ours) == len(ref)


@pytest.mark.parametrize("n", [1, 2, 3, 100, 60000])
@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5])
def test_randperm_is_torchs(n, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    assert torch_randperm(n, seed) == torch.randperm(n, generator=g).tolist()


def test_ranks_partition_the_epoch():
    shares = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert set(sum(shares, [])) == set(range(10)) and all(len(s) == 4 for s in shares)


@pytest.mark.parametrize("rank", [-1, 3])
def test_invalid_rank(rank):
    with pytest.raises(ValueError, match=r"Invalid rank .*rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), num_replicas=3, rank=rank)


def test_needs_a_process_group():
    if dist.is_initialized():
        pytest.skip("a process group is active in this interpreter")
    with pytest.raises(RuntimeError, match="Default process group has not been initialized|Requires distributed package"):
        DistributedSampler(range(5))
