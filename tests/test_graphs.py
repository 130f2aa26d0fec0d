"""clgrad.opencl.CLGraph / graph(): capture and replay of kernel launches, bit-identical to eager (graphs.py)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.backends.opencl import runtime
from clgrad.opencl import CLGraph, NotCapturable, graph


def _opencl(device):
    if device == "cpu":
        pytest.skip("graph capture records OpenCL launches (test_cpu_device_is_refused covers cpu)")
    return device


def _t(arr, device):
    return clgrad.tensor(np.asarray(arr, np.float32), device=device)


def _params(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def test_capture_runs_nothing_and_replay_reads_static_inputs(device):
    device = _opencl(device)
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    a, b = _t(a_np, device), _t(b_np, device)
    out = clgrad.zeros(6, 3, device=device)
    g = CLGraph()
    with graph(g, device=device):
        y = ((a * 2.0 + 1.0) @ b).relu().sum(1)
        out.copy_((a @ b).softmax(1))
    assert not clgrad.opencl.is_current_stream_capturing() and g.launches() > 4
    assert np.array_equal(out.cpu().numpy(), np.zeros((6, 3), np.float32))  # capture ran nothing
    g.replay()
    eager_y, eager_out = ((a * 2.0 + 1.0) @ b).relu().sum(1), (a @ b).softmax(1)
    assert np.array_equal(y.cpu().numpy(), eager_y.cpu().numpy())
    assert np.array_equal(out.cpu().numpy(), eager_out.cpu().numpy())
    a.copy_(_t(a_np[::-1].copy(), device))  # new data into the static input
    g.replay()
    assert np.array_equal(y.cpu().numpy(), ((a * 2.0 + 1.0) @ b).relu().sum(1).cpu().numpy())
    np.testing.assert_allclose(y.cpu().numpy(), np.maximum((a_np[::-1] * 2 + 1) @ b_np, 0).sum(1), rtol=1e-5)


def _train(model_fn, opt_fn, step_fn, batches, device, steps: int, capture_at=None):
    """Parameters after ``steps`` steps: all eager, or eager up to ``capture_at`` then one capture and replays."""
    clgrad.manual_seed(0)
    model = model_fn().to(device)
    opt = opt_fn(model.parameters())
    static = [b.clone() for b in batches[0]]
    g = None
    for i in range(steps):
        for s, b in zip(static, batches[i]):
            s.copy_(b)
        if capture_at is None or i < capture_at:
            step_fn(model, opt, *static)
            continue
        if g is None:
            g = CLGraph()
            with graph(g, device=device):
                step_fn(model, opt, *static)
        g.replay()
    return model, opt


def _check_bit_identical(model_fn, opt_fn, step_fn, batches, device, steps=4, capture_at=2):
    eager, eager_opt = _train(model_fn, opt_fn, step_fn, batches, device, steps)
    offset = clgrad.default_generator._offset
    replayed, opt = _train(model_fn, opt_fn, step_fn, batches, device, steps, capture_at)
    for e, r in zip(_params(eager), _params(replayed)):
        assert np.array_equal(e, r)
    assert clgrad.default_generator._offset == offset  # random draws advanced exactly as eager
    return eager_opt, opt


def _classify_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _batches(device, n, shape, classes=10):
    rng = np.random.default_rng(1)
    return [(_t(rng.standard_normal(shape), device), clgrad.tensor(rng.integers(0, classes, shape[0]), device=device))
            for _ in range(n)]


def test_cnn_sgd_momentum_bit_identical(device):
    device = _opencl(device)

    def model():
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 10))

    _check_bit_identical(model, lambda p: clgrad.optim.SGD(p, lr=0.1, momentum=0.9), _classify_step,
                         _batches(device, 4, (4, 1, 8, 8)), device)


def test_mlp_adam_dropout_bit_identical(device):
    device = _opencl(device)

    def model():
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 4))

    eager_opt, opt = _check_bit_identical(model, lambda p: clgrad.optim.Adam(p, lr=1e-2), _classify_step,
                                          _batches(device, 5, (5, 8), 4), device, steps=5)
    steps = [s["step"] for s in opt.state.values()]
    assert steps == [s["step"] for s in eager_opt.state.values()] == [5.0] * 4  # replays count their steps


def test_lstmcell_loop_bit_identical(device):
    device = _opencl(device)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.head = nn.LSTMCell(3, 6), nn.Linear(6, 1)

        def forward(self, x):
            h = c = clgrad.zeros(x.shape[1], 6, device=x.device)
            for t in range(x.shape[0]):
                h, c = self.cell(x[t], (h, c))
            return self.head(h)

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=False)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    rng = np.random.default_rng(2)
    batches = [(_t(rng.standard_normal((5, 2, 3)), device), _t(rng.standard_normal((2, 1)), device)) for _ in range(4)]
    _check_bit_identical(Net, lambda p: clgrad.optim.SGD(p, lr=0.05, momentum=0.5), step, batches, device)


def test_pool_keeps_buffers_until_reset(device):
    device = _opencl(device)
    alloc = runtime.get(clgrad.device(device).index).allocator
    a = clgrad.ones(300, device=device)
    g = CLGraph()
    with graph(g, device=device):
        tmp = a * 3.0
        out = tmp + 1.0
    buf = tmp._storage.data
    del tmp  # freed after the capture: the graph still writes it, so nobody else gets it
    others = [clgrad.empty(300, device=device) for _ in range(8)]
    assert all(o._storage.data is not buf for o in others)
    g.replay()
    assert np.array_equal(out.cpu().numpy(), np.full(300, 4, np.float32))
    assert id(buf) in alloc.owners
    g.reset()
    assert id(buf) not in alloc.owners and alloc.capturing is None
    assert g.launches() == 0
    with pytest.raises(RuntimeError, match="no finished capture"):
        g.replay()


def _not_capturable_cases(device):
    x = clgrad.ones(4, device=device)
    return [
        ("item", lambda: (x * 2).sum().item()),
        ("numpy", lambda: (x * 2).cpu()),
        ("__repr__", lambda: repr(x * 2)),
        ("nonzero", lambda: (x > 0).nonzero()),
        ("synchronize", lambda: clgrad.opencl.synchronize()),
        ("step", lambda: clgrad.optim.Adagrad([nn.Parameter(x.clone())], lr=0.1).step()),
    ]


@pytest.mark.parametrize("case", range(6))
def test_not_capturable_raises_and_library_stays_usable(device, case):
    device = _opencl(device)
    name, fn = _not_capturable_cases(device)[case]
    alloc = runtime.get(clgrad.device(device).index).allocator
    offset = clgrad.default_generator._offset
    g = CLGraph()
    with pytest.raises(NotCapturable, match="is not capturable") as info:
        with graph(g, device=device):
            clgrad.rand(3, device=device)  # a draw the abort undoes
            fn()
    assert isinstance(info.value, RuntimeError)
    if name != "step":
        assert "capture was aborted" in str(info.value)
    assert not clgrad.opencl.is_current_stream_capturing() and alloc.capturing is None
    assert clgrad.default_generator._offset == offset
    assert g.launches() == 0
    assert np.array_equal((clgrad.ones(3, device=device) + 1).cpu().numpy(), np.full(3, 2, np.float32))
    g2 = CLGraph()  # and a new capture works
    y = clgrad.ones(3, device=device)
    with graph(g2, device=device):
        z = y * 5.0
    g2.replay()
    assert np.array_equal(z.cpu().numpy(), np.full(3, 5, np.float32))


def test_first_optimizer_step_is_refused(device):
    device = _opencl(device)
    p = nn.Parameter(clgrad.ones(3, device=device))
    p.grad = clgrad.ones(3, device=device)
    opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9)
    with pytest.raises(NotCapturable, match="momentum buffers"):
        with graph(CLGraph(), device=device):
            opt.step()
    opt.step()  # eager still works, and creates the buffer
    assert np.allclose(p.detach().cpu().numpy(), 0.9)


def test_deferred_bounds_check_reports_after_replay(device):
    device = _opencl(device)
    logits, target = clgrad.zeros(2, 3, device=device), clgrad.tensor([0, 1], device=device)
    g = CLGraph()
    with graph(g, device=device):
        loss = F.cross_entropy(logits, target)
    g.replay()
    assert np.isclose(loss.item(), np.log(3))
    target.copy_(clgrad.tensor([0, 7], device=device))
    g.replay()
    with pytest.raises(IndexError):
        clgrad.opencl.synchronize()
    g.reset()


def test_api_errors(device):
    device = _opencl(device)
    g = CLGraph()
    with pytest.raises(RuntimeError, match="no finished capture"):
        g.replay()
    g.capture_begin(device=device)
    with pytest.raises(RuntimeError, match="another capture is open"):
        CLGraph().capture_begin(device=device)
    x = clgrad.ones(2, device=device) * 2
    g.capture_end()
    with pytest.raises(RuntimeError, match="call reset"):
        g.capture_begin(device=device)
    g.replay()
    assert np.array_equal(x.cpu().numpy(), [2, 2])
    assert clgrad.opencl.CUDAGraph is CLGraph
    pool = clgrad.opencl.graph_pool_handle()
    g2 = CLGraph()
    with graph(g2, pool=pool, device=device):
        y = x + 1
    assert g2.pool() is pool
    g2.replay()
    assert np.array_equal(y.cpu().numpy(), [3, 3])


def test_user_error_inside_capture_aborts_it(device):
    device = _opencl(device)
    g = CLGraph()
    with pytest.raises(ZeroDivisionError):
        with graph(g, device=device):
            clgrad.ones(2, device=device) + 1 / 0
    assert not clgrad.opencl.is_current_stream_capturing() and g.launches() == 0


def test_cpu_device_is_refused(device):
    if device != "cpu":
        pytest.skip("the cpu case")
    with pytest.raises(RuntimeError, match="OpenCL device, not cpu"):
        CLGraph().capture_begin(device="cpu")
    assert not clgrad.opencl.is_current_stream_capturing()


def test_other_threads_run_eagerly_during_a_capture(device):
    import threading

    device = _opencl(device)
    a = clgrad.ones(4, device=device)
    got = {}

    def worker():  # another thread's work is neither recorded nor refused
        got["value"] = (a * 7.0).cpu().numpy()

    g = CLGraph()
    with graph(g, device=device):
        y = a + 2.0
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert g.launches() == 1 and np.array_equal(got["value"], np.full(4, 7, np.float32))
    g.replay()
    assert np.array_equal(y.cpu().numpy(), np.full(4, 3, np.float32))


def test_make_graphed_callables_trains_like_eager(device):
    device = _opencl(device)
    rng = np.random.default_rng(0)
    xs = [_t(rng.standard_normal((4, 5)), device) for _ in range(3)]
    ys = [_t(rng.standard_normal((4, 2)), device) for _ in range(3)]

    def run(graphed):
        clgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
        opt = clgrad.optim.SGD(model.parameters(), lr=0.1)
        sample = xs[0].clone().requires_grad_(True)
        fn = clgrad.opencl.make_graphed_callables(model, (sample,)) if graphed else model
        input_grads = []
        for x, y in zip(xs, ys):
            x = x.clone().requires_grad_(True)
            opt.zero_grad()
            F.mse_loss(fn(x), y).backward()
            opt.step()
            input_grads.append(x.grad.cpu().numpy())
        return _params(model), input_grads

    (eager, eager_dx), (graphed, dx) = run(False), run(True)
    assert all(np.array_equal(e, r) for e, r in zip(eager + eager_dx, graphed + dx))
