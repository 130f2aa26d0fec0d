"""A sweep of mistakes over the public API: wrong shapes and dtypes, out-of-range indices and dims, negative sizes,
NaN and inf where they are errors, non-tensor arguments, wrong keyword names and mixed devices.

Each case is one line: a call written against a module ``M`` (``clgrad`` or ``torch``). It must raise the exception
type PyTorch raises for the same call on its cpu (torch is the oracle when installed; cases it cannot run, such as
mixed devices, state the type). The nearest built-in class of both exceptions must be the same (a RuntimeError
subclass is not an IndexError). After every error the device must still compute correctly, and no call may hang.
"""
from __future__ import annotations

import math
import signal
from contextlib import contextmanager

import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")

NAN, INF = math.nan, math.inf


def _f(M):
    return M.nn.functional


def _t(M, d, data, dtype=None):
    return M.tensor(data, dtype=None if dtype is None else getattr(M, dtype), device=d)


# (id, call(M, device)); the expected type is what torch raises for call(torch, "cpu")
CASES = [
    # ---- wrong shapes
    ("add-broadcast", lambda M, d: M.ones(2, 3, device=d) + M.ones(4, device=d)),
    ("mul-broadcast-inplace", lambda M, d: M.ones(3, device=d).mul_(M.ones(2, 3, device=d))),
    ("matmul-inner", lambda M, d: M.ones(2, 3, device=d) @ M.ones(4, 5, device=d)),
    ("matmul-0d", lambda M, d: M.matmul(M.tensor(1.0, device=d), M.ones(3, device=d))),
    ("mm-1d", lambda M, d: M.mm(M.ones(3, device=d), M.ones(3, device=d))),
    ("bmm-2d", lambda M, d: M.bmm(M.ones(2, 3, device=d), M.ones(3, 2, device=d))),
    ("bmm-batch", lambda M, d: M.bmm(M.ones(2, 2, 3, device=d), M.ones(3, 3, 2, device=d))),
    ("dot-length", lambda M, d: M.dot(M.ones(3, device=d), M.ones(4, device=d))),
    ("view-numel", lambda M, d: M.ones(2, 3, device=d).view(4)),
    ("view-noncontig", lambda M, d: M.ones(2, 3, device=d).t().view(6)),
    ("reshape-numel", lambda M, d: M.ones(6, device=d).reshape(4, -1)),
    ("reshape-two-inferred", lambda M, d: M.ones(6, device=d).reshape(-1, -1)),
    ("expand-smaller", lambda M, d: M.ones(3, device=d).expand(2)),
    ("cat-shapes", lambda M, d: M.cat([M.ones(2, 3, device=d), M.ones(2, 4, device=d)])),
    ("cat-empty-list", lambda M, d: M.cat([])),
    ("stack-shapes", lambda M, d: M.stack([M.ones(2, device=d), M.ones(3, device=d)])),
    ("where-broadcast", lambda M, d: M.where(M.ones(2, device=d) > 0, M.ones(3, device=d), M.ones(2, device=d))),
    ("conv2d-channels", lambda M, d: _f(M).conv2d(M.ones(1, 3, 5, 5, device=d), M.ones(2, 4, 3, 3, device=d))),
    ("conv2d-weight-ndim", lambda M, d: _f(M).conv2d(M.ones(1, 3, 5, 5, device=d), M.ones(2, 3, 3, device=d))),
    ("conv2d-kernel-too-big", lambda M, d: _f(M).conv2d(M.ones(1, 1, 2, 2, device=d), M.ones(1, 1, 3, 3, device=d))),
    ("conv2d-groups", lambda M, d: _f(M).conv2d(M.ones(1, 3, 5, 5, device=d), M.ones(2, 1, 3, 3, device=d), groups=2)),
    ("linear-features", lambda M, d: _f(M).linear(M.ones(2, 3, device=d), M.ones(4, 5, device=d))),
    ("max-pool-too-big", lambda M, d: _f(M).max_pool2d(M.ones(1, 1, 2, 2, device=d), 3)),
    ("max-pool-padding", lambda M, d: _f(M).max_pool2d(M.ones(1, 1, 4, 4, device=d), 2, padding=2)),
    ("nll-batch", lambda M, d: _f(M).nll_loss(M.ones(3, 5, device=d), M.zeros(2, dtype=M.int64, device=d))),
    ("cross-entropy-batch", lambda M, d: _f(M).cross_entropy(M.ones(3, 5, device=d), M.zeros(4, dtype=M.int64, device=d))),
    ("mse-numel", lambda M, d: _f(M).mse_loss(M.ones(3, device=d), M.ones(4, device=d))),
    ("layer-norm-shape", lambda M, d: _f(M).layer_norm(M.ones(2, 3, device=d), (4,))),
    ("batch-norm-running", lambda M, d: _f(M).batch_norm(M.ones(2, 3, device=d), M.zeros(4, device=d), M.ones(4, device=d))),
    ("embedding-weight-1d", lambda M, d: _f(M).embedding(M.zeros(2, dtype=M.int64, device=d), M.ones(5, device=d))),
    ("index-put-shape", lambda M, d: M.zeros(4, device=d).index_put_((M.tensor([0, 1], device=d),), M.ones(3, device=d))),
    ("setitem-shape", lambda M, d: M.zeros(4, 2, device=d).__setitem__(slice(0, 2), M.ones(3, device=d))),
    ("masked-select-shape", lambda M, d: M.masked_select(M.ones(3, device=d), M.ones(4, device=d) > 0)),
    ("item-many", lambda M, d: M.ones(2, device=d).item()),
    ("topk-k", lambda M, d: M.topk(M.ones(3, device=d), 4)),
    ("kthvalue-k", lambda M, d: M.kthvalue(M.ones(3, device=d), 4)),
    ("chunk-zero", lambda M, d: M.ones(3, device=d).chunk(0)),
    ("narrow-past-end", lambda M, d: M.ones(3, device=d).narrow(0, 2, 2)),
    ("split-sizes", lambda M, d: M.ones(5, device=d).split([2, 2])),
    ("unflatten-sizes", lambda M, d: M.ones(6, device=d).unflatten(0, (4, 2))),
    ("flatten-dims", lambda M, d: M.ones(2, 3, 4, device=d).flatten(2, 1)),
    ("permute-repeat", lambda M, d: M.ones(2, 3, device=d).permute(0, 0)),
    ("permute-count", lambda M, d: M.ones(2, 3, device=d).permute(0)),
    # ---- out-of-range dims and indices
    ("sum-dim", lambda M, d: M.ones(2, 3, device=d).sum(2)),
    ("softmax-dim", lambda M, d: _f(M).softmax(M.ones(2, 3, device=d), 3)),
    ("cumsum-dim", lambda M, d: M.cumsum(M.ones(2, device=d), -2)),
    ("transpose-dim", lambda M, d: M.ones(2, 3, device=d).transpose(0, 5)),
    ("unsqueeze-dim", lambda M, d: M.ones(2, device=d).unsqueeze(3)),
    ("squeeze-dim", lambda M, d: M.ones(2, device=d).squeeze(1)),
    ("select-index", lambda M, d: M.ones(2, 3, device=d).select(1, 3)),
    ("getitem-int", lambda M, d: M.ones(3, device=d)[3]),
    ("getitem-negative", lambda M, d: M.ones(3, device=d)[-4]),
    ("getitem-too-many", lambda M, d: M.ones(3, device=d)[0, 0]),
    ("getitem-tensor", lambda M, d: M.ones(3, device=d)[_t(M, d, [0, 3])]),
    ("getitem-tensor-negative", lambda M, d: M.ones(3, device=d)[_t(M, d, [-4])]),
    ("getitem-mask-shape", lambda M, d: M.ones(3, device=d)[M.ones(4, device=d) > 0]),
    ("setitem-tensor", lambda M, d: M.ones(3, device=d).__setitem__(_t(M, d, [5]), 1.0)),
    ("index-select", lambda M, d: M.index_select(M.ones(3, 2, device=d), 0, _t(M, d, [0, 3]))),
    ("index-select-dim", lambda M, d: M.index_select(M.ones(3, 2, device=d), 2, _t(M, d, [0]))),
    ("gather-index", lambda M, d: M.gather(M.ones(3, device=d), 0, _t(M, d, [0, 5]))),
    ("gather-dim", lambda M, d: M.gather(M.ones(3, device=d), 1, _t(M, d, [0]))),
    ("scatter-index", lambda M, d: M.zeros(3, device=d).scatter(0, _t(M, d, [4]), M.ones(1, device=d))),
    ("scatter-add-index", lambda M, d: M.zeros(3, device=d).scatter_add(0, _t(M, d, [-1]), M.ones(1, device=d))),
    ("index-add-index", lambda M, d: M.zeros(3, device=d).index_add(0, _t(M, d, [3]), M.ones(1, device=d))),
    ("index-put-index", lambda M, d: M.zeros(3, device=d).index_put_((_t(M, d, [7]),), M.ones(1, device=d))),
    ("index-put-accumulate", lambda M, d: M.zeros(3, device=d).index_put_((_t(M, d, [3]),), M.ones(1, device=d),
                                                                         accumulate=True)),
    ("embedding-index", lambda M, d: _f(M).embedding(_t(M, d, [0, 5]), M.ones(5, 2, device=d))),
    ("embedding-negative", lambda M, d: _f(M).embedding(_t(M, d, [-1]), M.ones(5, 2, device=d))),
    ("nll-target", lambda M, d: _f(M).nll_loss(M.zeros(2, 3, device=d), _t(M, d, [0, 3]))),
    ("nll-target-negative", lambda M, d: _f(M).nll_loss(M.zeros(2, 3, device=d), _t(M, d, [0, -2]))),
    ("cross-entropy-target", lambda M, d: _f(M).cross_entropy(M.zeros(2, 3, device=d), _t(M, d, [9, 0]))),
    ("one-hot-classes", lambda M, d: _f(M).one_hot(_t(M, d, [0, 3]), 3)),
    ("take-along-dim", lambda M, d: M.take_along_dim(M.ones(3, device=d), _t(M, d, [3]))),
    ("bincount-negative", lambda M, d: M.bincount(_t(M, d, [0, -1]))),
    ("max-empty", lambda M, d: M.ones(0, device=d).max()),
    ("argmax-empty", lambda M, d: M.ones(0, device=d).argmax()),
    ("amax-empty-dim", lambda M, d: M.ones(0, 3, device=d).amax(0)),
    # ---- negative and invalid sizes
    ("zeros-negative", lambda M, d: M.zeros(-1, device=d)),
    ("empty-negative", lambda M, d: M.empty(2, -3, device=d)),
    ("ones-negative-tuple", lambda M, d: M.ones((-1,), device=d)),
    ("full-negative", lambda M, d: M.full((-2,), 1.0, device=d)),
    ("rand-negative", lambda M, d: M.rand(-2, device=d)),
    ("randn-negative", lambda M, d: M.randn(3, -1, device=d)),
    ("randint-negative", lambda M, d: M.randint(0, 5, (-1,), device=d)),
    ("randperm-negative", lambda M, d: M.randperm(-1, device=d)),
    ("eye-negative", lambda M, d: M.eye(-1, device=d)),
    ("linspace-negative", lambda M, d: M.linspace(0, 1, -1, device=d)),
    ("arange-zero-step", lambda M, d: M.arange(0, 10, 0, device=d)),
    ("arange-wrong-sign", lambda M, d: M.arange(10, 0, 1, device=d)),
    ("view-negative", lambda M, d: M.ones(4, device=d).view(-2, 2)),
    ("expand-negative", lambda M, d: M.ones(1, device=d).expand(-2)),
    ("repeat-negative", lambda M, d: M.ones(2, device=d).repeat(-1)),
    ("new-zeros-negative", lambda M, d: M.ones(2, device=d).new_zeros(-1)),
    ("randint-empty-range", lambda M, d: M.randint(5, 1, (3,), device=d)),
    ("ragged-list", lambda M, d: M.tensor([[1, 2], [3]], device=d)),
    # ---- wrong dtypes
    ("bitwise-and-float", lambda M, d: M.bitwise_and(M.ones(2, device=d), M.ones(2, device=d))),
    ("bitwise-not-float", lambda M, d: ~M.ones(2, device=d)),
    ("shift-float", lambda M, d: M.ones(2, device=d) << 1),
    ("matmul-mixed-dtypes", lambda M, d: M.ones(2, 2, device=d) @ M.ones(2, 2, dtype=M.int64, device=d)),
    ("mm-bool", lambda M, d: M.mm(M.ones(2, 2, dtype=M.bool, device=d), M.ones(2, 2, dtype=M.bool, device=d))),
    ("where-float-cond", lambda M, d: M.where(M.ones(2, device=d), M.ones(2, device=d), M.zeros(2, device=d))),
    ("masked-fill-float-mask", lambda M, d: M.ones(2, device=d).masked_fill(M.ones(2, device=d), 0.0)),
    ("index-float", lambda M, d: M.ones(3, device=d)[M.ones(1, device=d)]),
    ("index-select-float", lambda M, d: M.index_select(M.ones(3, device=d), 0, M.zeros(1, device=d))),
    ("embedding-float-index", lambda M, d: _f(M).embedding(M.zeros(2, device=d), M.ones(5, 2, device=d))),
    ("nll-float-target", lambda M, d: _f(M).nll_loss(M.zeros(2, 3, device=d), M.zeros(2, device=d))),
    ("mean-int", lambda M, d: M.ones(2, dtype=M.int64, device=d).mean()),
    ("softmax-int", lambda M, d: _f(M).softmax(M.ones(2, dtype=M.int64, device=d), 0)),
    ("rand-int-dtype", lambda M, d: M.rand(3, dtype=M.int64, device=d)),
    ("randn-int-dtype", lambda M, d: M.randn(3, dtype=M.int64, device=d)),
    ("normal-int", lambda M, d: M.ones(2, dtype=M.int64, device=d).normal_()),
    ("add-inplace-float-into-int", lambda M, d: M.ones(2, dtype=M.int64, device=d).add_(1.5)),
    ("sub-bool", lambda M, d: M.ones(2, dtype=M.bool, device=d) - M.ones(2, dtype=M.bool, device=d)),
    ("neg-bool", lambda M, d: -M.ones(2, dtype=M.bool, device=d)),
    ("requires-grad-int", lambda M, d: M.ones(2, dtype=M.int64, device=d).requires_grad_()),
    ("pow-negative-int", lambda M, d: M.ones(2, dtype=M.int64, device=d) ** -1),
    # ---- NaN and inf where they are errors
    ("bernoulli-nan-p", lambda M, d: M.ones(3, device=d).bernoulli_(NAN)),
    ("bernoulli-p-above-1", lambda M, d: M.ones(3, device=d).bernoulli_(1.5)),
    ("bernoulli-nan-probs", lambda M, d: M.bernoulli(_t(M, d, [0.5, NAN]))),
    ("normal-nan-std", lambda M, d: M.normal(0.0, NAN, (3,), device=d)),
    ("normal-negative-std", lambda M, d: M.normal(M.zeros(3, device=d), -1.0)),
    ("normal-tensor-nan-std", lambda M, d: M.normal(M.zeros(2, device=d), _t(M, d, [1.0, NAN]))),
    ("uniform-inf-to", lambda M, d: M.ones(3, device=d).uniform_(0, INF)),
    ("uniform-from-above-to", lambda M, d: M.ones(3, device=d).uniform_(2, 1)),
    ("exponential-nan", lambda M, d: M.ones(3, device=d).exponential_(NAN)),
    ("exponential-negative", lambda M, d: M.ones(3, device=d).exponential_(-1.0)),
    ("arange-inf", lambda M, d: M.arange(0, INF, device=d)),
    ("arange-nan", lambda M, d: M.arange(0, NAN, device=d)),
    ("full-int-nan", lambda M, d: M.full((2,), NAN, dtype=M.int64, device=d)),
    ("fill-int-inf", lambda M, d: M.zeros(2, dtype=M.int64, device=d).fill_(INF)),
    ("tensor-int-nan", lambda M, d: M.tensor([NAN], dtype=M.int64, device=d)),
    ("dropout-p-nan", lambda M, d: _f(M).dropout(M.ones(3, device=d), NAN)),
    ("dropout-p-above-1", lambda M, d: _f(M).dropout(M.ones(3, device=d), 1.5)),
    ("sgd-negative-lr", lambda M, d: M.optim.SGD([M.ones(2, device=d, requires_grad=True)], lr=-0.1)),
    ("sgd-nesterov-no-momentum", lambda M, d: M.optim.SGD([M.ones(2, device=d, requires_grad=True)], lr=0.1,
                                                          nesterov=True)),
    ("adam-beta", lambda M, d: M.optim.Adam([M.ones(2, device=d, requires_grad=True)], betas=(1.0, 0.9))),
    ("adam-negative-eps", lambda M, d: M.optim.Adam([M.ones(2, device=d, requires_grad=True)], eps=-1.0)),
    ("clamp-no-bounds", lambda M, d: M.clamp(M.ones(2, device=d))),
    # ---- non-tensor arguments
    ("add-string", lambda M, d: M.add(M.ones(2, device=d), "a")),
    ("radd-string", lambda M, d: "a" + M.ones(2, device=d)),
    ("sum-list", lambda M, d: M.sum([1, 2])),
    ("matmul-list", lambda M, d: M.matmul(M.ones(2, 2, device=d), [[1.0], [1.0]])),
    ("cat-tensor", lambda M, d: M.cat(M.ones(2, device=d))),
    ("cat-numbers", lambda M, d: M.cat([1, 2])),
    ("relu-float", lambda M, d: _f(M).relu(3.0)),
    ("conv2d-string-weight", lambda M, d: _f(M).conv2d(M.ones(1, 1, 3, 3, device=d), "w")),
    ("view-string", lambda M, d: M.ones(2, device=d).view("a")),
    ("zeros-string", lambda M, d: M.zeros("3", device=d)),
    ("zeros-float-size", lambda M, d: M.zeros(2.5, device=d)),
    ("tensor-object", lambda M, d: M.tensor(object(), device=d)),
    ("to-bad-device", lambda M, d: M.ones(2).to("gpu:0")),
    ("linear-string", lambda M, d: M.nn.Linear("a", 3)),
    ("sgd-not-params", lambda M, d: M.optim.SGD(M.ones(2, device=d, requires_grad=True), lr=0.1)),
    ("index-float-scalar", lambda M, d: M.ones(3, device=d)[1.5]),
    ("gather-list-index", lambda M, d: M.gather(M.ones(3, device=d), 0, [0])),
    ("generator-string", lambda M, d: M.rand(2, generator="g", device=d)),
    # ---- wrong keyword names
    ("sum-dims-kw", lambda M, d: M.sum(M.ones(2, device=d), dims=0)),
    ("ones-devices-kw", lambda M, d: M.ones(2, devices=d)),
    ("softmax-dimension-kw", lambda M, d: _f(M).softmax(M.ones(2, device=d), dimension=0)),
    ("linear-bias-kw", lambda M, d: M.nn.Linear(3, 4, bias_=False)),
    ("sgd-learning-rate-kw", lambda M, d: M.optim.SGD([M.ones(2, device=d, requires_grad=True)], learning_rate=0.1)),
    ("randn-generatr-kw", lambda M, d: M.randn(2, generatr=None, device=d)),
    ("conv2d-stide-kw", lambda M, d: _f(M).conv2d(M.ones(1, 1, 3, 3, device=d), M.ones(1, 1, 2, 2, device=d),
                                                  stide=1)),
    ("tensor-method-kw", lambda M, d: M.ones(2, device=d).sum(keep_dim=True)),
    ("matmul-kw", lambda M, d: M.matmul(M.ones(2, device=d), other2=M.ones(2, device=d))),
    # ---- a list, tuple or number where a tensor belongs (more of them)
    ("cumsum-list", lambda M, d: M.cumsum([1], 0)),
    ("sort-list", lambda M, d: M.sort([1.0])),
    ("mean-tuple", lambda M, d: M.mean((1.0, 2.0))),
    ("argmax-list", lambda M, d: M.argmax([1])),
    ("flip-list", lambda M, d: M.flip([1], (0,))),
    ("index-select-list", lambda M, d: M.index_select([1.0], 0, M.zeros(1, dtype=M.int64, device=d))),
    ("softmax-list", lambda M, d: M.softmax([1.0], 0)),
    ("layer-norm-list", lambda M, d: _f(M).layer_norm([1.0], (1,))),
    ("embedding-list", lambda M, d: _f(M).embedding([0], M.ones(2, 2, device=d))),
    ("nll-list", lambda M, d: _f(M).nll_loss([[0.0]], M.zeros(1, dtype=M.int64, device=d))),
    ("dropout-list", lambda M, d: _f(M).dropout([1.0])),
    ("pad-list", lambda M, d: _f(M).pad([1.0], (1, 1))),
    ("zeros-like-list", lambda M, d: M.zeros_like([1.0])),
    ("rand-like-list", lambda M, d: M.rand_like([1.0])),
]
# Cases clgrad still gets wrong, each with where the fix belongs; strict, so a fix makes them fail until removed
XFAIL: dict = {}

