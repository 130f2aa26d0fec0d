"""The smaller issue-17 ops against torch: local_response_norm / LocalResponseNorm / CrossMapLRN2d, instance_norm
(and InstanceNorm*), RMSNorm, linear_cross_entropy / LinearCrossEntropyLoss, gumbel_softmax, conv_tbc, the
native_batch_norm family and _chunk_cat, on every device."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.nn.torch_ref import check, float_name, gradcheck

RNG = np.random.default_rng(23)


def _torch():
    return pytest.importorskip("torch")


def _same_dtype(device, mod, ref):
    """The two modules in the test's float dtype."""
    if float_name(device) == "float64":
        return mod.double(), ref.double()
    return mod.float(), ref.float()


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 5, 3, 2), (1, 4, 2, 2, 2)])
def test_local_response_norm(device, size, shape):
    torch = _torch()
    check(device, lambda x: F.local_response_norm(x, size, 0.2, 0.6, 1.5),
          lambda x: torch.nn.functional.local_response_norm(x, size, 0.2, 0.6, 1.5), [RNG.standard_normal(shape)],
          grad=(0,))


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn_modules(device, size):
    torch = _torch()
    x = RNG.standard_normal((2, 6, 2, 3))
    check(device, clgrad.nn.LocalResponseNorm(size, 0.1), torch.nn.LocalResponseNorm(size, 0.1), [x], grad=(0,))
    check(device, clgrad.nn.CrossMapLRN2d(size, 0.1, 0.8, 2), torch.nn.CrossMapLRN2d(size, 0.1, 0.8, 2), [x],
          backward=False)
    gradcheck(device, clgrad.nn.CrossMapLRN2d(size, 0.5), [x[:1, :4, :1]])


def test_lrn_errors(device):
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input"):
        F.local_response_norm(clgrad.zeros(2, 3, device=device), 2)
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        clgrad.nn.CrossMapLRN2d(3)(clgrad.zeros(2, 3, 4, device=device))


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm(device, use_input_stats):
    torch = _torch()
    dt = float_name(device)
    x, w, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3).astype(dt), RNG.uniform(0.5, 2, 3).astype(dt)
    crm, crv = clgrad.tensor(rm, device=device), clgrad.tensor(rv, device=device)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    check(device, lambda a, c, d: F.instance_norm(a, crm, crv, c, d, use_input_stats, 0.3),
          lambda a, c, d: torch.nn.functional.instance_norm(a, trm, trv, c, d, use_input_stats, 0.3), [x, w, b],
          grad=(0, 1, 2))
    np.testing.assert_allclose(crm.cpu().numpy(), trm.numpy(), rtol=1e-5)
    np.testing.assert_allclose(crv.cpu().numpy(), trv.numpy(), rtol=1e-5)


def test_instance_norm_module_uses_functional(device):
    torch = _torch()
    mod = clgrad.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, device=device)
    ref = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    mod, ref = _same_dtype(device, mod, ref)
    check(device, mod, ref, [RNG.standard_normal((2, 3, 2, 3))], grad=(0,))
    np.testing.assert_allclose(mod.running_var.cpu().numpy(), ref.running_var.numpy(), rtol=1e-5)
    mod.eval()
    ref.eval()
    check(device, mod, ref, [RNG.standard_normal((3, 2, 3))], grad=(0,))


def test_rms_norm_module(device):
    torch = _torch()
    mod, ref = clgrad.nn.RMSNorm([2, 3], eps=1e-4, device=device), torch.nn.RMSNorm([2, 3], eps=1e-4)
    assert [n for n, _ in mod.named_parameters()] == ["weight"]
    mod, ref = _same_dtype(device, mod, ref)
    check(device, mod, ref, [RNG.standard_normal((4, 2, 3))], grad=(0,))
    assert clgrad.nn.RMSNorm(3, elementwise_affine=False).weight is None


@pytest.mark.parametrize("case", ["plain", "bias_kdim", "probs", "ignore_smooth_weight"])
def test_linear_cross_entropy(device, case):
    torch = _torch()
    x = RNG.standard_normal((6, 4))
    if case == "plain":
        arrays, kw = [x, RNG.standard_normal((5, 4)), RNG.integers(0, 5, 6), None], {}
    elif case == "bias_kdim":
        arrays, kw = [x, RNG.standard_normal((5, 2, 4)), RNG.integers(0, 5, (6, 2)), RNG.standard_normal((5, 2))], \
            {"reduction": "none"}
    elif case == "probs":
        p = RNG.random((6, 5))
        arrays, kw = [x, RNG.standard_normal((5, 4)), p / p.sum(1, keepdims=True), None], {"reduction": "sum"}
    else:
        t = RNG.integers(0, 5, 6)
        t[2] = 1
        arrays, kw = [x, RNG.standard_normal((5, 4)), t, None], dict(ignore_index=1, label_smoothing=0.2)

    def run(fn):
        return lambda a, w, t, b: fn(a, w, t, linear_bias=b, **kw)

    check(device, run(F.linear_cross_entropy), run(torch.nn.functional.linear_cross_entropy), arrays,
          grad=(0, 1, 2, 3) if case == "probs" else (0, 1, 3))


def test_linear_cross_entropy_module(device):
    torch = _torch()
    dt = float_name(device)
    ref = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True, dtype=getattr(torch, dt))
    mod = clgrad.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True, device=device,
                                           dtype=getattr(clgrad, dt))
    assert sorted(mod.state_dict()) == sorted(ref.state_dict())
    mod.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    check(device, lambda x, t: mod(x, t), lambda x, t: ref(x, t), [RNG.standard_normal((5, 4)),
                                                                   RNG.integers(0, 3, (5, 2))], grad=(0,))


