"""PyTorch's "Deep Learning with PyTorch: A 60 Minute Blitz" with ``import clgrad as torch``.

    python examples/blitz.py [--device opencl:N|cpu] [--epochs 2] [--seed 0]
    python examples/blitz.py --smoke          # a few seconds

Tensors, the numpy bridge, moving tensors between devices, autograd, and the blitz's small convolutional
network trained as a CIFAR-10 classifier. There is no CIFAR-10 here, so the images are synthetic: each
class has its own coarse colour layout, and each image is its class's layout plus strong noise, 3x32x32 in
[-1, 1] like normalised CIFAR images. The network has to find the layout under the noise.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F
import clgrad.optim as optim
from clgrad.utils.data import DataLoader, TensorDataset

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def tensors(device) -> None:
    """Creating tensors, operations on them, indexing and reshaping."""
    print("uninitialised:", torch.empty(5, 3).shape)  # whatever the memory held, so only its shape
    print("rand:", torch.rand(5, 3))
    print("zeros, long:", torch.zeros(5, 3, dtype=torch.long))
    x = torch.tensor([5.5, 3])
    x = x.new_ones(5, 3, dtype=torch.double)  # new_* methods take a size and reuse the device
    x = torch.randn_like(x, dtype=torch.float)
    print("x.size() =", x.size())

    y = torch.rand(5, 3)
    result = torch.empty(5, 3)
    torch.add(x, y, out=result)
    assert torch.equal(result, x + y) and torch.equal(torch.add(x, y), x + y)
    y.add_(x)  # in-place ops end in an underscore: y now holds x + y
    assert torch.allclose(y, result)
    print("x[:, 1] =", x[:, 1])

    x = torch.randn(4, 4)
    y = x.view(16)
    z = x.view(-1, 8)  # -1: inferred from the other dimensions
    print("view sizes:", x.size(), y.size(), z.size())
    print("one element as a Python number:", torch.randn(1).item())


def numpy_bridge(device) -> None:
    """On the cpu a tensor and its numpy array share memory: changing one changes the other."""
    a = torch.ones(5)
    b = a.numpy()
    a.add_(1)
    print("after a.add_(1), b =", b)
    assert (b == 2).all()

    a = np.ones(5)
    b = torch.from_numpy(a)
    np.add(a, 1, out=a)
    print("after np.add(a, 1, out=a), b =", b)
    assert torch.equal(b, torch.full((5,), 2.0, dtype=torch.double))
    # Memory on an OpenCL device is not the host's: copy it to the cpu first, as with CUDA tensors.
    print("a tensor on", device, "as numpy:", torch.arange(3, device=device).cpu().numpy())


def to_device(device) -> None:
    """``.to`` moves a tensor to a device (and can change its dtype on the way)."""
    x = torch.randn(4)
    y = torch.ones_like(x, device=device)  # created directly on the device
    x = x.to(device)
    z = x + y
    print("z =", z)
    print("back on the cpu as double:", z.to("cpu", torch.double))


def autograd(device) -> None:
    """requires_grad records operations; backward fills .grad; no_grad turns recording off."""
    x = torch.ones(2, 2, requires_grad=True, device=device)
    y = x + 2
    print("y.grad_fn =", y.grad_fn)
    z = y * y * 3
    out = z.mean()
    out.backward()
    # out = 1/4 sum 3 (x + 2)^2, so d out / dx = 3/2 (x + 2) = 4.5 at x = 1
    print("x.grad =", x.grad)
    assert torch.allclose(x.grad, torch.full((2, 2), 4.5, device=device))

    # A non-scalar output: backward(v) computes the vector-Jacobian product v^T J.
    x = torch.randn(3, requires_grad=True, device=device)
    y = x * 2
    while y.detach().norm() < 1000:
        y = y * 2
    v = torch.tensor([0.1, 1.0, 0.0001], device=device)
    y.backward(v)
    scale = (y / x).detach()  # y = 2^k x, so the product is v * 2^k
    assert torch.allclose(x.grad, v * scale)
    print("vector-Jacobian product x.grad =", x.grad)

    print("x.requires_grad:", x.requires_grad, " (x ** 2).requires_grad:", (x ** 2).requires_grad)
    with torch.no_grad():
        print("inside no_grad, (x ** 2).requires_grad:", (x ** 2).requires_grad)
    print("x.detach().requires_grad:", x.detach().requires_grad)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # every dimension but the batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def synthetic_cifar(n_train: int, n_test: int, seed: int):
    """Train and test TensorDatasets of (3x32x32 float image, class index); the classes share their layouts."""
    rng = np.random.default_rng(seed)
    layouts = np.kron(rng.uniform(-1.5, 1.5, (len(CLASSES), 3, 4, 4)), np.ones((8, 8)))  # 4x4 colour blocks

    def split(n):
        labels = rng.integers(0, len(CLASSES), n)
        images = np.clip(layouts[labels] + rng.standard_normal((n, 3, 32, 32)), -1, 1)
        return TensorDataset(torch.tensor(images, dtype=torch.float), torch.tensor(labels))

    return split(n_train), split(n_test)


def train(net, loader, device, epochs: int, log_every: int) -> list[float]:
    """The blitz's loop; returns the running losses it printed."""
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    logged = []
    for epoch in range(epochs):
        running_loss = 0.0
        for i, (inputs, labels) in enumerate(loader):
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % log_every == log_every - 1:
                logged.append(running_loss / log_every)
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {logged[-1]:.3f}")
                running_loss = 0.0
    return logged


