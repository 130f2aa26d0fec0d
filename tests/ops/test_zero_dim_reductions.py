"""Every reduction, scan and dim-taking op on a 0-d tensor with dim=0 / dim=-1 (torch treats both as valid),
keepdim True and False: forward values, shapes and dtypes, and the gradient, against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import grad_precision

import clgrad

torch = pytest.importorskip("torch")


def _f(m):
    return m.nn.functional


# name -> fn(module, x, dim, keepdim): the op as clgrad and torch spell it alike; the first output is compared
# (tuples: every output)
OPS = {
    "sum": lambda m, x, d, k: m.sum(x, d, keepdim=k),
    "sum_tuple": lambda m, x, d, k: x.sum((d,), keepdim=k),
    "mean": lambda m, x, d, k: x.mean(d, keepdim=k),
    "prod": lambda m, x, d, k: m.prod(x, d, keepdim=k),
    "amax": lambda m, x, d, k: x.amax(d, keepdim=k),
    "amin": lambda m, x, d, k: m.amin(x, d, keepdim=k),
    "max_dim": lambda m, x, d, k: tuple(m.max(x, d, keepdim=k)),
    "min_dim": lambda m, x, d, k: tuple(x.min(d, keepdim=k)),
    "aminmax": lambda m, x, d, k: tuple(m.aminmax(x, dim=d, keepdim=k)),
    "argmax": lambda m, x, d, k: x.argmax(d, keepdim=k),
    "argmin": lambda m, x, d, k: m.argmin(x, d, keepdim=k),
    "all": lambda m, x, d, k: x.all(d, keepdim=k),
    "any": lambda m, x, d, k: m.any(x, d, keepdim=k),
    "var": lambda m, x, d, k: x.var(d, keepdim=k, correction=0),
    "std": lambda m, x, d, k: m.std(x, d, keepdim=k, correction=0),
    "var_mean": lambda m, x, d, k: tuple(m.var_mean(x, d, keepdim=k, correction=0)),
    "std_mean": lambda m, x, d, k: m.std_mean(x, d, keepdim=k)[1],  # std is nan (dof 0): its gradient unused
    "nansum": lambda m, x, d, k: m.nansum(x, d, keepdim=k),
    "nanmean": lambda m, x, d, k: x.nanmean(d, keepdim=k),
    "logsumexp": lambda m, x, d, k: m.logsumexp(x, d, keepdim=k),
    "norm": lambda m, x, d, k: m.norm(x, 2, d, keepdim=k),
    "norm_inf": lambda m, x, d, k: x.norm(float("inf"), d, keepdim=k),
    "count_nonzero": lambda m, x, d, k: m.count_nonzero(x, d),
    "cumsum": lambda m, x, d, k: m.cumsum(x, d),
    "cumprod": lambda m, x, d, k: x.cumprod(d),
    "softmax": lambda m, x, d, k: _f(m).softmax(x, d),
    "log_softmax": lambda m, x, d, k: x.log_softmax(d),
    "normalize": lambda m, x, d, k: _f(m).normalize(x, dim=d),
    "median": lambda m, x, d, k: tuple(m.median(x, d, keepdim=k)),
    "sort": lambda m, x, d, k: tuple(m.sort(x, d)),
    "argsort": lambda m, x, d, k: x.argsort(d),
    "topk": lambda m, x, d, k: tuple(m.topk(x, 1, d)),
    "kthvalue": lambda m, x, d, k: tuple(m.kthvalue(x, 1, d, keepdim=k)),
    "transpose": lambda m, x, d, k: x.transpose(d, 0),
    "unsqueeze": lambda m, x, d, k: x.unsqueeze(d),
    "squeeze": lambda m, x, d, k: x.squeeze(d),
    "flip": lambda m, x, d, k: m.flip(x, (d,)),
    "roll": lambda m, x, d, k: m.roll(x, 1, d),
    "narrow": lambda m, x, d, k: x.unsqueeze(0).narrow(d, 0, 1),
    "index_select": lambda m, x, d, k: x.index_select(d, m.tensor([0], device=x.device)),
    "gather": lambda m, x, d, k: x.gather(d, m.tensor(0, device=x.device)),
}


def _outputs(r):
    return r if isinstance(r, tuple) else (r,)


def _run(m, fn, x, dim, keepdim):
    try:
        return _outputs(fn(m, x, dim, keepdim)), None
    except Exception as e:  # noqa: BLE001 - the error's type is compared with torch's
        return None, e


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", list(OPS))
def test_zero_dim(device, name, dim, keepdim):
    dtype, _ = grad_precision(device)
    tx = torch.tensor(1.5, dtype=getattr(torch, dtype), requires_grad=True)
    cx = clgrad.tensor(1.5, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, terr = _run(torch, OPS[name], tx, dim, keepdim)
        got, cerr = _run(clgrad, OPS[name], cx, dim, keepdim)
    if terr is not None:
        assert cerr is not None and type(cerr) is type(terr), f"torch raised {terr!r}, clgrad gave {cerr or got!r}"
        return
    assert cerr is None, f"clgrad raised {cerr!r}"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert g.dtype.np == w.detach().numpy().dtype
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-6)
    diff = [(g, w) for g, w in zip(got, want) if w.requires_grad]
    if not diff:
        return
    seeds = [2.0 + i for i in range(len(diff))]
    torch.autograd.backward([w.sum() * s for (_, w), s in zip(diff, seeds)])
    clgrad.autograd.backward([g.sum() * s for (g, _), s in zip(diff, seeds)])
    np.testing.assert_allclose(cx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)


def test_zero_dim_tuple_dims(device):
    """A repeated dim is an error on 0-d tensors too; an empty tuple means all dims."""
    x = clgrad.tensor(2.0, device=device)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, -1))
    assert x.sum(()).item() == 2.0


@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_nansum_nanmean(device, dim, keepdim):
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan], [0.5, -1.0, 3.0]], np.float32)
    for name in ("nansum", "nanmean"):
        want = getattr(torch, name)(torch.tensor(a, requires_grad=True), dim, keepdim)
        x = clgrad.tensor(a, device=device, requires_grad=True)
        got = getattr(clgrad, name)(x, dim, keepdim)
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-6)
        got.sum().backward()
        grad = x.grad.cpu().numpy()
        # torch's gradient is nan at the NaNs of an all-NaN nanmean row (inf * 0); clgrad's is 0 there
        assert np.isfinite(grad).all() and (grad[np.isnan(a)] == 0).all()
        ok = ~np.isnan(a)
        tx = torch.tensor(a, requires_grad=True)
        getattr(torch, name)(tx, dim, keepdim).sum().backward()
        np.testing.assert_allclose(grad[ok], tx.grad.numpy()[ok], rtol=1e-6)
    assert clgrad.nansum(clgrad.tensor([1, 2], device=device)).dtype is clgrad.int64
    with pytest.raises(RuntimeError, match="expected input to have floating point"):
        clgrad.nanmean(clgrad.tensor([1, 2], device=device))
