"""NN functional ops against PyTorch (the oracle, skipped when absent): the softmax family, losses, embedding,
dropout, normalization and linear; forward values, gradients, node names, gradcheck in float64, PyTorch's
errors; and one compact Oclgrind case that runs every kernel of the family at tiny and odd sizes."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck
from tests.backends.test_oclgrind import ERROR_MARKERS
from tests.conftest import fp64_ok
from tests.helpers import assert_close, make

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = {"float16": (3e-3, 3e-3), "float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}


def _skip_fp64(device, dtype="float64"):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")


def _close(got, expected, dtype=None, rtol=None, atol=None):
    expected = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    r, a = TOL.get(dtype or expected.dtype.name, (None, None))
    assert_close(got, expected, rtol=rtol or r, atol=atol or a)


def check(fn, tfn, arrays, device, layouts=None, dtype=None, grad=True, rtol=None, atol=None):
    """``fn`` on clgrad tensors vs ``tfn`` on torch tensors: output, then the gradient of every float input
    for one random upstream gradient."""
    layouts = layouts or ["contiguous"] * len(arrays)
    xs = [make(a, device, lay) for a, lay in zip(arrays, layouts)]
    ts = [torch.tensor(a) for a in arrays]
    for x, t in zip(xs, ts):
        if grad and t.dtype.is_floating_point:
            x.requires_grad_(True)
            t.requires_grad_(True)
    out, expected = fn(*xs), tfn(*ts)
    _close(out, expected, dtype, rtol, atol)
    if not grad:
        return out
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(arrays[0].dtype)
    out.backward(clgrad.tensor(g, device=device))
    expected.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        if t.grad is not None:
            _close(x.grad, t.grad, dtype, rtol, atol)
    return out


def _rand(shape, dtype="float32", scale=3.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _leaf(a, device):
    return clgrad.tensor(a, device=device, requires_grad=True)


# ---- softmax / log_softmax ---------------------------------------------------------------------------
SOFTMAX_CASES = [  # (shape, dim, layout): last and non-last dims, short rows and long ones, one row, 0-dim
    ((4, 7), 1, "contiguous"), ((4, 7), 0, "transposed"), ((3, 5, 6), 1, "sliced"), ((3, 5, 6), -1, "offset"),
    ((2, 1000), 1, "contiguous"), ((1000, 3), 0, "contiguous"), ((2, 3, 300), 2, "transposed"), ((1, 1), 0, "contiguous"),
    ((40, 33), 1, "sliced"), ((), 0, "contiguous"), ((0, 5), 1, "contiguous"), ((5,), 0, "contiguous"),
]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim,layout", SOFTMAX_CASES, ids=str)
def test_softmax(device, op, shape, dim, layout):
    a = _rand(shape, scale=20.0)
    out = check(lambda x: getattr(F, op)(x, dim), lambda t: getattr(TF, op)(t, dim), [a], device, [layout])
    if a.size:
        assert out.grad_fn.name() == ("SoftmaxBackward0" if op == "softmax" else "LogSoftmaxBackward0")


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_dtypes(device, op, dtype):
    _skip_fp64(device, dtype)
    a = _rand((6, 40), dtype)
    check(lambda x: getattr(clgrad, op)(x, 1), lambda t: getattr(torch, op)(t.float() if dtype == "float16" else t, 1)
          .to(t.dtype), [a], device, dtype=dtype, grad=False)
    # dtype= casts first, so a float16 input computes in float32
    if dtype == "float16":
        got = make(a, device).softmax(1, dtype=clgrad.float32)
        _close(got, torch.softmax(torch.tensor(a), 1, dtype=torch.float32))


def test_softmax_stability_and_special_values(device):
    rows = np.array([[1e4, -1e4, 0.0, 1e4], [-np.inf, 0.0, 1.0, -np.inf], [-np.inf] * 4, [np.inf, 1.0, 2.0, 3.0],
                     [np.nan, 1.0, 2.0, 3.0], [88.0, 89.0, 90.0, 1e30]], np.float32)
    for op in ("softmax", "log_softmax"):
        for dim, a in ((1, rows), (0, np.ascontiguousarray(rows.T))):
            got = getattr(F, op)(make(a, device), dim)
            expected = getattr(TF, op)(torch.tensor(a), dim).numpy()
            np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_special_values_vector_rows(device, dtype):
    """Rows of 37 (CPU devices run rows of 16 or more in vectors, with a scalar tail): a NaN, +inf or -inf in
    the vector part or in the tail, rows of only -inf, and huge logits, forward and backward."""
    _skip_fp64(device, dtype)
    rows = np.random.default_rng(3).normal(0, 3, (10, 37)).astype(dtype)
    for r, (col, v) in enumerate([(3, np.nan), (35, np.nan), (5, np.inf), (36, np.inf), (0, -np.inf), (33, -np.inf)]):
        rows[r, col] = v
    rows[6] = -np.inf
    rows[7, :20] = 1e30
    rows[8, 30:] = -1e30
    g = np.random.default_rng(4).normal(0, 1, rows.shape).astype(dtype)
    for op in ("softmax", "log_softmax"):
        x = make(rows, device).requires_grad_()
        y = getattr(F, op)(x, 1)
        y.backward(make(g, device))
        tx = torch.tensor(rows, requires_grad=True)
        ty = getattr(TF, op)(tx, 1)
        ty.backward(torch.tensor(g))
        tol = dict(rtol=1e-5, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), **tol)
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), **tol)


def test_softmax_long_rows_large_logits(device):
    a = np.random.default_rng(0).uniform(-3e3, 3e3, (3, 4099)).astype(np.float32)
    for op in ("softmax", "log_softmax"):
        _close(getattr(F, op)(make(a, device), 1), getattr(TF, op)(torch.tensor(a), 1), rtol=1e-5, atol=1e-4)


def test_softmax_args_and_errors(device):
    x = make(_rand((2, 3)), device)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        _close(F.softmax(x), TF.softmax(torch.tensor(x.cpu().numpy()), 1))
    _close(clgrad.softmax(x, 1, clgrad.float64).cpu(), torch.softmax(torch.tensor(x.cpu().numpy()), 1, torch.float64)) \
        if fp64_ok(device) else None
    _close(F.softmin(x, 1), TF.softmin(torch.tensor(x.cpu().numpy()), 1))
    _close(x.log_softmax(-1), torch.tensor(x.cpu().numpy()).log_softmax(-1))
    with pytest.raises(NotImplementedError, match="softmax"):
        clgrad.softmax(clgrad.tensor([1, 2], device=device), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.softmax(x, 2)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_gradcheck(device, op):
    _skip_fp64(device)
    x = _leaf(_rand((3, 4), "float64", 1.0), device)
    assert gradcheck(lambda t: getattr(F, op)(t, 1), (x,))
    assert gradgradcheck(lambda t: getattr(F, op)(t, 0), (x,))
    long = _leaf(_rand((2, 21), "float64", 1.0), device)  # vector rows with a tail on CPU devices
    assert gradcheck(lambda t: getattr(F, op)(t, 1), (long,))


# ---- nll_loss / cross_entropy --------------------------------------------------------------------
NLL_CASES = [  # (input shape, target shape)
    ((5, 4), (5,)), ((2, 4, 3, 2), (2, 3, 2)), ((4,), ()), ((3, 6, 5), (3, 5)),
]


def _targets(shape, C, ignore=None, seed=0):
    t = np.random.default_rng(seed).integers(0, C, shape).astype(np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[:: 3] = ignore
    return t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, -100, 1])
@pytest.mark.parametrize("shapes", NLL_CASES, ids=str)
def test_nll_loss(device, shapes, ignore, weighted, reduction):
    xshape, tshape = shapes
    C = xshape[1] if len(xshape) > 1 else xshape[0]
    a, t = _rand(xshape), _targets(tshape, C, ignore)
    w = np.random.default_rng(2).uniform(0.5, 2, C).astype(np.float32) if weighted else None
    kw = dict(reduction=reduction, ignore_index=-100 if ignore is None else ignore)
    tw = None if w is None else torch.tensor(w)
    out = check(lambda x: F.nll_loss(x, make(t, device), None if w is None else make(w, device), **kw),
                lambda x: TF.nll_loss(x, torch.tensor(t), tw, **kw), [a], device, ["transposed"])
    if reduction != "none" or len(xshape) > 1:
        assert out.grad_fn.name() == "NllLossBackward0"


def test_nll_loss_layout_and_byte_target(device):
    a, t = _rand((6, 5)), _targets((6,), 5).astype(np.uint8)
    check(lambda x: F.nll_loss(x, make(t, device, "sliced")), lambda x: TF.nll_loss(x, torch.tensor(t)), [a], device,
          ["sliced"])


@pytest.mark.parametrize("bad", [10, -1])
def test_nll_loss_target_out_of_bounds(device, bad):
    x = make(_rand((3, 5)), device)
    with pytest.raises(IndexError, match=re.escape(f"Target {bad} is out of bounds.")):
        F.nll_loss(x, clgrad.tensor([1, bad, 2], device=device)).cpu()  # OpenCL: raised at the next host read
    with pytest.raises(IndexError, match=re.escape(f"Target {bad} is out of bounds.")):
        F.cross_entropy(x, clgrad.tensor([1, bad, 2], device=device), reduction="none").cpu()
    # an ignored target may be anything
    F.nll_loss(x, clgrad.tensor([1, bad, 2], device=device), ignore_index=bad)


def test_device_bounds_checks_report_at_the_next_sync(device):
    """cpu raises at the call, as PyTorch on cpu; OpenCL devices report a bad target or index at the next host read
    or synchronize, as CUDA's device-side asserts do (no wait per loss), once, and later calls work."""
    x = make(_rand((3, 5)), device)
    bad = clgrad.tensor([1, 7, 2], device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match=re.escape("Target 7 is out of bounds.")):
            F.nll_loss(x, bad)
        return
    loss = F.nll_loss(x, bad)  # no wait: the flag is read later
    ce = F.cross_entropy(x, clgrad.tensor([0, 1, 9], device=device))
    with pytest.raises(IndexError, match=re.escape("Target 7 is out of bounds.")):  # the first failure is reported
        loss.item()
    ce.detach().cpu()  # the report cleared every pending check (cross-entropy's too): this read raises nothing
    F.embedding(clgrad.tensor([0, 12], device=device), clgrad.ones(10, 2, device=device))
    with pytest.raises(IndexError, match="index 12 is out of bounds for dimension 0 with size 10"):
        clgrad.opencl.synchronize(device)
    good = F.nll_loss(x, clgrad.tensor([1, 0, 2], device=device))
    np.testing.assert_allclose(good.item(), TF.nll_loss(torch.tensor(x.cpu().numpy()), torch.tensor([1, 0, 2])).item(),
                               rtol=1e-6)