def test_gumbel_softmax(device):
    clgrad.manual_seed(0)
    logits = clgrad.tensor(RNG.standard_normal((64, 4)).astype(float_name(device)), device=device,
                           requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().cpu().numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().cpu().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    (hard * clgrad.arange(4, device=device)).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_conv_tbc(device):
    torch = _torch()
    check(device, lambda x, w, b: clgrad.conv_tbc(x, w, b, 1), lambda x, w, b: torch.conv_tbc(x, w, b, 1),
          [RNG.standard_normal((5, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)], grad=(0, 1, 2))


@pytest.mark.parametrize("name", ["native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
                                  "legit_no_stats", "eval"])
def test_native_batch_norm_family(device, name):
    torch = _torch()
    dt = float_name(device)
    stats = [RNG.standard_normal(3).astype(dt), RNG.uniform(0.5, 2, 3).astype(dt)]
    crm, crv = (clgrad.tensor(s, device=device) for s in stats)
    trm, trv = (torch.tensor(s) for s in stats)

    def run(lib, rm, rv):
        def call(x, w, b):
            if name == "_batch_norm_with_update":
                fn = clgrad._batch_norm_with_update if lib is clgrad else torch.ops.aten._batch_norm_with_update
                return fn(x, w, b, rm, rv, 0.2, 1e-5)[:3]
            if name == "legit_no_stats":
                return lib._native_batch_norm_legit(x, w, b, True, 0.2, 1e-5)
            fn = lib.native_batch_norm if name == "eval" else getattr(lib, name)
            return fn(x, w, b, rm, rv, name != "eval", 0.2, 1e-5)
        return call

    arrays = [RNG.standard_normal((4, 3, 2)), RNG.standard_normal(3), RNG.standard_normal(3)]
    check(device, run(clgrad, crm, crv), run(torch, trm, trv), arrays, grad=(0, 1, 2))
    np.testing.assert_allclose(crv.cpu().numpy(), trv.numpy(), rtol=1e-5)
    if name == "_batch_norm_with_update":
        reserve = clgrad._batch_norm_with_update(clgrad.tensor(arrays[0].astype(dt), device=device), None, None,
                                                 crm, crv, 0.1, 1e-5)[3]
        assert reserve.dtype == clgrad.uint8 and tuple(reserve.shape) == (0,)


def test_chunk_cat(device):
    torch = _torch()
    arrays = [RNG.standard_normal((3, 5)), RNG.standard_normal((3, 2, 2)), RNG.standard_normal((3, 4))]
    for dim, chunks in ((1, 2), (0, 2), (1, 3), (-1, 1)):
        check(device, lambda *t, d=dim, c=chunks: clgrad._chunk_cat(list(t[::2]), d, c),
              lambda *t, d=dim, c=chunks: torch._chunk_cat(list(t[::2]), d, c), arrays)
    check(device, lambda *t: clgrad._chunk_cat(list(t), 1, 2), lambda *t: torch._chunk_cat(list(t), 1, 2), arrays)


AA_CASES = [("bilinear", dict(size=(3, 3))), ("bilinear", dict(scale_factor=(1.7, 0.9))),
            ("bilinear", dict(size=(7, 5), align_corners=True)), ("bicubic", dict(size=(4, 9))),
            ("bicubic", dict(size=(12, 5)))]


@pytest.mark.parametrize("mode,kw", AA_CASES, ids=[f"{m}-{sorted(k.items())}" for m, k in AA_CASES])
def test_interpolate_antialias(device, mode, kw):
    torch = _torch()
    check(device, lambda x: F.interpolate(x, mode=mode, antialias=True, **kw),
          lambda x: torch.nn.functional.interpolate(x, mode=mode, antialias=True, **kw),
          [RNG.standard_normal((1, 2, 6, 8))], grad=(0,))


def test_upsample_aa_entry_points(device):
    torch = _torch()
    check(device, lambda x: clgrad._upsample_bilinear2d_aa(x, None, False, [1.7, 0.9]),
          lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, None, False, [1.7, 0.9]),
          [RNG.standard_normal((1, 2, 6, 8))], grad=(0,))
    check(device, lambda x: clgrad._upsample_bicubic2d_aa(x, (3, 4), True),
          lambda x: torch.ops.aten._upsample_bicubic2d_aa(x, (3, 4), True), [RNG.standard_normal((1, 2, 6, 8))],
          grad=(0,))


def test_adaptive_log_softmax_with_loss(device):
    torch = _torch()
    dt = float_name(device)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True).to(getattr(torch, dt))
    mod = clgrad.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True, device=device,
                                               dtype=getattr(clgrad, dt))
    assert sorted(mod.state_dict()) == sorted(ref.state_dict())
    mod.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    target = np.array([0, 9, 4, 2, 7, 5, 1])
    check(device, lambda x, t: tuple(mod(x, t)), lambda x, t: tuple(ref(x, t)), [RNG.standard_normal((7, 8)), target],
          grad=(0,))
    check(device, mod.log_prob, ref.log_prob, [RNG.standard_normal((7, 8))], grad=(0,))
    x = clgrad.tensor(RNG.standard_normal((7, 8)).astype(dt), device=device)
    assert (mod.predict(x).cpu().numpy() == ref.predict(torch.tensor(x.cpu().numpy())).numpy()).all()
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        mod(x, clgrad.tensor([10] * 7, device=device))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        clgrad.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
