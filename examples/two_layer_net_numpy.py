"""A two-layer ReLU network fitted to random data with numpy alone: forward and backward by hand.

    python examples/two_layer_net_numpy.py [--steps 500] [--seed 0] [--smoke]

The starting point of the progression: the next scripts replace numpy with clgrad, then hand-written
gradients with autograd, then the weights with nn modules and the update with an optimizer.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu"], help="numpy only runs on the cpu")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="60 steps only, for a quick check")
    args = parser.parse_args()
    if args.smoke:
        args.steps = 60
    rng = np.random.default_rng(args.seed)

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = rng.standard_normal((N, D_in))
    y = rng.standard_normal((N, D_out))
    w1 = rng.standard_normal((D_in, H))
    w2 = rng.standard_normal((H, D_out))

    learning_rate = 1e-6
    for t in range(args.steps):
        # Forward pass: compute predicted y
        h = x.dot(w1)
        h_relu = np.maximum(h, 0)
        y_pred = h_relu.dot(w2)

        # Compute and print loss
        loss = np.square(y_pred - y).sum()
        if t == 0:
            initial = loss
        if t % 100 == 99:
            print(t, loss)

        # Backprop to compute gradients of w1 and w2 with respect to loss
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.T.dot(grad_y_pred)
        grad_h_relu = grad_y_pred.dot(w2.T)
        grad_h = grad_h_relu.copy()
        grad_h[h < 0] = 0
        grad_w1 = x.T.dot(grad_h)

        # Update weights
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2

    print(f"initial loss {initial:.6g}, final loss {loss:.6g}")
    sys.exit(0 if loss < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