@pytest.mark.parametrize("args,exc,msg", [
    (((3, 5), [1, 0], None), ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
    (((3, 5), [1, 0, 2], 4), RuntimeError, "weight tensor should be defined either for all 5 classes or no classes "
                                           "but got weight tensor of shape: [4]"),
    (((2, 3, 4), [[0] * 5] * 2, None), RuntimeError, "Expected target size [2, 4], got [2, 5]"),
    (((), 0, None), ValueError, "Expected 1 or more dimensions (got 0)"),
], ids=["batch", "weight", "target-size", "0-dim"])
def test_nll_loss_errors(device, args, exc, msg):
    shape, target, wn = args
    w = None if wn is None else clgrad.ones(wn, device=device)
    with pytest.raises(exc, match=re.escape(msg)):
        F.nll_loss(make(_rand(shape), device), clgrad.tensor(target, device=device), w)
    x = make(_rand((3, 5)), device)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        F.nll_loss(x, clgrad.tensor([1, 0, 2], dtype=clgrad.int32, device=device))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.nll_loss(x, clgrad.tensor([1, 0, 2], device=device), reduction="avg")


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shapes", [((5, 4), (5,)), ((2, 4, 3), (2, 3)), ((4,), ()), ((9, 37), (9,))], ids=str)
def test_cross_entropy(device, shapes, weighted, reduction, smoothing):
    xshape, tshape = shapes
    C = xshape[1] if len(xshape) > 1 else xshape[0]
    a, t = _rand(xshape, scale=5.0), _targets(tshape, C, ignore=2 if tshape else None)
    w = np.random.default_rng(2).uniform(0.5, 2, C).astype(np.float32) if weighted else None
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=2 if tshape else -100)
    check(lambda x: F.cross_entropy(x, make(t, device), None if w is None else make(w, device), **kw),
          lambda x: TF.cross_entropy(x, torch.tensor(t), None if w is None else torch.tensor(w), **kw), [a], device)


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probabilities(device, reduction, smoothing):
    a = _rand((4, 5, 3))
    p = np.random.default_rng(3).dirichlet(np.ones(5), (4, 3)).transpose(0, 2, 1).astype(np.float32)
    w = np.linspace(0.5, 2.0, 5).astype(np.float32)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check(lambda x, q: F.cross_entropy(x, q, make(w, device), **kw),
          lambda x, q: TF.cross_entropy(x, q, torch.tensor(w), **kw), [a, p], device)


