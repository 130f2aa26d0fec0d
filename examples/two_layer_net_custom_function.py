"""The two-layer network with its ReLU written as a custom autograd Function.

    python examples/two_layer_net_custom_function.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]
"""
from __future__ import annotations

import argparse
import sys

import clgrad as torch


class MyReLU(torch.autograd.Function):
    """ReLU with a hand-written backward: subclass Function and give it static forward and backward."""

    @staticmethod
    def forward(ctx, input):
        # ctx stashes what backward will need; here, the input.
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        # Receives the gradient of the loss with respect to the output, returns it with respect to the input.
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


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
    w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 1e-6
    for t in range(args.steps):
        # Functions are applied with .apply, never called directly.
        relu = MyReLU.apply
        y_pred = relu(x.mm(w1)).mm(w2)

        loss = (y_pred - y).pow(2).sum()
        if t == 0:
            initial = loss.item()
        if t % 100 == 99:
            print(t, loss.item())

        loss.backward()

        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()

    print(f"initial loss {initial:.6g}, final loss {loss.item():.6g}")
    sys.exit(0 if loss.item() < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
