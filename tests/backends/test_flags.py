"""torch.backends.* flag modules, clgrad.cuda (no CUDA), and the torch-level switches (deterministic algorithms,
thread counts, float32 matmul precision): each answers as a CPU-only torch build does, and each flag set by a
program sticks."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import clgrad
from clgrad.backends import flags


@pytest.fixture
def restore_flags():
    cudnn = clgrad.backends.cudnn
    saved = {n: getattr(cudnn, n) for n in ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")}
    det = dict(flags._deterministic)
    threads = dict(flags._threads)
    precision = list(flags._precision)
    yield
    for name, value in saved.items():
        setattr(cudnn, name, value)
    flags._deterministic.update(det)
    flags._threads.update(threads)
    flags._precision[:] = precision


def test_import_forms():
    for name in ("cudnn", "cuda", "mps", "mkldnn", "mkl", "openmp", "flags"):
        module = importlib.import_module(f"clgrad.backends.{name}")
        assert getattr(clgrad.backends, name) is module


def test_cudnn_flags(restore_flags):
    cudnn = clgrad.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert not cudnn.is_available() and cudnn.version() is None and not cudnn.is_acceptable(clgrad.zeros(1))
    cudnn.benchmark = True
    cudnn.deterministic = True
    import clgrad.backends.cudnn as again

    assert again.benchmark is True and again.deterministic is True
    with cudnn.flags(enabled=False, benchmark=False, deterministic=True, allow_tf32=False):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (False, False, True, False)
    assert cudnn.benchmark is True and cudnn.enabled is True


def test_other_backends():
    b = clgrad.backends
    assert not b.mps.is_available() and not b.mps.is_built() and not b.cuda.is_built()
    assert not b.mkldnn.is_available() and not b.mkl.is_available() and not b.openmp.is_available()
    assert b.cuda.matmul.allow_tf32 is False
    b.cuda.matmul.allow_tf32 = True
    assert b.cuda.matmul.allow_tf32 is True
    b.cuda.matmul.allow_tf32 = False
    assert b.cuda.flash_sdp_enabled()
    b.cuda.enable_flash_sdp(False)
    assert not b.cuda.flash_sdp_enabled()
    b.cuda.enable_flash_sdp(True)


def test_torch_parity_of_flag_defaults():
    torch = pytest.importorskip("torch")
    tc, cc = torch.backends.cudnn, clgrad.backends.cudnn
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(tc, name) == getattr(cc, name), name
    assert tc.is_available() == cc.is_available()  # a CPU-only torch has no cuDNN either
    for name in ("cudnn", "cuda", "mps", "mkldnn", "mkl", "openmp"):
        assert hasattr(torch.backends, name)
    assert torch.backends.cuda.matmul.allow_tf32 == clgrad.backends.cuda.matmul.allow_tf32


def test_cuda_stand_in():
    cuda = clgrad.cuda
    assert not cuda.is_available() and cuda.device_count() == 0 and not cuda.is_initialized()
    assert cuda.manual_seed(1) is None and cuda.manual_seed_all(1) is None
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 0 and cuda.empty_cache() is None
    for fn in (cuda.current_device, cuda.synchronize, cuda.get_device_name):
        with pytest.raises(AssertionError, match="clgrad has no CUDA backend.*'opencl'"):
            fn()
    device = "cuda" if cuda.is_available() else "cpu"  # the common program line
    assert clgrad.zeros(1, device=device).device == "cpu"


def test_cuda_stand_in_matches_cpu_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch here has CUDA")
    for name in ("is_available", "device_count", "is_initialized", "memory_allocated", "memory_reserved"):
        assert getattr(torch.cuda, name)() == getattr(clgrad.cuda, name)(), name
    with pytest.raises(AssertionError):
        torch.cuda.current_device()


def test_deterministic_algorithms(restore_flags):
    assert clgrad.are_deterministic_algorithms_enabled() is False and clgrad.get_deterministic_debug_mode() == 0
    clgrad.use_deterministic_algorithms(True)
    assert clgrad.are_deterministic_algorithms_enabled() and clgrad.get_deterministic_debug_mode() == 2
    clgrad.use_deterministic_algorithms(True, warn_only=True)
    assert clgrad.is_deterministic_algorithms_warn_only_enabled() and clgrad.get_deterministic_debug_mode() == 1
    clgrad.set_deterministic_debug_mode("default")
    assert not clgrad.are_deterministic_algorithms_enabled()
    clgrad.set_deterministic_debug_mode(2)
    assert clgrad.are_deterministic_algorithms_enabled() and not clgrad.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(TypeError, match="must be bool, not int"):
        clgrad.use_deterministic_algorithms(1)
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        clgrad.set_deterministic_debug_mode("loud")


def test_deterministic_matches_torch(restore_flags):
    torch = pytest.importorskip("torch")
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        for mode in ("warn", "error", "default", 1, 0):
            torch.set_deterministic_debug_mode(mode)
            clgrad.set_deterministic_debug_mode(mode)
            assert torch.get_deterministic_debug_mode() == clgrad.get_deterministic_debug_mode()
            assert torch.are_deterministic_algorithms_enabled() == clgrad.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_threads_and_precision(restore_flags):
    assert clgrad.get_num_threads() >= 1 and clgrad.get_num_interop_threads() >= 1
    clgrad.set_num_threads(1)
    clgrad.set_num_interop_threads(3)
    assert clgrad.get_num_threads() == 1 and clgrad.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        clgrad.set_num_threads(0)
    with pytest.raises(TypeError):
        clgrad.set_num_threads(1.5)
    assert clgrad.get_float32_matmul_precision() == "highest"
    clgrad.set_float32_matmul_precision("high")
    assert clgrad.get_float32_matmul_precision() == "high"
    with pytest.warns(UserWarning, match="has no effect"):
        clgrad.set_float32_matmul_precision("fastest")
    assert clgrad.get_float32_matmul_precision() == "high"


def test_fixed_order_ops_repeat_bit_for_bit(device):
    """What backs ``cudnn.deterministic``: convolution (forward and both gradients), matmul and reductions sum in a
    fixed order on every device, so a second run gives the same bits."""
    rng = np.random.default_rng(0)
    x_np, w_np = rng.standard_normal((2, 3, 9, 9), np.float32), rng.standard_normal((4, 3, 3, 3), np.float32)

    def run():
        x = clgrad.tensor(x_np, device=device, requires_grad=True)
        w = clgrad.tensor(w_np, device=device, requires_grad=True)
        y = clgrad.nn.functional.conv2d(x, w, padding=1)
        m = y.flatten(1) @ y.flatten(1).t()
        (m.sum() + y.mean()).backward()
        return [t.detach().cpu().numpy() for t in (y, m, x.grad, w.grad)]

    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)