def test_cross_entropy_errors(device):
    x = make(_rand((3, 5)), device)
    with pytest.raises(RuntimeError, match=re.escape("label_smoothing must be between 0.0 and 1.0. Got: 1.5")):
        F.cross_entropy(x, clgrad.tensor([1, 0, 2], device=device), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, got Long"):
        F.cross_entropy(x, clgrad.ones(3, 5, dtype=clgrad.int64, device=device))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_cross_entropy_fused_layouts_and_special_values(device, layout):
    """The fused kernel on rows of 37 classes (vectors and a tail on CPU devices) in any layout, with an ignore_index
    inside [0, C), a NaN / +inf / -inf logit, and a mean over only ignored targets (NaN loss, zero gradient)."""
    a = _rand((6, 37), scale=4.0)
    a[1, 3], a[2, 36], a[3, 0] = np.nan, np.inf, -np.inf
    t = np.array([5, 0, 36, 3, 7, 7])
    for kw in (dict(ignore_index=7), dict(ignore_index=7, reduction="sum"), dict(reduction="none")):
        check(lambda x, kw=kw: F.cross_entropy(x, make(t, device), **kw),
              lambda x, kw=kw: TF.cross_entropy(x, torch.tensor(t), **kw), [a], device, [layout])
    x = make(a[4:], device, layout).requires_grad_()
    loss = F.cross_entropy(x, make(t[4:], device), ignore_index=7)
    loss.backward()
    assert np.isnan(loss.item()) and not x.grad.cpu().numpy().any()


def test_nll_cross_entropy_gradcheck(device):
    _skip_fp64(device)
    x = _leaf(_rand((3, 4), "float64", 1.0), device)
    t = clgrad.tensor([1, 3, 0], device=device)
    w = clgrad.tensor([0.5, 1.0, 2.0, 1.5], dtype=clgrad.float64, device=device)
    assert gradcheck(lambda v: F.nll_loss(v, t, w, ignore_index=3), (x,))
    assert gradcheck(lambda v: F.cross_entropy(v, t, w, label_smoothing=0.1, reduction="none"), (x,))
    assert gradgradcheck(lambda v: F.cross_entropy(v, t, w), (x,))
    assert gradgradcheck(lambda v: F.nll_loss(v, t, w, ignore_index=3, reduction="sum"), (x,))
    long = _leaf(_rand((3, 19, 2), "float64", 1.0), device)  # vector rows on CPU devices, and a trailing dim
    t2 = clgrad.tensor([[1, 18], [0, 4], [18, 18]], device=device)
    assert gradcheck(lambda v: F.cross_entropy(v, t2, ignore_index=4), (long,))
    t3 = clgrad.tensor([[1, 18, 0], [4, 4, 2]], device=device)
    assert gradcheck(lambda v: F.cross_entropy(v.permute(2, 1, 0), t3, reduction="none"), (long,))


# ---- mse / l1 / binary cross entropy / one_hot / linear --------------------------------------------
LOSSES = {
    "mse_loss": (F.mse_loss, TF.mse_loss, "MseLossBackward0"),
    "l1_loss": (F.l1_loss, TF.l1_loss, "MeanBackward0"),
    "binary_cross_entropy": (F.binary_cross_entropy, TF.binary_cross_entropy, "BinaryCrossEntropyBackward0"),
    "binary_cross_entropy_with_logits": (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
                                         None),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_pointwise_losses(device, name, reduction):
    fn, tfn, node = LOSSES[name]
    rng = np.random.default_rng(4)
    a = rng.uniform(0.05, 0.95, (4, 6)).astype(np.float32) if name == "binary_cross_entropy" else _rand((4, 6))
    b = rng.uniform(0, 1, (4, 6)).astype(np.float32)
    out = check(lambda x, y: fn(x, y, reduction=reduction), lambda x, y: tfn(x, y, reduction=reduction), [a, b], device,
                ["transposed", "sliced"], rtol=1e-4, atol=1e-5)
    if node and reduction == "mean":
        assert out.grad_fn.name() == node


def test_loss_weights(device):
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32), rng.uniform(0, 1, (3, 4)).astype(np.float32)
    w, pw = rng.uniform(0.5, 2, (4,)).astype(np.float32), rng.uniform(0.5, 3, (4,)).astype(np.float32)
    cw, tw = make(w, device), torch.tensor(w)
    check(lambda x, y: F.binary_cross_entropy(x, y, cw), lambda x, y: TF.binary_cross_entropy(x, y, tw), [a, b], device)
    check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, cw, pos_weight=make(pw, device)),
          lambda x, y: TF.binary_cross_entropy_with_logits(x, y, tw, pos_weight=torch.tensor(pw)), [a * 8 - 4, b],
          device, rtol=1e-4, atol=1e-5)
    with pytest.warns(UserWarning, match="different to the input size"):
        check(lambda x, y: F.mse_loss(x, y), lambda x, y: TF.mse_loss(x, y), [a, b[0]], device)


