"""Writing your own autograd Function, checking its backward with ``gradcheck``, and training with it.

    python examples/custom_function.py [--device opencl:N|cpu] [--steps 2000] [--seed 0]
    python examples/custom_function.py --smoke        # a few seconds

Three Functions: the Legendre polynomial P3 of PyTorch's tutorial, an ``exp`` that saves its output
(cheaper than recomputing it in backward) and a ``clamp`` whose bounds are plain numbers (they get None
gradients). ``gradcheck`` compares each backward with central differences in float64, so it runs on the
chosen device when that has fp64 and on the cpu otherwise. Then P3 fits ``sin(x)`` as in the tutorial:
``y = a + b * P3(c + d * x)``.
"""
from __future__ import annotations

import argparse
import math
import sys

import clgrad as torch
from clgrad.autograd import gradcheck, gradgradcheck


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5x^3 - 3x) / 2, whose derivative is 3(5x^2 - 1) / 2."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        # Written with clgrad ops, so autograd can differentiate the backward too (gradgradcheck below).
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        result = input.exp()
        ctx.save_for_backward(result)  # d exp(x)/dx is exp(x): keep the output instead of the input
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, min, max):
        ctx.save_for_backward(input)
        ctx.min, ctx.max = min, max  # plain numbers can live on ctx; tensors go through save_for_backward
        return input.clamp(min, max)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        inside = (input >= ctx.min) & (input <= ctx.max)
        return grad_output * inside, None, None  # one gradient per forward argument


def fp64_device(device):
    """The device to gradcheck on: float64 central differences need a device with fp64."""
    if device.type == "cpu" or torch.opencl.get_device_properties(device).fp64:
        return device
    print(f"{device} has no fp64: gradcheck runs on the cpu instead")
    return torch.device("cpu")


def check_gradients(device) -> None:
    device = fp64_device(device)
    opts = {"dtype": torch.float64, "device": device, "requires_grad": True}
    x = torch.randn(6, **opts)
    # Clamp's derivative jumps at the bounds, so keep the checked points away from them.
    away = torch.tensor([-2.0, -0.9, -0.3, 0.2, 0.7, 1.6], **opts)
    checks = [
        ("LegendrePolynomial3", gradcheck, LegendrePolynomial3.apply, (x,)),
        ("LegendrePolynomial3, double backward", gradgradcheck, LegendrePolynomial3.apply, (x,)),
        ("Exp", gradcheck, Exp.apply, (x,)),
        ("Clamp(-1, 1)", gradcheck, lambda t: Clamp.apply(t, -1.0, 1.0), (away,)),
    ]
    for name, check, fn, inputs in checks:
        ok = check(fn, inputs, eps=1e-6, atol=1e-4)
        print(f"{check.__name__}({name}) on {device} in float64: {'ok' if ok else 'FAILED'}")
        if not ok:
            sys.exit(1)


def fit_sine(device, steps: int) -> tuple[float, float]:
    """PyTorch's tutorial: fit sin on [-pi, pi] with a + b * P3(c + d * x) by plain gradient descent."""
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)

    # Weights near the answer, so that the fit converges (as in the tutorial).
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 5e-6
    for t in range(steps):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)

        loss = (y_pred - y).pow(2).sum()
        if t == 0:
            initial = loss.item()
        if t % 100 == 99:
            print(t, loss.item())

        loss.backward()

        with torch.no_grad():
            for w in (a, b, c, d):
                w -= learning_rate * w.grad
                w.grad = None
    print(f"Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)")
    return initial, loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="fewer training steps (a few seconds)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    check_gradients(device)
    initial, final = fit_sine(device, 600 if args.smoke else args.steps)
    print(f"initial loss {initial:.6g}, final loss {final:.6g}")
    sys.exit(0 if final < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
