"""End-to-end parity with PyTorch: the same small models (MLP, CNN with BatchNorm, LSTM, GRU), started from one
set of weights (torch's, moved by state_dict as numpy), trained on the same batches with every optimizer; the
loss must agree at every step, and BatchNorm's running statistics after training."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn as cnn
import clgrad.nn.functional as CF
import clgrad.optim as coptim

torch = pytest.importorskip("torch")

STEPS = 5
BATCH = 6


def _mlp(nn):
    return nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))


def _cnn(nn):
    # the conv has no bias: BatchNorm cancels it, so its gradient is rounding noise that Adam-like
    # optimizers would blow up to full-size steps, differently in each library
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 3))


def _recurrent(nn, kind, **kwargs):
    class Head(nn.Module):
        """A recurrent layer over (N, L, 3) and a linear read-out of its last time step."""

        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, kind)(3, 6, batch_first=True, **kwargs)
            self.head = nn.Linear(kwargs.get("proj_size") or 6, 2)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    return Head()


# name: (builder taking an nn namespace, input shape of one batch, loss: 'ce' (3 classes) or 'mse' (2 outputs))
MODELS = {
    "mlp": (_mlp, (BATCH, 5), "ce"),
    "cnn": (_cnn, (BATCH, 2, 6, 6), "ce"),
    "lstm": (lambda nn: _recurrent(nn, "LSTM"), (BATCH, 4, 3), "mse"),
    "lstm_proj": (lambda nn: _recurrent(nn, "LSTM", proj_size=4), (BATCH, 4, 3), "mse"),
    "gru": (lambda nn: _recurrent(nn, "GRU"), (BATCH, 4, 3), "mse"),
}

# (optimizer class name, keyword arguments, steps): the same expression builds both libraries' optimizer.
# RAdam takes plain momentum steps until its variance estimate rho_t passes 5, at step 6 with beta2=0.999,
# so it runs 8 steps to reach the rectified branch.
OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2), STEPS),
    ("SGD", dict(lr=0.1), STEPS),
    ("Adam", dict(lr=0.01), STEPS),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=1e-2), STEPS),
    ("AdamW", dict(lr=0.01, weight_decay=0.1), STEPS),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=1e-2), STEPS),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, initial_accumulator_value=0.1), STEPS),
    ("Adadelta", dict(lr=1.0, weight_decay=1e-2), STEPS),
    ("Adamax", dict(lr=0.02, weight_decay=1e-2), STEPS),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), STEPS),
    ("RAdam", dict(lr=0.01, weight_decay=1e-2), 8),
    ("LBFGS", dict(lr=0.5, max_iter=3, history_size=4), STEPS),
]


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """These models are tiny: torch's thread pool only adds wake-up latency on a shared, busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _batches(shape, loss_kind, steps):
    rng = np.random.default_rng(7)
    out = []
    for _ in range(steps):
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 3, BATCH) if loss_kind == "ce" else rng.standard_normal((BATCH, 2)).astype(np.float32)
        out.append((x, y))
    return out


def _loss(F, loss_kind, out, y):
    return F.cross_entropy(out, y) if loss_kind == "ce" else F.mse_loss(out, y)


def _train(model, opt, F, tensor, batches, loss_kind) -> list:
    """The loss at each step (for LBFGS: the loss its step() returns, that of the first evaluation)."""
    losses = []
    for x, y in batches:
        x, y = tensor(x), tensor(y)

        def closure(x=x, y=y):
            opt.zero_grad()
            loss = _loss(F, loss_kind, model(x), y)
            loss.backward()
            return loss

        losses.append(opt.step(closure).item())
    return losses


@pytest.mark.parametrize("opt_name,opt_kwargs,steps", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(OPTIMIZERS)])
@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_training_matches_torch(device, model_name, opt_name, opt_kwargs, steps):
    build, in_shape, loss_kind = MODELS[model_name]
    torch.manual_seed(0)
    tmodel, model = build(torch.nn), build(cnn)
    tstate = tmodel.state_dict()
    assert list(model.state_dict()) == list(tstate)
    for key, value in model.state_dict().items():
        assert tuple(value.shape) == tuple(tstate[key].shape), key
    model.load_state_dict({k: v.numpy() for k, v in tstate.items()})
    model.to(device)
    topt = getattr(torch.optim, opt_name)(tmodel.parameters(), **opt_kwargs)
    opt = getattr(coptim, opt_name)(model.parameters(), **opt_kwargs)

    batches = _batches(in_shape, loss_kind, steps)
    tlosses = _train(tmodel, topt, torch.nn.functional, torch.tensor, batches, loss_kind)
    losses = _train(model, opt, CF, lambda a: clgrad.tensor(a, device=device), batches, loss_kind)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-3)
    assert len(set(tlosses)) > 1, "the optimizer should move the loss"

    # parameters (loosely: float32 rounding grows over the steps) and BatchNorm's running statistics
    state = model.state_dict()
    for key, tvalue in tmodel.state_dict().items():
        tight = "running" in key or "num_batches" in key
        np.testing.assert_allclose(state[key].cpu().numpy(), tvalue.numpy(), rtol=1e-3 if tight else 1e-2,
                                   atol=1e-4 if tight else 1e-3, err_msg=key)