def test_loss_errors(device):
    x, y = make(np.full((2, 3), 1.5, np.float32), device), clgrad.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x, y)
    with pytest.raises(ValueError, match="is deprecated. Please ensure they have the same size."):
        F.binary_cross_entropy(y, y[0])
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(y, y[0])


def test_loss_gradcheck(device):
    _skip_fp64(device)
    rng = np.random.default_rng(6)
    x = _leaf(rng.uniform(0.2, 0.8, (2, 3)), device)
    y = _leaf(rng.uniform(0, 1, (2, 3)), device)
    assert gradcheck(lambda a, b: F.mse_loss(a, b), (x, y))
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction="sum"), (x, y))
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=b + 1), (x, y))
    assert gradgradcheck(lambda a, b: F.mse_loss(a, b, reduction="sum"), (x, y))


def test_one_hot(device):
    t = np.array([[0, 3], [2, 1]])
    got = F.one_hot(clgrad.tensor(t, device=device))
    assert_close(got, TF.one_hot(torch.tensor(t)).numpy())
    assert_close(F.one_hot(clgrad.tensor([1], device=device), 4), np.array([[0, 1, 0, 0]]))
    for args, msg in [(([-1, 2],), "Class values must be non-negative."),
                      (([1, 5], 3), "Class values must be smaller than num_classes.")]:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            F.one_hot(clgrad.tensor(args[0], device=device), *args[1:])
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(clgrad.tensor([], dtype=clgrad.int64, device=device))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(clgrad.tensor([1.0], device=device))