def evaluate(net, loader, device) -> float:
    correct_pred = dict.fromkeys(CLASSES, 0)
    total_pred = dict.fromkeys(CLASSES, 0)
    with torch.no_grad():  # no training, so no gradients needed
        for images, labels in loader:
            predictions = net(images.to(device)).argmax(1).cpu()
            for label, prediction in zip(labels.tolist(), predictions.tolist()):
                correct_pred[CLASSES[label]] += label == prediction
                total_pred[CLASSES[label]] += 1
    for name in CLASSES:
        print(f"Accuracy for class: {name:5s} is {100 * correct_pred[name] / max(total_pred[name], 1):.1f} %")
    accuracy = sum(correct_pred.values()) / sum(total_pred.values())
    print(f"Accuracy of the network on the {sum(total_pred.values())} test images: {100 * accuracy:.1f} %")
    return accuracy


def classifier(args, device) -> float:
    train_set, test_set = synthetic_cifar(args.train_size, args.test_size, args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=generator)
    test_loader = DataLoader(test_set, batch_size=100)

    net = Net().to(device)
    start = time.perf_counter()
    logged = train(net, train_loader, device, args.epochs, args.log_every)
    print(f"Finished training in {time.perf_counter() - start:.1f} s; "
          f"initial loss {logged[0]:.6g}, final loss {logged[-1]:.6g}")

    # Save the weights and load them into a fresh network, as the blitz does before testing.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cifar_net.pth")
        torch.save(net.state_dict(), path)
        net = Net().to(device)
        net.load_state_dict(torch.load(path, map_location=device))
    return evaluate(net, test_loader, device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="train on fewer images (a few seconds)")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--train-size", type=int, default=4000)
    p.add_argument("--test-size", type=int, default=1000)
    p.add_argument("--log-every", type=int, default=200, help="print the running loss every N mini-batches")
    args = p.parse_args()
    if args.smoke:
        args.epochs, args.train_size, args.test_size, args.log_every = 1, 1600, 200, 100
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    for title, part in (("Tensors", tensors), ("The numpy bridge", numpy_bridge),
                        (f"Tensors on {device}", to_device), ("Autograd", autograd)):
        print(f"== {title}")
        part(device)
        print()
    print("== Training a classifier\n", Net(), sep="")
    accuracy = classifier(args, device)
    # chance is 10%
    sys.exit(0 if accuracy > (0.3 if args.smoke else 0.8) else 1)


if __name__ == "__main__":
    main()
