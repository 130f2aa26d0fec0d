"""Layers against PyTorch: same weights (moved through state_dict as numpy), same outputs and gradients."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn

torch = pytest.importorskip("torch")

# (constructor expression, shapes of the inputs); the same expression builds the torch layer
LAYERS = [
    ("Identity()", [(2, 3)]),
    ("Linear(4, 3)", [(2, 4)]),
    ("Linear(4, 3, bias=False)", [(2, 5, 4)]),
    ("Bilinear(3, 2, 4)", [(5, 3), (5, 2)]),
    ("Flatten()", [(2, 3, 2, 2)]),
    ("Unflatten(1, (2, 3))", [(2, 6)]),
    ("Conv1d(2, 4, 3, padding=1)", [(2, 2, 7)]),
    ("Conv2d(2, 4, 3, stride=2, padding=1)", [(2, 2, 6, 6)]),
    ("Conv2d(4, 4, 3, padding='same', groups=2, padding_mode='reflect')", [(1, 4, 5, 5)]),
    ("ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)", [(2, 3, 4, 4)]),
    ("MaxPool1d(2)", [(2, 3, 8)]),
    ("MaxPool2d(3, stride=2, padding=1)", [(2, 3, 7, 7)]),
    ("AvgPool1d(3, stride=2)", [(2, 3, 9)]),
    ("AvgPool2d(2)", [(2, 3, 6, 6)]),
    ("AdaptiveAvgPool2d((2, 3))", [(2, 3, 5, 7)]),
    ("Upsample(scale_factor=2, mode='nearest')", [(1, 2, 3, 3)]),
    ("BatchNorm1d(3)", [(4, 3)]),
    ("BatchNorm2d(3, momentum=None)", [(2, 3, 4, 4)]),
    ("LayerNorm([3, 4])", [(2, 3, 4)]),
    ("GroupNorm(2, 4)", [(2, 4, 3, 3)]),
    ("PixelShuffle(2)", [(2, 8, 2, 3)]), ("PixelUnshuffle(2)", [(2, 2, 4, 6)]), ("ChannelShuffle(2)", [(2, 4, 3)]),
    ("InstanceNorm1d(3)", [(2, 3, 5)]), ("InstanceNorm2d(3, affine=True, track_running_stats=True)", [(2, 3, 3, 4)]),
    ("InstanceNorm2d(3, affine=True)", [(3, 3, 4)]),
    ("ZeroPad2d((1, 2, 0, 1))", [(2, 3, 4, 4)]), ("ConstantPad1d(2, 0.5)", [(2, 3, 4)]),
    ("ReflectionPad2d(1)", [(1, 2, 4, 4)]), ("ReplicationPad1d((2, 1))", [(2, 3, 4)]),
    ("CircularPad2d(1)", [(1, 2, 3, 3)]), ("Fold((4, 5), 2)", [(2, 12, 12)]), ("Unfold(2, padding=1)", [(2, 3, 4, 4)]),
    ("UpsamplingNearest2d(scale_factor=2)", [(1, 2, 3, 3)]), ("UpsamplingBilinear2d(size=(5, 4))", [(1, 2, 3, 3)]),
    ("ReLU()", [(3, 4)]), ("ReLU6()", [(3, 4)]), ("LeakyReLU(0.2)", [(3, 4)]), ("ELU(alpha=0.7)", [(3, 4)]),
    ("SELU()", [(3, 4)]), ("GELU()", [(3, 4)]), ("GELU(approximate='tanh')", [(3, 4)]), ("SiLU()", [(3, 4)]),
    ("Mish()", [(3, 4)]), ("Sigmoid()", [(3, 4)]), ("Tanh()", [(3, 4)]), ("Softmax(dim=1)", [(3, 4)]),
    ("LogSoftmax(dim=-1)", [(3, 4)]), ("Softplus(beta=2)", [(3, 4)]), ("Hardtanh(-0.5, 0.5)", [(3, 4)]),
]


def _load(layer, tlayer):
    layer.load_state_dict({k: v.numpy() for k, v in tlayer.state_dict().items()})


@pytest.mark.parametrize("expr,shapes", LAYERS, ids=[e for e, _ in LAYERS])
def test_layer_matches_torch(device, expr, shapes):
    rng = np.random.default_rng(0)
    tlayer = eval("torch.nn." + expr)
    layer = eval("nn." + expr)
    assert list(layer.state_dict()) == list(tlayer.state_dict())
    _load(layer, tlayer)
    layer.to(device)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    xs = [clgrad.tensor(a, device=device, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = layer(*xs), tlayer(*txs)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    weights = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
    (out * clgrad.tensor(weights, device=device)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    tparams = dict(tlayer.named_parameters())
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), tparams[name].grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)
    for name, b in layer.named_buffers():
        np.testing.assert_allclose(b.cpu().numpy(), dict(tlayer.named_buffers())[name].numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_stats_and_eval(device, momentum):
    rng = np.random.default_rng(1)
    bn, tbn = nn.BatchNorm2d(3, momentum=momentum).to(device), torch.nn.BatchNorm2d(3, momentum=momentum)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32) * 2 + 1
        bn(clgrad.tensor(x, device=device))
        tbn(torch.tensor(x))
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(bn, name).cpu().numpy(), getattr(tbn, name).numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert int(bn.num_batches_tracked.item()) == 3
    bn.eval()
    tbn.eval()
    x = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(bn(clgrad.tensor(x, device=device)).detach().cpu().numpy(),
                               tbn(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert int(bn.num_batches_tracked.item()) == 3
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        bn(clgrad.ones(2, 3, device=device))


def test_dropout_train_and_eval(device):
    drop = nn.Dropout(0.5)
    x = clgrad.ones(1000, device=device)
    y = drop(x).cpu().numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    drop.eval()
    assert np.array_equal(drop(x).cpu().numpy(), np.ones(1000, np.float32))
    d2 = nn.Dropout2d(0.5)
    y = d2(clgrad.ones(4, 50, 3, 3, device=device)).cpu().numpy()
    assert np.all(y == y[:, :, :1, :1])  # whole channels are dropped
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_embedding(device):
    temb = torch.nn.Embedding(6, 3, padding_idx=2)
    emb = nn.Embedding(6, 3, padding_idx=2)
    assert float(emb.weight[2].abs().sum()) == 0.0
    _load(emb, temb)
    emb.to(device)
    idx = np.array([[0, 2, 5], [2, 1, 0]])
    out, tout = emb(clgrad.tensor(idx, device=device)), temb(torch.tensor(idx))
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(emb.weight.grad.cpu().numpy(), temb.weight.grad.numpy())
    pre = nn.Embedding.from_pretrained(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not pre.weight.requires_grad and pre.num_embeddings == 2
    assert pre(clgrad.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(clgrad.ones(2, 2), freeze=False).weight.requires_grad
    emb_neg = nn.Embedding(5, 2, padding_idx=-1)
    assert emb_neg.padding_idx == 4
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_conv_transpose_output_size(device):
    conv, tconv = nn.ConvTranspose2d(2, 2, 3, stride=2), torch.nn.ConvTranspose2d(2, 2, 3, stride=2)
    _load(conv, tconv)
    conv.to(device)
    x = np.random.default_rng(2).standard_normal((1, 2, 3, 3)).astype(np.float32)
    out = conv(clgrad.tensor(x, device=device), output_size=[8, 8])
    tout = tconv(torch.tensor(x), output_size=[8, 8])
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        conv(clgrad.tensor(x, device=device), output_size=[10, 10])


@pytest.mark.parametrize("expr", ["Linear(30, 20)", "Conv2d(6, 4, 3)", "Conv1d(4, 8, 5, bias=False)",
                                  "ConvTranspose2d(6, 4, 3)", "Bilinear(5, 6, 7)"])
def test_default_init_bounds(expr):
    layer = eval("nn." + expr)
    w = layer.weight.detach().numpy()
    fan_in = w.shape[1] * math.prod(w.shape[2:]) if "Bilinear" not in expr else w.shape[1]
    # kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in), the same as the bias bound
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.25 * bound
    if layer.bias is not None:
        assert np.abs(layer.bias.detach().numpy()).max() <= bound


def test_norm_defaults_and_errors():
    bn = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(bn.state_dict()) == [] and bn.weight is None and bn.running_mean is None
    out = bn(clgrad.tensor([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]]))
    np.testing.assert_allclose(out.numpy(), [[-1, -1, -1], [1, 1, 1]], atol=1e-3)
    with pytest.raises(ValueError, match="must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 3, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect")


def test_instance_norm_eval_and_checks():
    rng = np.random.default_rng(2)
    norm = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    tnorm = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    for _ in range(2):
        a = rng.standard_normal((4, 3, 5)).astype(np.float32) * 2 + 1
        norm(clgrad.tensor(a)), tnorm(torch.tensor(a))
    norm.eval(), tnorm.eval()
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(norm(clgrad.tensor(a)).detach().numpy(), tnorm(torch.tensor(a)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert int(norm.num_batches_tracked) == int(tnorm.num_batches_tracked) == 0  # instance norm never counts
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        norm(clgrad.zeros(1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4."):
        norm(clgrad.zeros(2, 4, 5))
    with pytest.warns(UserWarning, match="input's size at dim=0 does not match num_features"):
        nn.InstanceNorm1d(3)(clgrad.randn(4, 5))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.CircularPad2d(1)(clgrad.zeros(2, 2))
