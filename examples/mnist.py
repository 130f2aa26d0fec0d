"""The classic MNIST CNN (PyTorch's examples/mnist) with ``import clgrad as torch``.

    python examples/mnist.py --dataset fashion-mnist --epochs 3
    python examples/mnist.py --smoke            # a few batches, for a quick check

Checkpoints of the model and the optimizer are written every ``--save-interval`` batches; ``--resume``
continues from the last one.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F
import clgrad.optim as optim
from clgrad.datasets import MNIST, FashionMNIST, transforms
from clgrad.utils.data import DataLoader


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


def train(args, model, device, loader, optimizer, epoch, state):
    model.train()
    start, seen = time.perf_counter(), 0
    for batch_idx, (data, target) in enumerate(loader):
        if epoch == state["epoch"] and batch_idx < state["batch"]:
            continue  # resumed: skip the batches this epoch already trained on
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        seen += len(data)
        if batch_idx % args.log_interval == 0:
            rate = seen / (time.perf_counter() - start)
            done = batch_idx * len(data)
            bar = "#" * (30 * done // len(loader.dataset))
            print(f"\rTrain epoch {epoch} [{bar:<30}] {done}/{len(loader.dataset)} loss {loss.item():.4f} "
                  f"{rate:.0f} img/s", end="", flush=True)
        if args.save_interval and (batch_idx + 1) % args.save_interval == 0:
            save_checkpoint(args, model, optimizer, epoch, batch_idx + 1)
        if args.smoke and batch_idx + 1 >= args.smoke_batches:
            break
    print()


def test(model, device, loader, limit=None):
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for i, (data, target) in enumerate(loader):
            data, target = data.to(device), target.to(device)
            output = model(data)
            total_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += int((output.argmax(dim=1) == target).sum().item())
            count += len(data)
            if limit is not None and i + 1 >= limit:
                break
    print(f"Test set: average loss {total_loss / count:.4f}, accuracy {correct}/{count} ({correct / count:.4f})")
    return correct / count


def save_checkpoint(args, model, optimizer, epoch, batch):
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "batch": batch},
               os.path.join(args.checkpoint_dir, "mnist.safetensors"))


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description="clgrad MNIST example")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    p.add_argument("--dataset", choices=("mnist", "fashion-mnist"), default="fashion-mnist")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save-interval", type=int, default=0, help="checkpoint every N batches (0: only at epoch end)")
    p.add_argument("--checkpoint-dir", default="checkpoints")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--smoke", action="store_true", help="train and test on a few batches only")
    p.add_argument("--smoke-batches", type=int, default=20)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    # the datasets' usual mean and std
    stats = ((0.2860,), (0.3530,)) if args.dataset == "fashion-mnist" else ((0.1307,), (0.3081,))
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(*stats)])
    dataset = FashionMNIST if args.dataset == "fashion-mnist" else MNIST
    train_set = dataset(args.data_dir, train=True, transform=transform)
    test_set = dataset(args.data_dir, train=False, transform=transform)
    shuffle = torch.Generator()
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    test_loader = DataLoader(test_set, batch_size=args.test_batch_size)

    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    state = {"epoch": 1, "batch": 0}
    path = os.path.join(args.checkpoint_dir, "mnist.safetensors")
    if args.resume and os.path.exists(path):
        ckpt = torch.load(path, map_location=device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        state = {"epoch": int(ckpt["epoch"]), "batch": int(ckpt["batch"])}
        print(f"resumed from {path}: epoch {state['epoch']}, batch {state['batch']}")
    accuracy = 0.0
    for epoch in range(state["epoch"], args.epochs + 1):
        shuffle.manual_seed(args.seed * 1000 + epoch)  # each epoch's order is reproducible, so a resume skips right
        train(args, model, device, train_loader, optimizer, epoch, state)
        save_checkpoint(args, model, optimizer, epoch + 1, 0)
        accuracy = test(model, device, test_loader, limit=2 if args.smoke else None)
        if args.smoke:
            break
    return accuracy


if __name__ == "__main__":
    main(sys.argv[1:])