# Mixed devices (torch's cpu build cannot run these): PyTorch raises RuntimeError for each
MIXED = [
    ("add", lambda M, a, b: M.ones(2, device=a) + M.ones(2, device=b)),
    ("add-inplace", lambda M, a, b: M.ones(2, device=a).add_(M.ones(2, device=b))),
    ("matmul", lambda M, a, b: M.ones(2, 2, device=a) @ M.ones(2, 2, device=b)),
    ("cat", lambda M, a, b: M.cat([M.ones(2, device=a), M.ones(2, device=b)])),
    ("where", lambda M, a, b: M.where(M.ones(2, device=b) > 0, M.ones(2, device=a), M.ones(2, device=a))),
    ("conv2d", lambda M, a, b: _f(M).conv2d(M.ones(1, 1, 3, 3, device=a), M.ones(1, 1, 2, 2, device=b))),
    ("linear", lambda M, a, b: _f(M).linear(M.ones(2, 3, device=a), M.ones(4, 3, device=b))),
    ("embedding", lambda M, a, b: _f(M).embedding(M.zeros(2, dtype=M.int64, device=b), M.ones(3, 2, device=a))),
    ("nll-loss", lambda M, a, b: _f(M).nll_loss(M.zeros(2, 3, device=a), M.zeros(2, dtype=M.int64, device=b))),
    ("gather", lambda M, a, b: M.gather(M.ones(3, device=a), 0, M.zeros(1, dtype=M.int64, device=b))),
    ("sgd-step", lambda M, a, b: _sgd_with_grad_on(M, a, b)),
]


