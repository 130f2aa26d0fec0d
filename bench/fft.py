"""FFT: rfft of 2^20 real points and a batched 1024x1024 complex FFT (along the last axis), fp32, time per call
against numpy (pocketfft) and PyTorch-CPU.

    python bench/fft.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--only "rfft"]

clgrad runs on (re, im) pair tensors (ops/fft_core.py): one launch per Stockham pass (radix 4 first), plus the
copies that move the axis last and the zero imaginary part an rfft adds (rfft is a full complex transform here).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, at_least, np, rand  # noqa: E402 - common's numpy: it sets the thread count first

import clgrad  # noqa: E402
from clgrad.ops import fft_core  # noqa: E402


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    err = abs(got - want).max() / max(abs(want).max(), 1e-30)
    if err > 1e-4:
        raise RuntimeError(f"{name}: clgrad's result is wrong (max relative error {err:.2e})")


def rfft_case(b: Bench, n: int) -> None:
    name = f"rfft {n} points"
    if not b.wants(name):
        return
    x_np = rand((n,), seed=1)
    x = clgrad.tensor(x_np, device=b.device)
    want = np.fft.rfft(x_np)
    _check(name, fft_core.rfft(x).cpu().numpy(), np.stack([want.real, want.imag], -1))
    tfn = None
    if b.torch is not None:
        tx = b.torch.from_numpy(x_np)
        tfn = lambda: b.torch.fft.rfft(tx)  # noqa: E731
    times = b.measure(clgrad=lambda: fft_core.rfft(x), numpy=lambda: np.fft.rfft(x_np), torch=tfn)
    b.add(name, times, target=at_least(0.3, "torch"))


def c2c_case(b: Bench, batch: int, n: int) -> None:
    name = f"fft {batch}x{n} complex, last axis"
    if not b.wants(name):
        return
    p_np = rand((batch, n, 2), seed=2)
    z_np = (p_np[..., 0] + 1j * p_np[..., 1]).astype(np.complex64)
    p = clgrad.tensor(p_np, device=b.device)
    want = np.fft.fft(z_np, axis=-1)
    _check(name, fft_core.fft(p).cpu().numpy(), np.stack([want.real, want.imag], -1))
    tfn = None
    if b.torch is not None:
        tz = b.torch.from_numpy(z_np)
        tfn = lambda: b.torch.fft.fft(tz)  # noqa: E731
    times = b.measure(clgrad=lambda: fft_core.fft(p), numpy=lambda: np.fft.fft(z_np, axis=-1), torch=tfn)
    b.add(name, times, target=at_least(0.3, "torch"))


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    n, (batch, m) = b.pick(1 << 10, 1 << 16, 1 << 20), b.pick((8, 64), (256, 256), (1024, 1024))
    rfft_case(b, n)
    c2c_case(b, batch, m)
    b.finish()
    return b


if __name__ == "__main__":
    main()
