"""Optimizers against PyTorch: the same start, the same gradients, the same parameters after every step."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.optim as optim
from tests.helpers import assert_close, to_numpy

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,)]
STEPS = 6

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.02, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
]


def _data(seed=0):
    rng = np.random.default_rng(seed)
    start = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(2 * STEPS)]
    return start, grads


def _pair(name, kwargs, device, start, group_lrs=None):
    """The same parameters in clgrad (on ``device``) and torch, each with its optimizer."""
    ours = [clgrad.tensor(a, device=device).requires_grad_(True) for a in start]
    theirs = [torch.tensor(a, requires_grad=True) for a in start]
    extra = {}
    if "foreach" in getattr(torch.optim, name).__init__.__code__.co_varnames:
        extra["foreach"] = False
    if group_lrs:
        ours_params = [{"params": [p], "lr": lr} for p, lr in zip(ours, group_lrs)]
        theirs_params = [{"params": [p], "lr": lr} for p, lr in zip(theirs, group_lrs)]
    else:
        ours_params, theirs_params = ours, theirs
    return (ours, getattr(optim, name)(ours_params, **kwargs),
            theirs, getattr(torch.optim, name)(theirs_params, **kwargs, **extra))


def _step(ours, opt, theirs, topt, grads, device):
    for p, q, g in zip(ours, theirs, grads):
        p.grad = clgrad.tensor(g, device=device)
        q.grad = torch.tensor(g)
    opt.step()
    topt.step()
    for p, q in zip(ours, theirs):
        assert_close(p.detach(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(device, name, kwargs):
    start, grads = _data()
    ours, opt, theirs, topt = _pair(name, kwargs, device, start)
    for g in grads:  # 12 steps: RAdam's rectified branch starts at step 6
        _step(ours, opt, theirs, topt, g, device)


@pytest.mark.parametrize("name,kwargs", CASES[1::2], ids=[f"{n}-{2 * i + 1}" for i, (n, _) in
                                                          enumerate(CASES[1::2])])
def test_state_dict_round_trip(device, name, kwargs):
    """Save half way, load into a fresh optimizer over copies of the parameters: same trajectory as torch."""
    start, grads = _data(1)
    ours, opt, theirs, topt = _pair(name, kwargs, device, start)
    for g in grads[:STEPS]:
        _step(ours, opt, theirs, topt, g, device)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for i, st in tsd["state"].items():
        assert sorted(sd["state"][i]) == sorted(st)
    assert [sorted(g) for g in sd["param_groups"]] == [sorted(g) for g in tsd["param_groups"]]
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    copies = [p.detach().clone().requires_grad_(True) for p in ours]
    fresh = getattr(optim, name)(copies, **kwargs)
    fresh.load_state_dict(sd)
    for g in grads[STEPS:]:
        _step(copies, fresh, theirs, topt, g, device)
    # the original keeps its own state: loading copied it
    for g in grads[STEPS:]:
        for p, a in zip(ours, g):
            p.grad = clgrad.tensor(a, device=device)
        opt.step()
    for p, q in zip(ours, copies):
        assert_close(p.detach(), to_numpy(q.detach()), rtol=0, atol=0)


def test_param_groups_with_different_lrs(device):
    start, grads = _data(2)
    ours, opt, theirs, topt = _pair("SGD", dict(lr=0.1, momentum=0.5), device, start, group_lrs=[0.5, 0.01])
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.01]
    assert opt.param_groups[0]["momentum"] == 0.5
    for g in grads[:3]:
        _step(ours, opt, theirs, topt, g, device)
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]


def test_quadratic_with_closure(device):
    """A closure that computes a loss and its gradients; Adam drives a quadratic towards its minimum."""
    target = clgrad.tensor([1.0, -2.0, 3.0], device=device)
    x = clgrad.zeros(3, device=device).requires_grad_(True)
    opt = optim.Adam([x], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = ((x - target) ** 2).sum()
        loss.backward()
        return loss

    first = float(opt.step(closure))
    for _ in range(200):
        last = float(opt.step(closure))
    assert last < first * 1e-3
    assert_close(x.detach(), np.array([1.0, -2.0, 3.0], np.float32), rtol=0, atol=2e-2)


def test_skips_params_without_grad(device):
    a = clgrad.ones(2, device=device).requires_grad_(True)
    b = clgrad.ones(2, device=device).requires_grad_(True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = clgrad.ones(2, device=device)
    opt.step()
    assert b not in opt.state and a in opt.state
    assert opt.state[a]["step"] == 1
    assert_close(b.detach(), np.ones(2, np.float32))


def test_zero_grad(device):
    p = clgrad.ones(3, device=device).requires_grad_(True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = clgrad.ones(3, device=device)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    assert_close(p.grad, np.zeros(3, np.float32))
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no gradient: nothing to do
    opt.step()  # and no update
    assert_close(p.detach(), np.ones(3, np.float32))


VALIDATION = [
    ("SGD", dict(lr=-1), "Invalid learning rate: -1"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1e-2), "Invalid weight_decay value: -0.01"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("Adam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("Adam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("Adam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("AdamW", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adamax", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
]


@pytest.mark.parametrize("name,kwargs,message", VALIDATION)
def test_validation_matches_torch(name, kwargs, message):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kwargs)
    assert str(theirs.value) == message
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
                       + "$"):
        getattr(optim, name)([clgrad.ones(1).requires_grad_(True)], **kwargs)


def test_param_errors():
    p = clgrad.ones(2).requires_grad_(True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got clgrad.FloatTensor"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([1], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    q = clgrad.ones(2).requires_grad_(True)
    opt.add_param_group({"params": q, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([p], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([{"params": [p, q]}, {"params": []}], lr=0.1).load_state_dict(opt.state_dict())


def test_required_lr():
    from clgrad.optim.optimizer import Optimizer, required

    class Custom(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, dict(lr=lr))

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Custom([clgrad.ones(1).requires_grad_(True)])
    assert repr(required) == "<required parameter>"


def test_loads_torch_state_dict():
    """A state_dict made by torch (its tensors converted to clgrad, 'step' a 0-d tensor) loads and continues."""
    start, grads = _data(3)
    ours, opt, theirs, topt = _pair("Adam", dict(lr=0.01, amsgrad=True), "cpu", start)
    for g in grads[:3]:
        for q, a in zip(theirs, g):
            q.grad = torch.tensor(a)
        topt.step()
    tsd = topt.state_dict()
    conv = {"state": {i: {k: clgrad.tensor(v.numpy()) for k, v in st.items()} for i, st in tsd["state"].items()},
            "param_groups": tsd["param_groups"]}
    for p, q in zip(ours, theirs):
        with clgrad.no_grad():
            p.copy_(clgrad.tensor(q.detach().numpy()))
    opt.load_state_dict(conv)
    assert opt.state[ours[0]]["step"] == 3.0
    for g in grads[3:6]:
        _step(ours, opt, theirs, topt, g, "cpu")


@pytest.mark.parametrize("name,kwargs", CASES[1::2], ids=[f"{n}-{2 * i + 1}" for i, (n, _) in
                                                          enumerate(CASES[1::2])])
def test_step_never_reads_back(device, name, kwargs, monkeypatch):
    """A step only launches work: nothing is copied back to the host (no .item() inside step)."""
    from clgrad.backends.cpu import CPUBackend
    from clgrad.backends.opencl.backend import OpenCLBackend

    params = [clgrad.ones(4, device=device).requires_grad_(True) for _ in range(2)]
    opt = getattr(optim, name)(params, **kwargs)

    def forbidden(self, t):
        raise AssertionError("read back to the host inside step()")

    for _ in range(2):
        for p in params:
            p.grad = clgrad.full((4,), 0.5, device=device)
        with monkeypatch.context() as m:
            m.setattr(CPUBackend, "read", forbidden)
            m.setattr(OpenCLBackend, "read", forbidden)
            m.setattr(OpenCLBackend, "synchronize", forbidden)
            opt.step()


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                                  "RAdam", "LBFGS"])
def test_defaults_and_repr_match_torch(name):
    """Same group options (so state_dicts have the same keys) and the same printout."""
    kwargs = {"lr": 0.1} if name == "SGD" else {}
    ours = getattr(optim, name)([clgrad.ones(1).requires_grad_(True)], **kwargs)
    theirs = getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kwargs)
    assert ours.defaults == theirs.defaults
    assert repr(ours) == repr(theirs)
    if name != "LBFGS":
        ours.add_param_group({"params": [clgrad.ones(1).requires_grad_(True)], "lr": 0.5})
        theirs.add_param_group({"params": [torch.ones(1, requires_grad=True)], "lr": 0.5})
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name,kwargs", CASES[::2], ids=[f"{n}-{2 * i}" for i, (n, _) in enumerate(CASES[::2])])
def test_torch_loads_our_state_dict(name, kwargs):
    """Our state_dict, its tensors handed to torch as they are (a float 'step' included), resumes in torch."""
    start, grads = _data(4)
    ours, opt, _, _ = _pair(name, kwargs, "cpu", start)
    for g in grads[:STEPS]:
        for p, a in zip(ours, g):
            p.grad = clgrad.tensor(a)
        opt.step()
    sd = opt.state_dict()
    converted = {"state": {i: {k: torch.tensor(to_numpy(v)) if isinstance(v, clgrad.Tensor) else v
                               for k, v in st.items()} for i, st in sd["state"].items()},
                 "param_groups": sd["param_groups"]}
    theirs = [torch.tensor(to_numpy(p.detach()), requires_grad=True) for p in ours]
    topt = getattr(torch.optim, name)(theirs, **kwargs, foreach=False)
    topt.load_state_dict(converted)
    for g in grads[STEPS:]:
        _step(ours, opt, theirs, topt, g, "cpu")
