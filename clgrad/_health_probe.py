"""The health check's workload, run in a child process: ``python -m clgrad._health_probe INDEX``.

It runs a representative set of clgrad's own kernels on ``opencl:INDEX`` and compares each result with the cpu
(numpy) backend. Each case prints ``case NAME`` before it starts, so a parent that sees the child hang or crash
knows where; the last line is ``ok`` or ``fail NAME: why``. The cases are the shapes that have broken OpenCL
compilers before: 16-wide vector rows (softmax on contiguous rows), half loads and stores, atomics (index_add,
embedding's backward, the bounds flag of nll_loss), reductions, a register-tiled matmul, scans and sorts, Philox
random numbers, and one training step of a small conv net, whose kernels PoCL builds as one program group.
Where clgrad keeps compiled binaries on disk (not PoCL, which caches its own), the first case runs again from
them, so a driver that cannot load its own binaries is caught here.

The parent is ``clgrad.backends.opencl.health``; this module sits above the whole package, so it can use the
public API without the backend importing Tensors.
"""
from __future__ import annotations

import sys

import numpy as np

import clgrad as torch
import clgrad.nn.functional as F
from clgrad.backends.opencl import programs, runtime


def _cases(torch, dev: str, fp64: bool):
    """(name, fn) pairs; ``fn(device)`` returns tensors that must match between ``dev`` and cpu."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 1031)).astype(np.float32)
    b = rng.standard_normal((1031,)).astype(np.float32)
    m1 = rng.standard_normal((70, 65)).astype(np.float32)
    m2 = rng.standard_normal((65, 130)).astype(np.float32)
    big = rng.standard_normal((256, 256)).astype(np.float32)
    idx = rng.integers(0, 33, 200)
    images, labels = rng.standard_normal((8, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 8)

    def t(x, d, **kw):
        return torch.tensor(x, device=d, **kw)

    def elementwise(d):
        x, y = t(a, d), t(b, d)
        return [(x * 2 + 1), (x * y - x.exp().clamp(max=3)), (x.t() + 1).contiguous()]

    def reduction(d):
        x = t(a, d)
        return [x.sum(), x.sum(1), x.amax(0), x.argmax(1), x.var(1)]

    def vector_rows(d):
        x = t(a, d)
        return [F.softmax(x, dim=1), F.log_softmax(x, dim=1)]

    def half(d):
        x = t(a, d).half()
        return [(x * 2).float(), x.float().sum(1), (x + x).float()]

    def atomics(d):
        out = torch.zeros(33, 1031, device=d).index_add_(0, t(idx, d), t(a[idx % 33], d))
        w = t(a[:, :8], d, requires_grad=True)
        F.embedding(t(idx, d), w).sum().backward()
        return [out, w.grad]

    def matmul(d):
        return [(t(m1, d) @ t(m2, d)), (t(big, d) @ t(big, d).t())]

    def scan_sort(d):
        x = t(a[:4], d)
        values, order = x.sort(dim=1)
        return [x.cumsum(1), values, order]

    def random(d):
        torch.manual_seed(7)
        return [torch.rand(4099, device=d), torch.randn(1000, device=d)]

    def training_step(d):
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 10, 5), torch.nn.MaxPool2d(2), torch.nn.ReLU(), torch.nn.Conv2d(10, 20, 5),
            torch.nn.MaxPool2d(2), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(320, 50), torch.nn.ReLU(),
            torch.nn.Linear(50, 10), torch.nn.LogSoftmax(dim=1),
        ).to(d)
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        x, y = t(images, d), t(labels, d)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            loss = F.nll_loss(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss)
        return losses + [p for p in net.parameters()]

    def float64(d):
        x = t(a.astype(np.float64), d)
        return [x.sum(1), (x[:, :65] @ t(m2.astype(np.float64), d))]

    cases = [
        ("elementwise", elementwise), ("reduction", reduction), ("vector rows (softmax)", vector_rows),
        ("half loads/stores", half), ("atomics", atomics), ("matmul tile", matmul), ("scan and sort", scan_sort),
        ("philox random", random), ("training step (program group)", training_step),
    ]
    if fp64:
        cases.append(("float64", float64))
    return cases


def _compare(name: str, got: list, want: list) -> str:
    """'' when ``got`` matches ``want``, else what differs."""
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"wrong results in {name} (output {i}): shape {g.shape}, expected {w.shape}"
        if g.dtype.kind in "iub":
            if not np.array_equal(g, w):
                return f"wrong results in {name} (output {i}): {int((g != w).sum())} of {g.size} values differ"
            continue
        g, w = g.astype(np.float64), w.astype(np.float64)
        tol = 2e-2 if "half" in name else 1e-3
        bad = ~np.isclose(g, w, rtol=tol, atol=tol)
        if bad.any():
            err = float(np.nanmax(np.abs(g - w)))
            return f"wrong results in {name} (output {i}): {int(bad.sum())} of {g.size} values differ, max error {err:.3g}"
    return ""


def main(index: int) -> int:
    dev = f"opencl:{index}"
    fp64 = torch.opencl.get_device_properties(index).fp64
    for name, fn in _cases(torch, dev, fp64):
        print(f"case {name}", flush=True)
        try:
            got = [x.detach().cpu().numpy() for x in fn(dev)]
            torch.opencl.synchronize(dev)
        except Exception as exc:  # a build failure or a launch error: report its telling line
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            # a compiler's diagnostic ("error: ...") rather than clgrad's "building kernel ... failed" line above it
            diagnostics = [ln for ln in lines if "error:" in ln.lower() and not ln.startswith("clgrad")]
            telling = diagnostics[0] if diagnostics else next((ln for ln in lines if "error" in ln.lower()),
                                                              lines[0] if lines else "")
            print(f"fail {name}: {type(exc).__name__}: {telling}"[:400], flush=True)
            return 1
        why = _compare(name, got, [x.detach().numpy() for x in fn("cpu")])
        if why:
            print(f"fail {name}: {why}", flush=True)
            return 1
    if _reload_binaries(index):  # where clgrad keeps compiled binaries, loading one back must work too
        print("case cached binaries", flush=True)
        name, fn = _cases(torch, dev, fp64)[0]
        why = _compare("cached binaries", [x.cpu().numpy() for x in fn(dev)], [x.numpy() for x in fn("cpu")])
        if why:
            print(f"fail cached binaries: {why}", flush=True)
            return 1
    print("ok", flush=True)
    return 0


def _reload_binaries(index: int) -> bool:
    """Forget the built programs so the next kernels load from clgrad's binary cache; False where there is none
    (PoCL keeps its own cache; CLGRAD_NO_CACHE=1)."""
    if programs.cache_dir() is None or programs._caches_itself(runtime.get(index)):
        return False
    programs.clear()
    return True


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
