"""Training steps against the same model in PyTorch-CPU: the MNIST CNN (examples/mnist.py's Net, batch 64), a
ResNet basic block (two 3x3 convs of 64 channels with BatchNorm and ReLU, batch 32 at 16x16), the two-layer net (500
Adam steps, N=64 D_in=1000 H=100 D_out=10), a vanilla RNN and an LSTM (input 32, hidden 128, sequence 50, batch 32),
two LSTMCells of 51 stepped 100 times in Python (forward and backward), plus device memory over many MNIST steps
(it should stay flat).

    python bench/train.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--memory-steps 1000]
                          [--rounds R]

The MNIST, ResNet-block and LSTMCell cases get a second row, "captured": the same step compiled with
``clgrad.compile(step, mode="reduce-overhead")`` (captured once, then replayed), in processes of its own too.

Each framework runs each case in a process of its own with its default settings (``bench/_child.py``; torch keeps
its OpenMP defaults, and both use the same thread count: the core count, torch's default): ``R`` rounds (3, quick
2, smoke 1) alternate which framework goes first, and the times are the medians of all their samples. A step is
zero_grad, forward, loss, backward, optimizer.step, with no synchronize inside; each timing sample ends with one.
Data is random (the same shapes as the real data): these measure speed, not learning.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    ROOT,
    THREADS,
    Bench,
    Target,
    at_most_times,
    child_env,
    fmt_time,
    load,
    rand,
    rng,
)

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


def resnet_block_step(lib, device, batch, size):
    """One ResNet basic block (conv3x3-BN-ReLU-conv3x3-BN, identity shortcut, ReLU) at 64 channels."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, ch=64):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)
            self.conv2, self.bn2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            return lib.relu(self.bn2(self.conv2(out)) + x)

    model = Block().to(device)
    x = lib.tensor(rand((batch, 64, size, size), 7), device=device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return step_fn(model, opt, lambda out, _: out.mean(), x, None)


def resnet18_step(lib, device, batch, size):
    """torchvision's ResNet-18 (BasicBlocks [2, 2, 2, 2], 7x7 stem, max pool, 1x1 downsamples), 10 classes, at
    size x size inputs, SGD with momentum and cross-entropy: written out here, as no torchvision is installed."""
    nn = lib.nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            return self.fc(lib.flatten(self.pool(self.layers(self.stem(x))), 1))

    model = ResNet18().to(device)
    x = lib.tensor(rand((batch, 3, size, size), 10), device=device)
    y = lib.tensor(rng(11).integers(0, 10, batch), device=device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return step_fn(model, opt, lib.nn.functional.cross_entropy, x, y)


def lstm_cells_step(lib, device, batch, steps):
    """PyTorch's time_sequence_prediction example: two LSTMCells of 51 stepped in Python, then a linear head."""
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1, self.lstm2, self.linear = nn.LSTMCell(1, 51), nn.LSTMCell(51, 51), nn.Linear(51, 1)

        def forward(self, x):
            h1 = c1 = h2 = c2 = lib.zeros(x.shape[0], 51, device=x.device)
            outputs = []
            for t in range(x.shape[1]):
                h1, c1 = self.lstm1(x[:, t:t + 1], (h1, c1))
                h2, c2 = self.lstm2(h1, (h2, c2))
                outputs.append(self.linear(h2))
            return lib.cat(outputs, dim=1)

    model = Sequence().to(device)
    x = lib.tensor(rand((batch, steps), 8), device=device)
    y = lib.tensor(rand((batch, steps), 9), device=device)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    return step_fn(model, opt, nn.MSELoss(), x, y)


def case_table(size: str) -> dict:
    """The cases by key: (name, make(lib, device) -> step, at most this many times torch's time). ``size`` is
    "smoke", "quick" or "full"."""
    pick = {"smoke": 0, "quick": 1, "full": 2}[size]
    batch = (4, 64, 64)[pick]
    adam_steps = (5, 100, 500)[pick]
    seq, rnn_batch = ((5, 4), (50, 32), (50, 32))[pick]
    res_batch, res_size = ((2, 8), (32, 16), (32, 16))[pick]
    r18_batch = (2, 8, 32)[pick]
    cell_batch, cell_steps = ((4, 5), (97, 100), (97, 100))[pick]
    return {
        "mnist": (f"MNIST CNN train step, batch {batch}", lambda lib, dev: mnist_step(lib, dev, batch), 0.8),
        "resnet_block": (f"ResNet basic block step (64 ch, {res_size}x{res_size}, batch {res_batch})",
                         lambda lib, dev: resnet_block_step(lib, dev, res_batch, res_size), 1.0),
        "resnet18": (f"ResNet-18 train step (32x32, batch {r18_batch})",
                     lambda lib, dev: resnet18_step(lib, dev, r18_batch, 32), 1.5),
        "two_layer": (f"two-layer net, {adam_steps} Adam steps",
                      lambda lib, dev: two_layer_steps(lib, dev, adam_steps), 2.0),
        "rnn": (f"RNN train step (32->128, seq {seq}, batch {rnn_batch})",
                lambda lib, dev: rnn_step(lib, dev, "RNN", seq, rnn_batch), 2.0),
        "lstm": (f"LSTM train step (32->128, seq {seq}, batch {rnn_batch})",
                 lambda lib, dev: rnn_step(lib, dev, "LSTM", seq, rnn_batch), 2.0),
        "lstm_cells": (f"two LSTMCells x {cell_steps} Python steps (51, batch {cell_batch})",
                       lambda lib, dev: lstm_cells_step(lib, dev, cell_batch, cell_steps), 1.5),
    }


# the cases also measured with the step captured and replayed (``clgrad.compile(step, mode="reduce-overhead")``)
CAPTURED = ("mnist", "resnet_block", "resnet18", "lstm_cells")
CAPTURED_FACTOR = 0.6  # the target for a captured step: at most this many times torch's time


def run_child(keys, framework: str, b: Bench, size: str) -> dict:
    """Samples of ``keys``' cases from one child process running ``framework``: {key: [seconds per step]}."""
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py"), *keys,
           "--framework", framework, "--device", b.device if framework != "torch" else "cpu", "--size", size,
           "--samples", str(b.repeats), "--min-time", str(b.min_time)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=child_env())
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["key"]] = rec["samples"]
    return out


