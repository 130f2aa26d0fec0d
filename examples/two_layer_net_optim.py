"""The two-layer network trained by ``optim.Adam`` instead of a hand-written update.

    python examples/two_layer_net_optim.py [--device opencl:N|cpu] [--steps 500] [--seed 0] [--smoke]
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

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, device=device)
    y = torch.randn(N, D_out, device=device)

    model = torch.nn.Sequential(
        torch.nn.Linear(D_in, H),
        torch.nn.ReLU(),
        torch.nn.Linear(H, D_out),
    ).to(device)
    loss_fn = torch.nn.MSELoss(reduction="sum")

    # The optimizer updates the parameters it is given. Adam's usual 1e-4 learns too slowly for a short run.
    learning_rate = 1e-3
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    for t in range(args.steps):
        y_pred = model(x)

        loss = loss_fn(y_pred, y)
        if t == 0:
            initial = loss.item()
        if t % 100 == 99:
            print(t, loss.item())

        # Gradients accumulate in .grad, so clear them before backward.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print(f"initial loss {initial:.6g}, final loss {loss.item():.6g}")
    sys.exit(0 if loss.item() < 0.1 * initial else 1)


if __name__ == "__main__":
    main()
