"""The same two-layer network with clgrad tensors instead of numpy arrays: it runs on an OpenCL device.

    python examples/two_layer_net_tensor.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]

Gradients are still written by hand; two_layer_net_autograd.py lets autograd compute them.
"""
from __future__ import annotations

import argparse
import sys

import clgrad as torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="60 steps only, for a quick check")
    args = parser.parse_args()
    if args.smoke:
        args.steps = 60
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    dtype = torch.float

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)
    w1 = torch.randn(D_in, H, device=device, dtype=dtype)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype)

    learning_rate = 1e-6
    for t in range(args.steps):
        # Forward pass: compute predicted y
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)

        # Compute and print loss; .item() copies the scalar back to the host
        loss = (y_pred - y).pow(2).sum().item()
        if t == 0:
            initial = loss
        if t % 100 == 99:
            print(t, loss)

        # Backprop to compute gradients of w1 and w2 with respect to loss
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)

        # Update weights using gradient descent
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2

    print(f"initial loss {initial:.6g}, final loss {loss:.6g}")
    sys.exit(0 if loss < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