def measure_apart(b: Bench, keys, size: str, rounds: int) -> dict:
    """{key: {framework: [samples]}}: each framework in its own processes (one per round running ``keys``),
    ``rounds`` rounds alternating which goes first."""
    captured = ["captured"] if b.on_cl and any(k in CAPTURED for k in keys) else []
    frameworks = ["clgrad"] + captured + (["torch"] if b.torch is not None else [])
    samples = {k: {fw: [] for fw in frameworks} for k in keys}
    for r in range(rounds):
        for fw in (frameworks if r % 2 == 0 else frameworks[::-1]):
            wanted = [k for k in keys if fw != "captured" or k in CAPTURED]
            for key, got in run_child(wanted, fw, b, size).items():
                samples[key][fw] += got
    return samples


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


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def main(argv=None) -> Bench:
    def extra(ap):
        ap.add_argument("--memory-steps", type=int, default=None, help="MNIST steps for the memory check")
        ap.add_argument("--rounds", type=int, default=None, help="child processes per case and framework")

    b = Bench(__doc__, __file__, argv, extra, own_processes=True)
    size = "smoke" if b.smoke else "quick" if b.quick else "full"
    table = case_table(size)
    keys = [k for k, (name, _, _) in table.items() if b.wants(name)]
    rounds = b.args.rounds or b.pick(1, 2, 3)
    if load() > THREADS:
        print(f"warning: load average {load():.1f} above the {THREADS} cores: with its default (spinning) OpenMP "
              "waits torch suffers most from other processes; measure on a quiet machine", file=sys.stderr, flush=True)
    # smoke: one child per framework for all cases; otherwise one per case, framework and round, row by row
    groups = [keys] if b.smoke else [[k] for k in keys]
    for group in groups:
        add_rows(b, table, group, measure_apart(b, group, size, rounds), rounds)
    steps = b.args.memory_steps
    memory_case(b, b.pick(2, 100, 1000) if steps is None else steps)
    b.finish()
    return b


def add_rows(b: Bench, table: dict, keys, samples: dict, rounds: int) -> None:
    for key in keys:
        name, _, factor = table[key]
        got = dict(samples[key])
        captured = got.pop("captured", None)
        times = {fw: median(v) for fw, v in got.items() if v}
        spread = "; ".join(f"{fw} {fmt_time(min(v)).strip()}-{fmt_time(max(v)).strip()}" for fw, v in got.items() if v)
        b.add(name, times, target=at_most_times(factor, "torch"), samples=got,
              note=f"{rounds} rounds of own processes, {len(got['clgrad'])} samples each ({spread})")
        if captured:  # the captured step in the clgrad column; eager clgrad as the reference
            times = {"clgrad": median(captured), "ref": times.get("clgrad"), "torch": times.get("torch")}
            b.add(f"{name}, captured", {k: v for k, v in times.items() if v}, ref_name="eager clgrad",
                  target=at_most_times(CAPTURED_FACTOR, "torch"), samples={"clgrad": captured, "torch": got.get("torch", [])},
                  note=f"clgrad.compile(step, mode='reduce-overhead'); clgrad {fmt_time(min(captured)).strip()}-"
                       f"{fmt_time(max(captured)).strip()}")


if __name__ == "__main__":
    main()