def _sgd_with_grad_on(M, a, b):
    p = M.ones(2, device=a, requires_grad=True)
    p.grad = M.ones(2, device=b)


def _builtin(exc_type: type) -> type:
    """The nearest built-in class of an exception type (torch.OutOfMemoryError -> RuntimeError)."""
    return next(c for c in exc_type.__mro__ if c.__module__ == "builtins")


def _torch_raises(call) -> type:
    try:
        call(torch, "cpu")
    except Exception as exc:  # noqa: BLE001 - the point is to learn its type
        return _builtin(type(exc))
    raise AssertionError("torch does not raise for this case: it is not a mistake in PyTorch's API")


@contextmanager
def _deadline(seconds: int):
    """Fail instead of hanging: SIGALRM interrupts a call that takes longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"the call did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _still_works(device) -> None:
    """The device computes correctly after an error: a small elementwise op, a reduction and a matmul."""
    a = clgrad.arange(6, device=device).reshape(2, 3).float()
    np.testing.assert_array_equal(np.asarray((a @ a.t()).cpu().numpy()), [[5, 14], [14, 50]])
    assert (a * 2 + 1).sum().item() == 36
    np.testing.assert_array_equal(np.asarray(a[clgrad.tensor([1, 0], device=device)].cpu().numpy()),
                                  [[3, 4, 5], [0, 1, 2]])


def _check_raises(call, expected: type, device) -> None:
    with _deadline(60):
        with pytest.raises(Exception) as info:  # noqa: B017 - the type is checked below, with a better message
            call()
            if device != "cpu":  # device-side bounds checks (nll, cross-entropy, embedding) report at the next sync
                clgrad.opencl.synchronize(device)
    got = info.value
    assert not isinstance(got, (TimeoutError, AssertionError)), f"{type(got).__name__}: {got}"
    assert _builtin(type(got)) is expected, (
        f"raised {type(got).__name__} ({_builtin(type(got)).__name__}), PyTorch raises {expected.__name__}: {got}")
    assert str(got), "the error says nothing"
    _still_works(device)


def _params(cases):
    return [pytest.param(name, call, id=name, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[name])]
                         if name in XFAIL else []) for name, call in cases]


@pytest.mark.filterwarnings("ignore::UserWarning")  # some mistakes warn before they raise (mse-numel), in torch too
@pytest.mark.parametrize("name, call", _params(CASES))
def test_bad_input(device, name, call):
    expected = _torch_raises(call)
    _check_raises(lambda: call(clgrad, device), expected, device)


def _other_device(device):
    if device != "cpu":
        return "cpu"
    usable = [d for d in clgrad.backends.opencl.runtime.devices() if d.usable and not d.props.is_simulator]
    if not usable:
        pytest.skip("needs an OpenCL device")
    return f"opencl:{usable[0].index}"


@pytest.mark.parametrize("name, call", _params(MIXED))
def test_mixed_devices(device, name, call):
    other = _other_device(device)
    _check_raises(lambda: call(clgrad, device, other), RuntimeError, device)
    _still_works(other)


def test_cpu_scalars_and_indices_mix_with_any_device(device):
    """What PyTorch allows across devices: 0-d cpu tensors as scalars, and cpu index tensors."""
    x = clgrad.arange(4, device=device).float()
    np.testing.assert_array_equal(np.asarray((x + clgrad.tensor(1.0)).cpu().numpy()), [1, 2, 3, 4])
    np.testing.assert_array_equal(np.asarray(x[clgrad.tensor([3, 0])].cpu().numpy()), [3, 0])
