"""Training steps against the same model in PyTorch-CPU: the MNIST CNN (examples/mnist.py's Net, batch 64), the
two-layer net (500 Adam steps, N=64 D_in=1000 H=100 D_out=10), a vanilla RNN and an LSTM (input 32, hidden 128,
sequence 50, batch 32), plus device memory over many MNIST steps (it should stay flat).

    python bench/train.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--memory-steps 1000]

A step is zero_grad, forward, loss, backward, optimizer.step, with no synchronize inside; each timing sample ends
with one. Data is random (the same shapes as the real data): these measure speed, not learning.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, Bench, Target, at_most_times, rand, rng  # noqa: E402

import clgrad  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples"))
from mnist import Net as ClgradNet  # noqa: E402


def torch_net(torch):
    """examples/mnist.py's Net written in torch."""
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 320)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, training=self.training)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


def step_fn(model, opt, loss_fn, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def mnist_step(lib, device, batch):
    # classic=True: the example's own dropouts, the same net torch_net builds
    model = (ClgradNet(classic=True) if lib is clgrad else torch_net(lib)).to(device)
    x = lib.tensor(rand((batch, 1, 28, 28), 1), device=device)
    y = lib.tensor(rng(2).integers(0, 10, batch), device=device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    return step_fn(model, opt, lib.nn.functional.nll_loss, x, y)


def two_layer_steps(lib, device, steps):
    n, d_in, h, d_out = 64, 1000, 100, 10
    nn = lib.nn
    model = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out)).to(device)
    x, y = lib.tensor(rand((n, d_in), 3), device=device), lib.tensor(rand((n, d_out), 4), device=device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-4)
    step = step_fn(model, opt, nn.MSELoss(reduction="sum"), x, y)

    def run():
        for _ in range(steps):
            step()

    return run


def rnn_step(lib, device, cell, seq, batch):
    nn = lib.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, cell)(32, 128)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[-1])

    model = Model().to(device)
    x = lib.tensor(rand((seq, batch, 32), 5), device=device)
    y = lib.tensor(rng(6).integers(0, 10, batch), device=device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    return step_fn(model, opt, lib.nn.functional.cross_entropy, x, y)


def memory_case(b: Bench, steps: int) -> None:
    name = f"MNIST device memory over {steps} steps"
    if not (b.on_cl and b.wants(name)):
        return
    step = mnist_step(clgrad, b.device, 64 if not b.smoke else 4)
    for _ in range(3):  # first steps create the optimizer state and fill the allocator's cache
        step()
    b.sync()
    before = clgrad.opencl.memory_allocated(b.device), clgrad.opencl.memory_reserved(b.device)
    for _ in range(steps):
        step()
    b.sync()
    after = clgrad.opencl.memory_allocated(b.device), clgrad.opencl.memory_reserved(b.device)
    flat = after[0] <= before[0] and after[1] <= before[1] * 1.05
    b.add(name, {}, target=Target("flat", value=flat),
          note=f"allocated {before[0]} -> {after[0]} B, reserved {before[1]} -> {after[1]} B")


def main(argv=None) -> Bench:
    def extra(ap):
        ap.add_argument("--memory-steps", type=int, default=None, help="MNIST steps for the memory check")

    b = Bench(__doc__, __file__, argv, extra)
    T, d = b.torch, b.device
    batch = b.pick(4, 64, 64)
    adam_steps = b.pick(5, 100, 500)
    seq, rnn_batch = b.pick((5, 4), (50, 32), (50, 32))
    cases = [
        (f"MNIST CNN train step, batch {batch}", lambda lib, dev: mnist_step(lib, dev, batch), 1.5),
        (f"two-layer net, {adam_steps} Adam steps", lambda lib, dev: two_layer_steps(lib, dev, adam_steps), 2.0),
        (f"RNN train step (32->128, seq {seq}, batch {rnn_batch})",
         lambda lib, dev: rnn_step(lib, dev, "RNN", seq, rnn_batch), 2.0),
        (f"LSTM train step (32->128, seq {seq}, batch {rnn_batch})",
         lambda lib, dev: rnn_step(lib, dev, "LSTM", seq, rnn_batch), 2.0),
    ]
    for name, make, factor in cases:
        if b.wants(name):
            times = b.measure(clgrad=make(clgrad, d), torch=T and make(T, "cpu"))
            b.add(name, times, target=at_most_times(factor, "torch"))
    steps = b.args.memory_steps
    memory_case(b, b.pick(2, 100, 1000) if steps is None else steps)
    b.finish()
    return b


if __name__ == "__main__":
    main()
