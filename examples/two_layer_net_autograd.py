"""The two-layer network with autograd: ``loss.backward()`` computes the gradients of w1 and w2.

    python examples/two_layer_net_autograd.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]

``train`` takes the library as an argument, so the test suite runs it with clgrad and with PyTorch and
compares the two loss curves.
"""
from __future__ import annotations

import argparse
import sys

import clgrad


def train(torch, device, steps: int, seed: int, init=None) -> list[float]:
    """Fit random data for ``steps`` steps and return the loss of each step. ``torch`` is clgrad or PyTorch;
    ``init``, numpy arrays ``(x, y, w1, w2)``, replaces the random start (to give both libraries the same one)."""
    torch.manual_seed(seed)
    dtype = torch.float

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    if init is None:
        x = torch.randn(N, D_in, device=device, dtype=dtype)
        y = torch.randn(N, D_out, device=device, dtype=dtype)
        w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
        w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)
    else:
        x, y, w1, w2 = (torch.tensor(a, device=device, dtype=dtype) for a in init)
        w1.requires_grad_()
        w2.requires_grad_()

    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        # Forward pass: the same operations as before, but autograd records them to differentiate later.
        y_pred = x.mm(w1).clamp(min=0).mm(w2)

        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, losses[-1])

        # Fills w1.grad and w2.grad with the gradients of loss.
        loss.backward()

        # The update itself must not be recorded, hence no_grad; then clear the gradients for the next step.
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl" if clgrad.opencl.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="60 steps only, for a quick check")
    args = parser.parse_args()
    if args.smoke:
        args.steps = 60
    losses = train(clgrad, clgrad.device(args.device), args.steps, args.seed)
    print(f"initial loss {losses[0]:.6g}, final loss {losses[-1]:.6g}")
    sys.exit(0 if losses[-1] < 0.1 * losses[0] else 1)


if __name__ == "__main__":
    main()
