"""A network whose depth changes every step: autograd records whatever the Python code did this time.

    python examples/dynamic_net.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]
"""
from __future__ import annotations

import argparse
import random
import sys

import clgrad as torch


class DynamicNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.input_linear = torch.nn.Linear(D_in, H)
        self.middle_linear = torch.nn.Linear(H, H)
        self.output_linear = torch.nn.Linear(H, D_out)

    def forward(self, x):
        """Apply middle_linear 0 to 3 times, chosen at random: plain Python control flow, and the same
        module reused, so its weights get the gradients of all of its uses."""
        h_relu = self.input_linear(x).clamp(min=0)
        for _ in range(random.randint(0, 3)):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        y_pred = self.output_linear(h_relu)
        return y_pred


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="100 steps only, for a quick check")
    args = parser.parse_args()
    if args.smoke:
        args.steps = 100
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = torch.device(args.device)

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, device=device)
    y = torch.randn(N, D_out, device=device)

    model = DynamicNet(D_in, H, D_out).to(device)
    # Plain SGD struggles with this odd model; momentum helps.
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    for t in range(args.steps):
        y_pred = model(x)

        loss = criterion(y_pred, y)
        if t == 0:
            initial = loss.item()
        if t % 100 == 99:
            print(t, loss.item())

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print(f"initial loss {initial:.6g}, final loss {loss.item():.6g}")
    sys.exit(0 if loss.item() < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
