"""Module: registration, traversal, state_dict, moving, hooks, reprs, containers."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")


def _net_class(lib, ones, zeros):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.Linear(4, 3)
            self.bn = lib.BatchNorm1d(3)
            self.fc2 = self.fc1  # shared: listed once
            self.head = lib.Sequential(lib.ReLU(), lib.Linear(3, 2, bias=False))
            self.register_buffer("scale", ones(2))
            self.register_buffer("scratch", zeros(1), persistent=False)

        def forward(self, x):
            return self.head(self.bn(self.fc1(x))) * self.scale

    return Net


def _pair():
    return _net_class(nn, clgrad.ones, clgrad.zeros)(), _net_class(torch.nn, torch.ones, torch.zeros)()


def _load_from_torch(model, tmodel):
    return model.load_state_dict({k: v.numpy() for k, v in tmodel.state_dict().items()})


def test_registration_and_traversal():
    m, t = _pair()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in m.named_children()] == [n for n, _ in t.named_children()]
    assert len(list(m.parameters())) == 5 and len(list(m.parameters(recurse=False))) == 0
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    del m.head
    assert "head" not in dict(m.named_children())
    m.fc1 = None
    assert m.fc1 is None and "fc1.weight" not in m.state_dict()


def test_state_dict_matches_torch_and_roundtrips():
    m, t = _pair()
    sd, tsd = m.state_dict(), t.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        assert tuple(sd[k].shape) == tuple(tsd[k].shape), k
        assert sd[k].dtype.name == str(tsd[k].dtype).split(".")[1], k
    result = _load_from_torch(m, t)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(m.fc1.weight.numpy(), t.fc1.weight.detach().numpy())
    m2, _ = _pair()
    m2.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(m2.head[1].weight.numpy(), m.head[1].weight.numpy())
    # and back: torch loads clgrad's state_dict (through numpy) under the same names
    _, t2 = _pair()
    t2.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in m.state_dict().items()})
    np.testing.assert_array_equal(t2.fc1.weight.detach().numpy(), m.fc1.weight.numpy())


def test_load_state_dict_errors():
    m, _ = _pair()
    sd = m.state_dict()
    del sd["bn.running_var"]
    sd["extra"] = clgrad.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key.*"bn.running_var".*\n.*|Unexpected key.*"extra"'):
        m.load_state_dict(sd)
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["bn.running_var"] and result.unexpected_keys == ["extra"]
    sd = m.state_dict()
    sd["fc1.weight"] = clgrad.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape "
                                           r"torch.Size\(\[2, 2\]\) from checkpoint, the shape in current model "
                                           r"is torch.Size\(\[3, 4\]\)"):
        m.load_state_dict(sd, strict=False)


def test_forward_and_backward_match_torch(device):
    m, t = _pair()
    _load_from_torch(m, t)
    m.to(device)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out = m(clgrad.tensor(x, device=device))
    tout = t(torch.tensor(x))
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    out.sum().backward()
    tout.sum().backward()
    for (name, p), (_, tp) in zip(m.named_parameters(), t.named_parameters()):
        # fc1 feeds the batch norm, which removes its bias: that gradient is exactly 0, and what both frameworks
        # compute is float32 rounding of a cancelling sum (seen up to 1.05e-5 on PoCL in a loaded run)
        atol = 1e-4 if name == "fc1.bias" else 1e-5
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-4, atol=atol, err_msg=name)
    np.testing.assert_allclose(m.bn.running_mean.cpu().numpy(), t.bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    assert int(m.bn.num_batches_tracked.item()) == 1


def test_to_moves_in_place(device):
    m, _ = _pair()
    params = list(m.parameters())
    m.fc1.weight.grad = clgrad.ones(3, 4)
    assert m.to(device) is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(str(p.device) == str(clgrad.device(device)) for p in m.parameters())
    assert str(m.fc1.weight.grad.device) == str(m.fc1.weight.device)
    assert str(m.scale.device) == str(m.fc1.weight.device)
    if fp64_ok(device):
        m.double()
        assert all(p.dtype == clgrad.float64 for p in m.parameters())
    else:  # float64 can't live on this device: a clear error that leaves the module as it was, then float16
        with pytest.raises(TypeError, match=f"{device}.*cl_khr_fp64"):
            m.double()
        assert all(p.dtype == clgrad.float32 for p in m.parameters())
        m.half()
        assert all(p.dtype == clgrad.float16 for p in m.parameters())
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert m.bn.num_batches_tracked.dtype == clgrad.int64  # integer buffers keep their dtype
    m.to(clgrad.float32).cpu()
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert params[0].dtype == clgrad.float32 and params[0].device.type == "cpu"
    m.half()
    assert params[0].dtype == clgrad.float16
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(clgrad.int32)


def test_modes_grads_and_apply():
    m, _ = _pair()
    assert m.training and m.head[0].training
    m.eval()
    assert not m.training and not m.head[1].training
    m.train()
    assert m.bn.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    m(clgrad.randn(4, 4)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert float(m.fc1.weight.grad.abs().sum()) == 0.0
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 2


def test_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = lin(clgrad.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1, rtol=1e-6)
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    out = lin(clgrad.ones(1, 2))
    assert len(calls) == 1


# ---- backward hooks -----------------------------------------------------------------------------------------

def _mix_class(lib):
    class Mix(lib.nn.Module):
        """Positional inputs of every kind (needing a gradient, not needing one, not a tensor), a keyword
        tensor, and a tuple output with a non-tensor: grad_input/grad_output must line up with all of them."""

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, a, b, scale, c=None):
            return self.lin(a * b + c) * scale, (a * a).sum(), 3

    return Mix


# name: (build(lib), positional inputs as (shape, requires_grad) or a plain value, keyword inputs)
HOOKED = {
    "linear": (lambda lib: lib.nn.Linear(3, 2), [((4, 3), True)], {}),
    "mix": (lambda lib: _mix_class(lib)(), [((4, 3), True), ((4, 3), False), 2.5], {"c": ((4, 3), True)}),
    "no_input_grad": (lambda lib: lib.nn.Linear(3, 2), [((4, 3), False)], {}),
}


def _np(value):
    return value.detach().cpu().numpy() if hasattr(value, "detach") else value


def _hooked_run(lib, device, name, register, loss_terms=(0, 1)):
    """Build ``HOOKED[name]`` in ``lib`` with shared weights, let ``register(module, calls)`` add hooks, run
    forward and backward. Inputs pass through ``x * 1.5`` first, so replaced grad_inputs travel upstream.
    Returns (what the hooks saw, input grads, parameter grads), all as numpy."""
    rng = np.random.default_rng(3)
    build, args, kwargs = HOOKED[name]
    module = build(lib)
    weights = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) for k, v in module.state_dict().items()}
    module.load_state_dict(weights if lib is clgrad else {k: torch.tensor(v) for k, v in weights.items()})
    if lib is clgrad:
        module.to(device)
    calls, leaves = [], []

    def make(spec):
        if not isinstance(spec, tuple):
            return spec
        arr = rng.standard_normal(spec[0]).astype(np.float32)
        leaf = clgrad.tensor(arr, device=device, requires_grad=spec[1]) if lib is clgrad else \
            torch.tensor(arr, requires_grad=spec[1])
        leaves.append(leaf)
        return leaf * 1.5

    register(module, calls)
    out = module(*[make(a) for a in args], **{k: make(v) for k, v in kwargs.items()})
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((outs[i] * (i + 1.0)).sum() for i in loss_terms if i < len(outs))
    loss.backward()
    seen = [tuple(tuple(_np(g) for g in grads) for grads in call) for call in calls]
    return (seen, [_np(x.grad) for x in leaves if x.requires_grad],
            {n: _np(p.grad) for n, p in module.named_parameters()})


def _assert_same(a, b):
    """Equal nested structure, None in the same places, close values."""
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert a == b


def _record(module, calls):
    module.register_full_backward_pre_hook(lambda m, grad_out: calls.append((grad_out,)))
    module.register_full_backward_hook(lambda m, grad_in, grad_out: calls.append((grad_in, grad_out)))


def _halve_inputs(module, calls):
    _record(module, calls)
    module.register_full_backward_hook(lambda m, grad_in, grad_out: tuple(
        None if g is None else g * 0.5 for g in grad_in))


def _triple_outputs(module, calls):
    module.register_full_backward_pre_hook(lambda m, grad_out: tuple(
        None if g is None else g * 3.0 for g in grad_out))
    _record(module, calls)


def _ordered(module, calls):
    """Hooks run in registration order, ``prepend`` first; each sees the previous one's result."""
    module.register_full_backward_hook(lambda m, grad_in, grad_out: (calls.append(("second",)), grad_in)[1])
    module.register_full_backward_hook(lambda m, grad_in, grad_out: (calls.append(("first",)), tuple(
        None if g is None else g + 1.0 for g in grad_in))[1], prepend=True)
    module.register_full_backward_hook(lambda m, grad_in, grad_out: calls.append((grad_in,)))