@pytest.mark.parametrize("xshape", [(3, 5), (2, 3, 5), (5,)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(device, xshape, bias):
    a, w, b = _rand(xshape), _rand((4, 5), seed=1), _rand((4,), seed=2)
    arrays = [a, w, b] if bias else [a, w]
    check(lambda *t: F.linear(*t), lambda *t: TF.linear(*t), arrays, device, ["transposed"] * len(arrays),
          rtol=1e-4, atol=1e-5)


def test_linear_gradcheck_and_bilinear(device):
    _skip_fp64(device)
    x, w, b = (_leaf(_rand(s, "float64", 1.0, seed=k), device) for k, s in enumerate([(2, 3), (4, 3), (4,)]))
    assert gradcheck(F.linear, (x, w, b))
    x1, x2, wb = _rand((3, 2)), _rand((3, 4), seed=1), _rand((5, 2, 4), seed=2)
    _close(F.bilinear(make(x1, device), make(x2, device), make(wb, device)),
           TF.bilinear(torch.tensor(x1), torch.tensor(x2), torch.tensor(wb)), rtol=1e-4, atol=1e-5)


# ---- embedding -----------------------------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("freq", [False, True])
def test_embedding(device, padding_idx, freq):
    w = _rand((6, 5))
    idx = np.array([[1, 2, 1, 5], [2, 2, 0, 1]])  # duplicates accumulate
    out = check(lambda v: F.embedding(make(idx, device), v, padding_idx, scale_grad_by_freq=freq),
                lambda v: TF.embedding(torch.tensor(idx), v, padding_idx, scale_grad_by_freq=freq), [w], device,
                ["transposed"])
    assert out.grad_fn.name() == "EmbeddingBackward0"


def test_embedding_many_duplicates_and_forms(device):
    w = _rand((4, 3))
    idx = np.random.default_rng(0).integers(0, 4, 2000)
    check(lambda v: F.embedding(make(idx.astype(np.int32), device), v), lambda v: TF.embedding(torch.tensor(idx), v),
          [w], device, rtol=1e-4, atol=1e-4)
    # torch.embedding(weight, indices, padding_idx=-1, ...) takes the weight first
    _close(clgrad.embedding(make(w, device), make(idx[:5], device)), torch.embedding(torch.tensor(w),
                                                                                      torch.tensor(idx[:5])))


def test_embedding_max_norm(device):
    w = _rand((5, 3))
    cw, tw = make(w, device), torch.tensor(w)
    idx = np.array([0, 3, 3])
    _close(F.embedding(make(idx, device), cw, max_norm=1.0), TF.embedding(torch.tensor(idx), tw, max_norm=1.0))
    _close(cw, tw)  # the rows used were renormalized in place, the others left alone


def test_embedding_errors(device):
    w = clgrad.zeros(10, 3, device=device)
    for bad in (10, -1):
        with pytest.raises(IndexError, match=f"index out of range in self: index {bad} is out of bounds for "
                                             "dimension 0 with size 10"):
            F.embedding(clgrad.tensor([1, bad], device=device), w).cpu()
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(clgrad.tensor([1.0], device=device), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(clgrad.tensor([1], device=device), w, padding_idx=10)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(clgrad.tensor([1], device=device), clgrad.zeros(10, device=device))


def test_embedding_gradcheck(device):
    _skip_fp64(device)
    w = _leaf(_rand((4, 2), "float64", 1.0), device)
    idx = clgrad.tensor([[0, 2], [2, 3]], device=device)
    assert gradcheck(lambda v: F.embedding(idx, v), (w,))  # padding_idx breaks it on purpose (PyTorch notes so)
    assert gradgradcheck(lambda v: F.embedding(idx, v) * v.sum(), (w,))
    assert gradgradcheck(lambda v: F.embedding(idx, v, scale_grad_by_freq=True), (w,))


# ---- dropout -------------------------------------------------------------------------------------
def test_dropout(device):
    x = clgrad.ones(200, 50, device=device, requires_grad=True)
    clgrad.manual_seed(0)
    y = F.dropout(x, 0.3)
    kept = y.detach().cpu().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.03
    np.testing.assert_allclose(y.detach().cpu().numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.backward(clgrad.full((200, 50), 2.0, device=device))
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(kept, 2 / 0.7, 0), rtol=1e-6)
    clgrad.manual_seed(0)  # the mask comes from the Philox stream: the same on every device
    assert (F.dropout(clgrad.ones(200, 50), 0.3).numpy() != 0).tolist() == kept.tolist()


def test_dropout_edge_cases(device):
    x = make(_rand((4, 5)), device)
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x and clgrad.dropout(x, 0.5, False) is x
    assert not F.dropout(x, 1.0).cpu().numpy().any()
    z = x.clone()
    assert F.dropout(z, 1.0, inplace=True) is z and not z.cpu().numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


@pytest.mark.parametrize("fn,shape,channels", [(F.dropout2d, (8, 16, 3, 3), (8, 16)), (F.dropout1d, (16, 5), (16,)),
                                               (F.dropout3d, (4, 8, 2, 2, 2), (4, 8))])
def test_feature_dropout(device, fn, shape, channels):
    y = fn(clgrad.ones(*shape, device=device), 0.5).cpu().numpy().reshape(channels + (-1,))
    assert ((y == 0).all(-1) | (y == 2).all(-1)).all()  # whole channels are dropped or scaled
    assert 0.2 < (y[..., 0] == 0).mean() < 0.8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(clgrad.ones(*shape, device=device), 0.5, training=False)
    if fn is F.dropout2d:
        with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
            F.dropout2d(clgrad.ones(2, 3, 4, device=device), 0.5)


def test_dropout_gradcheck(device):
    _skip_fp64(device)
    x = _leaf(_rand((3, 4), "float64", 1.0), device)

    def fn(v, f):
        clgrad.manual_seed(7)  # the same mask on every call
        return f(v, 0.4)

    assert gradcheck(lambda v: fn(v, F.dropout), (x,))
    assert gradcheck(lambda v: fn(v.reshape(3, 2, 2), F.dropout1d), (x,))


# ---- Oclgrind: every kernel of the family at tiny and odd sizes ---------------------------------------
@pytest.mark.oclgrind
def test_nn_kernels_tiny_and_odd(device, capfd):
    """Each kernel (softmax per-row loop and per-row work-group, both backward modes, nll with a weight and an
    ignored target, embedding gather and accumulate, moments in both layouts) on sizes 1, odd and prime;
    run under Oclgrind it must report no invalid access and no data race."""
    for shape, dim in (((1, 1), 1), ((3, 37), 1), ((37, 3), 0), ((2, 129), 1), ((5, 41), 1)):
        a = _rand(shape)
        for op in ("softmax", "log_softmax"):
            x = _leaf(a, device)
            y = getattr(F, op)(x, dim)
            y.backward(clgrad.ones_like(y))
            t = torch.tensor(a, requires_grad=True)
            getattr(TF, op)(t, dim).backward(torch.ones(shape))
            _close(y, getattr(TF, op)(torch.tensor(a), dim), rtol=1e-5, atol=1e-5)
            _close(x.grad, t.grad, rtol=1e-4, atol=1e-5)
    a, t = _rand((3, 5, 3)), np.array([[0, 4, 1], [-100, 2, 3], [1, 1, 0]])
    w = np.linspace(0.5, 1.5, 5).astype(np.float32)
    _close(F.nll_loss(make(a, device, "transposed"), make(t, device), make(w, device)),
           TF.nll_loss(torch.tensor(a), torch.tensor(t), torch.tensor(w)))
    with pytest.raises(IndexError):
        F.nll_loss(make(a, device), make(t + 5, device)).cpu()
    wt = _leaf(_rand((7, 3)), device)
    out = F.embedding(clgrad.tensor([6, 0, 6, 3, 6], device=device), wt, padding_idx=3)
    out.sum().backward()
    assert_close(wt.grad, np.array([[1] * 3, [0] * 3, [0] * 3, [0] * 3, [0] * 3, [0] * 3, [3] * 3], np.float32))
    for shape in ((1, 1, 1), (3, 5, 7), (2, 3, 67)):
        a = _rand(shape) + 1
        _close(F.layer_norm(make(a, device), shape[-1:]), TF.layer_norm(torch.tensor(a), shape[-1:]), rtol=1e-4,
               atol=1e-4)
        if shape[0] * shape[2] > 1:
            _close(F.batch_norm(make(a, device), None, None, training=True),
                   TF.batch_norm(torch.tensor(a), None, None, training=True), rtol=1e-4, atol=1e-4)
    if device != "cpu":
        clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    assert not [m for m in ERROR_MARKERS if m.lower() in err.lower()], err[:4000]
