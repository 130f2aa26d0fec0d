"""The two-layer network as a subclass of ``nn.Module``, trained by SGD.

    python examples/two_layer_net_module.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]
"""
from __future__ import annotations

import argparse
import sys

import clgrad as torch


class TwoLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        """Modules assigned as attributes are registered, so their parameters are the model's too."""
        super().__init__()
        self.linear1 = torch.nn.Linear(D_in, H)
        self.linear2 = torch.nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = self.linear1(x).clamp(min=0)
        y_pred = self.linear2(h_relu)
        return y_pred


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

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, device=device)
    y = torch.randn(N, D_out, device=device)

    model = TwoLayerNet(D_in, H, D_out).to(device)
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
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