@pytest.mark.parametrize("name,register,loss_terms", [
    ("linear", _record, (0,)),
    ("mix", _record, (0, 1)),
    ("mix", _record, (0,)),  # an output without gradient: None in grad_output
    ("linear", _halve_inputs, (0,)),
    ("mix", _halve_inputs, (0, 1)),
    ("mix", _triple_outputs, (0, 1)),
    ("mix", _ordered, (0, 1)),
    ("no_input_grad", _record, (0,)),  # the hook fires from the output side with grad_input (None,)
])
def test_backward_hooks_match_torch(device, name, register, loss_terms):
    results = []
    for lib in (clgrad, torch):
        with _warns_if(name == "no_input_grad", UserWarning, "no inputs require gradients"):
            results.append(_hooked_run(lib, device, name, register, loss_terms))
    assert results[0][0], "the hooks did not run"
    _assert_same(*results)


def _warns_if(condition: bool, category, match=None):
    return pytest.warns(category, match=match) if condition else contextlib.nullcontext()


def test_backward_hook_handles_globals_and_errors():
    from clgrad.nn.modules import module as M

    lin, calls = nn.Linear(3, 2), []
    x = clgrad.randn(4, 3, requires_grad=True)
    handles = [lin.register_full_backward_hook(lambda m, gi, go: calls.append("hook")),
               lin.register_full_backward_pre_hook(lambda m, go: calls.append("pre")),
               M.register_module_full_backward_hook(lambda m, gi, go: calls.append("global")),
               M.register_module_full_backward_pre_hook(lambda m, go: calls.append("global pre"))]
    try:
        lin(x).sum().backward()
    finally:  # a global hook left behind would run in every later test
        for h in handles:
            h.remove()
    assert calls == ["global pre", "pre", "global", "hook"]
    lin(x).sum().backward()
    assert len(calls) == 4
    with clgrad.no_grad():
        lin.register_full_backward_hook(lambda m, gi, go: calls.append("no_grad"))
        assert lin(x).grad_fn is None
    assert len(calls) == 4
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks on a "
                                           "single Module. Please use only one of them."):
        lin.register_backward_hook(lambda m, gi, go: None)


