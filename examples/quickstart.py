"""A tour of clgrad's tensor engine on an OpenCL device, checked against numpy as it goes.

    python examples/quickstart.py [--device opencl:N] [--smoke]
"""
from __future__ import annotations

import argparse

import numpy as np

import clgrad as torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    parser.add_argument("--smoke", action="store_true", help="accepted like every example's; the tour is quick")
    args = parser.parse_args()
    d = torch.device(args.device)
    print("OpenCL devices:", *torch.opencl.devices(), sep="\n  ")
    x = torch.zeros(5, 3, dtype=torch.long, device=d)
    print(f"using {x.device} ({torch.opencl.get_device_name(x.device) if x.device.type == 'opencl' else 'numpy'})")

    y = torch.arange(15, device=d).view(5, 3)
    y.add_(x)
    x.copy_(y)
    print("x.view(-1, 15) =", x.view(-1, 15))
    print("x[:, 1] =", x[:, 1])

    a = torch.randn(64, 32, device=d)
    b = torch.rand(32, 16, device=d)
    c = (a @ b).relu() * 2 - 1
    ref = np.maximum(a.cpu().numpy() @ b.cpu().numpy(), 0) * 2 - 1
    assert np.allclose(c.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    print("matmul + relu matches numpy; mean =", round(c.mean().item(), 4), " max =", round(c.max().item(), 4))

    host = np.arange(6, dtype=np.float32)
    shared = torch.from_numpy(host)
    shared[0] = 100.0
    print("numpy bridge shares memory on cpu:", host[0] == 100.0)

    z = torch.ones_like(a, device=d).to("cpu", torch.double)
    print("z:", z.dtype, z.device, tuple(z.shape))
    print("ok")


if __name__ == "__main__":
    main()
