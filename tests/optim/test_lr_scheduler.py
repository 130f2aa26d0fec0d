"""Schedulers against PyTorch: the same lr sequence (per group) for 30 steps, and state_dict round trips."""
from __future__ import annotations

import pytest

import clgrad
import clgrad.optim as optim
from clgrad.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")

STEPS = 30


def _lambda(epoch):
    return 0.95 ** epoch


class Warmup:
    """A callable object: LambdaLR saves its ``__dict__`` in state_dict."""

    def __init__(self, n):
        self.n = n

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.n)


CASES = [
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 7, 7, 20], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=8, eta_min=1e-3)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("LambdaLR", dict(lr_lambda=_lambda)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.97)),
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("LinearLR", dict(start_factor=0.25, total_iters=6)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=10)),
    ("CosineAnnealingWarmRestarts", dict(T_0=5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=STEPS + 1)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.2], epochs=4, steps_per_epoch=8, anneal_strategy="linear",
                        three_phase=True)),
]


def _optimizers(opt_name="SGD", **kw):
    kw = kw or {"momentum": 0.9}
    p, q = clgrad.zeros(2).requires_grad_(True), clgrad.zeros(3).requires_grad_(True)
    tp, tq = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    ours = getattr(optim, opt_name)([{"params": [p]}, {"params": [q], "lr": 0.05}], lr=0.1, **kw)
    theirs = getattr(torch.optim, opt_name)([{"params": [tp]}, {"params": [tq], "lr": 0.05}], lr=0.1, **kw)
    return ours, theirs


def _check_same(ours, theirs, opt, topt):
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12, abs=1e-15)
    for g, tg in zip(opt.param_groups, topt.param_groups):
        for key in ("lr", "momentum", "betas"):
            if key in tg:
                assert g[key] == pytest.approx(tg[key], rel=1e-12, abs=1e-15), key


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_lr_sequence_matches_torch(name, kwargs):
    opt, topt = _optimizers()
    ours, theirs = getattr(sched, name)(opt, **kwargs), getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    _check_same(ours, theirs, opt, topt)
    for _ in range(STEPS):
        opt.step()
        topt.step()
        ours.step()
        theirs.step()
        _check_same(ours, theirs, opt, topt)


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_state_dict_round_trip(name, kwargs):
    """Save after 10 steps, load into a fresh optimizer + scheduler, continue: same lrs as torch."""
    opt, topt = _optimizers()
    ours, theirs = getattr(sched, name)(opt, **kwargs), getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    for _ in range(10):
        opt.step()
        topt.step()
        ours.step()
        theirs.step()
    sd = ours.state_dict()
    assert "optimizer" not in sd
    public = {k for k in theirs.state_dict() if not k.startswith("_get_lr") and k != "_is_initial"}
    assert public <= set(sd) | {"_is_initial"}
    opt2, _ = _optimizers()
    fresh = getattr(sched, name)(opt2, **kwargs)  # the usual resume order: build everything, then load
    opt2.load_state_dict(opt.state_dict())
    fresh.load_state_dict(sd)
    for _ in range(STEPS - 10):
        opt2.step()
        topt.step()
        fresh.step()
        theirs.step()
        _check_same(fresh, theirs, opt2, topt)


def test_lambda_state_dict_keeps_callable_objects():
    opt, _ = _optimizers()
    s = sched.LambdaLR(opt, [_lambda, Warmup(5)])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [None, {"n": 5}]
    other = sched.LambdaLR(opt, [_lambda, Warmup(9)])
    other.load_state_dict(sd)
    assert other.lr_lambdas[1].n == 5
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched.LambdaLR(opt, [_lambda])


def test_one_cycle_cycles_adam_beta1():
    opt, topt = _optimizers("Adam", betas=(0.9, 0.99))
    ours = sched.OneCycleLR(opt, max_lr=0.3, total_steps=20)
    theirs = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.3, total_steps=20)
    for _ in range(19):
        opt.step()
        topt.step()
        ours.step()
        theirs.step()
        _check_same(ours, theirs, opt, topt)
    ours.step()
    with pytest.raises(ValueError, match="Tried to step 21 times. The specified number of total steps is 20"):
        ours.step()


def test_sequential_lr():
    opt, topt = _optimizers()
    mk = [lambda o: sched.LinearLR(o, start_factor=0.1, total_iters=4), lambda o: sched.ExponentialLR(o, 0.9)]
    tmk = [lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=4),
           lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9)]
    ours = sched.SequentialLR(opt, [m(opt) for m in mk], milestones=[5])
    theirs = torch.optim.lr_scheduler.SequentialLR(topt, [m(topt) for m in tmk], milestones=[5])
    for i in range(STEPS):
        _check_same(ours, theirs, opt, topt)
        opt.step()
        topt.step()
        ours.step()
        theirs.step()
        if i == 12:
            opt2, _ = _optimizers()
            fresh = sched.SequentialLR(opt2, [m(opt2) for m in mk], milestones=[5])
            opt2.load_state_dict(opt.state_dict())
            fresh.load_state_dict(ours.state_dict())
            ours, opt = fresh, opt2
    with pytest.raises(ValueError, match="number of milestones to be equal to 2"):
        sched.SequentialLR(opt, [sched.ExponentialLR(opt, 0.9)] * 2, milestones=[1, 2])


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="max", patience=2, factor=0.5, cooldown=2),
                                    dict(threshold_mode="abs", threshold=0.1, patience=1, min_lr=[0.02, 0.01])])
def test_reduce_lr_on_plateau(kwargs):
    opt, topt = _optimizers()
    ours = sched.ReduceLROnPlateau(opt, **kwargs)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.89, 0.89, 0.89, 1.2, 1.3, 1.3, 1.3, 1.3] * 3
    for i, m in enumerate(metrics):
        ours.step(clgrad.tensor(m, dtype=clgrad.float64) if i % 2 else m)  # a 0-d tensor metric
        theirs.step(m)
        _check_same(ours, theirs, opt, topt)
    sd = ours.state_dict()
    other = sched.ReduceLROnPlateau(opt, **kwargs)
    other.load_state_dict(sd)
    assert other.best == ours.best and other.num_bad_epochs == ours.num_bad_epochs


ERRORS = [
    (lambda o: sched.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda o: sched.LinearLR(o, end_factor=2), ValueError, "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: sched.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: sched.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    (lambda o: sched.OneCycleLR(o, max_lr=1.0), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda o: sched.StepLR(object(), 3), TypeError, "object is not an Optimizer"),
]


@pytest.mark.parametrize("make,exc,message", ERRORS)
def test_errors(make, exc, message):
    opt, _ = _optimizers()
    with pytest.raises(exc) as info:
        make(opt)
    assert str(info.value) == message


def test_resume_needs_initial_lr():
    opt, _ = _optimizers()
    with pytest.raises(KeyError, match="initial_lr"):
        sched.StepLR(opt, 3, last_epoch=5)


def test_epoch_argument_uses_closed_form():
    opt, topt = _optimizers()
    ours, theirs = sched.StepLR(opt, 3, gamma=0.5), torch.optim.lr_scheduler.StepLR(topt, 3, gamma=0.5)
    opt.step()
    topt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        ours.step(7)
    with pytest.warns(UserWarning):
        theirs.step(7)
    _check_same(ours, theirs, opt, topt)


def test_warns_when_stepped_before_the_optimizer():
    import warnings

    opt, _ = _optimizers()
    s = sched.StepLR(opt, 3)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt, _ = _optimizers()
    s = sched.StepLR(opt, 3)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()
        s.step()