@pytest.mark.parametrize("method,hook,message", [
    ("register_full_backward_hook", lambda m, gi, go: (gi[0], gi[0]),
     "Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
    ("register_full_backward_pre_hook", lambda m, go: (go[0], go[0]),
     "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
])
def test_backward_hook_wrong_number_of_grads(method, hook, message):
    for lib in (clgrad, torch):
        lin = lib.nn.Linear(3, 2)
        getattr(lin, method)(hook)
        with pytest.raises(RuntimeError, match=message):
            lin(lib.randn(4, 3, requires_grad=True)).sum().backward()


def _legacy_run(lib):
    act, calls = lib.nn.Sigmoid(), []
    with _warns_if(lib is clgrad, FutureWarning, "register_backward_hook is deprecated"):
        act.register_backward_hook(lambda m, gi, go: calls.append((gi, go)) or (gi[0] * 2,))
    x = lib.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    (act(x * 1.0) * lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        act.register_full_backward_hook(lambda m, gi, go: None)
    return [tuple(tuple(_np(g) for g in grads) for grads in c) for c in calls], _np(x.grad)


def test_legacy_backward_hook_runs_as_full_hook():
    """For a one-operation module PyTorch's deprecated hook sees what a full hook sees."""
    _assert_same(_legacy_run(clgrad), _legacy_run(torch))


def test_registration_errors():
    m = nn.Module()
    with pytest.raises(TypeError, match="cannot assign 'clgrad.FloatTensor' object to parameter 'w'"):
        m.register_parameter("w", clgrad.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", clgrad.ones(1))
    m.w = nn.Parameter(clgrad.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'clgrad.FloatTensor' as parameter 'w'"):
        m.w = clgrad.ones(1)
    with pytest.raises(KeyError, match="attribute 'w' already exists"):
        m.register_buffer("w", clgrad.ones(1))
    x = nn.Parameter(clgrad.ones(1))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        m.register_parameter("v", _non_leaf(x))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope  # noqa: B018

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(clgrad.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def _non_leaf(x):
    p = nn.Parameter(clgrad.ones(1))
    p.grad_fn = (x * 2).grad_fn
    return p


def test_parameter():
    p = nn.Parameter(clgrad.tensor([1.0, 2.0]))
    assert p.requires_grad and p.is_leaf
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert type(p.data) is clgrad.Tensor and type(p * 2) is clgrad.Tensor
    assert not nn.Parameter(clgrad.ones(1), requires_grad=False).requires_grad


REPRS = [
    ("Linear(3, 4)", "Linear(3, 4, bias=False)", "Bilinear(2, 3, 4)", "Identity()"),
    ("Conv2d(3, 8, 3)", "Conv2d(3, 8, (3, 5), stride=2, padding=1, dilation=2, groups=1, bias=False)",
     "Conv1d(4, 4, 3, padding='same', groups=2, padding_mode='reflect')",
     "ConvTranspose2d(4, 2, 3, stride=2, output_padding=1)"),
    ("MaxPool2d(2)", "MaxPool1d(3, 2, 1)", "AvgPool2d(2)", "AvgPool1d(3)", "AdaptiveAvgPool2d((1, 1))",
     "Upsample(scale_factor=2)", "Upsample(size=(4, 4), mode='bilinear')"),
    ("BatchNorm1d(4)", "BatchNorm2d(3, momentum=None, affine=False)", "LayerNorm([3, 4])", "LayerNorm(3, bias=False)", "GroupNorm(2, 4)", "GroupNorm(2, 4, affine=False)",
     "BatchNorm1d(3, bias=False)",
     "Dropout(0.3)", "Dropout2d()", "Embedding(10, 3, padding_idx=1)", "Embedding(5, 2, max_norm=1.0)",
     "Flatten()", "Unflatten(1, (2, 3))", "PixelShuffle(3)", "PixelUnshuffle(2)", "ChannelShuffle(4)",
     "InstanceNorm1d(4)", "InstanceNorm3d(2, affine=True, track_running_stats=True)", "ZeroPad2d((1, 2, 3, 4))",
     "ConstantPad3d(1, 2.5)", "ReflectionPad1d(2)", "ReplicationPad2d(1)", "CircularPad3d(1)",
     "Fold(4, 2, stride=2)", "Unfold((2, 3), dilation=2)", "UpsamplingNearest2d(size=3)",
     "UpsamplingBilinear2d(scale_factor=2)"),
    ("ReLU()", "ReLU(inplace=True)", "ReLU6()", "LeakyReLU(0.2)", "ELU(alpha=0.5, inplace=True)", "SELU()",
     "GELU(approximate='tanh')", "SiLU()", "Mish()", "Sigmoid()", "Tanh()", "Softmax(dim=1)",
     "LogSoftmax(dim=-1)", "Softplus(beta=2)", "Hardtanh(-2.0, 2.0)"),
    ("MSELoss()", "CrossEntropyLoss(label_smoothing=0.1)", "BCEWithLogitsLoss()", "KLDivLoss()"),
]


@pytest.mark.parametrize("exprs", REPRS, ids=lambda e: e[0])
def test_layer_repr_matches_torch(exprs):
    for expr in exprs:
        assert repr(eval("nn." + expr)) == repr(eval("torch.nn." + expr)), expr


def test_nested_repr_and_containers_match_torch():
    m, t = _pair()
    assert repr(m) == repr(t)
    for lib in (nn, torch.nn):
        lib.seq = lib.Sequential(lib.Linear(2, 2), lib.ReLU(), lib.Linear(2, 1))
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == repr(
        torch.nn.ModuleList([torch.nn.ReLU(), torch.nn.ReLU(), torch.nn.Tanh()]))
    assert repr(nn.ModuleDict({"a": nn.ReLU()})) == repr(torch.nn.ModuleDict({"a": torch.nn.ReLU()}))
    assert repr(nn.ParameterList([clgrad.ones(2, 3)])).replace("clgrad", "torch") == repr(
        torch.nn.ParameterList([torch.ones(2, 3)]))


def test_sequential():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b
    seq.append(c)
    assert seq[2] is c and list(seq) == [a, b, c]
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c] and list(sub._modules) == ["1", "2"]
    assert seq(clgrad.ones(4, 2)).shape == (4, 1)
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and seq[0] is b
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]  # noqa: B018
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("fc", a), ("act", b)]))
    assert named.fc is a and list(named.state_dict()) == ["fc.weight", "fc.bias"]


def test_module_list_dict_and_parameter_containers():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert len(ml) == 5 and isinstance(ml[0], nn.Tanh) and isinstance(ml[-1], nn.ReLU)
    assert len(list(ml.parameters())) == 6 and list(ml.state_dict())[0] == "1.weight"
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert list(md.state_dict()) == ["a.weight", "a.bias"]
    pl = nn.ParameterList([clgrad.ones(2), nn.Parameter(clgrad.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert list(pl.state_dict()) == ["0", "1"]
    pd = nn.ParameterDict({"w": clgrad.ones(2)})
    pd["b"] = clgrad.zeros(1)
    assert isinstance(pd["w"], nn.Parameter) and list(pd.keys()) == ["w", "b"]
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]


def test_optimizer_built_before_move_keeps_working(device):
    optim = pytest.importorskip("clgrad.optim")
    lin = nn.Linear(3, 2)
    opt = optim.SGD(lin.parameters(), lr=0.5)
    before = lin.weight.detach().numpy().copy()
    lin.to(device)
    x = clgrad.ones(4, 3, device=device)
    lin(x).sum().backward()
    opt.step()
    np.testing.assert_allclose(lin.weight.detach().cpu().numpy(), before - 0.5 * 4, rtol=1e-5)
    assert lin.weight.device == clgrad.device(device)


def _reassigned_orders(lib, ones, zeros):
    """Names in each store after reassigning members of a module, in the order the stores keep them."""
    m = _net_class(lib, ones, zeros)()
    m.fc1 = lib.Linear(4, 3)  # module replacing a module: keeps its place
    m.head = lib.Sequential(lib.Linear(3, 2))
    m.scale = ones(2) * 3  # buffer replacing a buffer
    m.bn.weight = lib.Parameter(ones(3))  # parameter replacing a parameter
    m.register_buffer("scratch", zeros(2), persistent=False)
    m.extra = lib.Linear(1, 1)
    m.fc2 = lib.Parameter(zeros(1))  # a parameter replacing a module moves to the parameters
    m.extra = lib.Identity()
    return ([n for n, _ in m.named_children()], [n for n, _ in m.named_parameters()],
            [n for n, _ in m.named_buffers()], list(m.state_dict()))


def test_reassignment_keeps_position_like_torch():
    got = _reassigned_orders(nn, clgrad.ones, clgrad.zeros)
    assert got == _reassigned_orders(torch.nn, torch.ones, torch.zeros)
    assert got[0] == ["fc1", "bn", "head", "extra"]


def test_replaced_first_layer_then_children_slice():
    """The resnet idiom: replace conv1, then drop the classifier with ``children()[:-1]``."""
    for lib in (nn, torch.nn):
        net = lib.Sequential()
        net.add_module("conv1", lib.Linear(3, 3))
        net.add_module("relu", lib.ReLU())
        net.add_module("fc", lib.Linear(3, 2))
        net.conv1 = lib.Linear(3, 3, bias=False)
        body = list(net.children())[:-1]
        assert [type(c).__name__ for c in body] == ["Linear", "ReLU"] and body[0].bias is None
