"""``clgrad.cuda``: clgrad has no CUDA backend, so ``torch.cuda.is_available()`` checks take their cpu branch.

NVIDIA GPUs are used through their OpenCL driver: ``clgrad.accelerator.current_accelerator()`` (or
``clgrad.opencl``, shaped like ``torch.cuda``). As in a CPU-only build of torch, the queries answer (no device, no
memory) and seeding is ignored, while what needs a CUDA device raises an AssertionError that says so.
"""
from __future__ import annotations

from . import amp  # noqa: F401,E402 - torch.cuda.amp (deprecated names, disabled as in a CPU-only PyTorch)

_NO_CUDA = ("clgrad has no CUDA backend (torch.cuda): use device='opencl' "
            "(clgrad.accelerator.current_accelerator()) or 'cpu'")


def _unavailable(*args, **kwargs):
    raise AssertionError(_NO_CUDA)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed) -> None:
    """Ignored, as torch ignores it without CUDA devices."""


def manual_seed_all(seed) -> None:
    """Ignored, as torch ignores it without CUDA devices."""


def seed() -> None:
    """Ignored: no CUDA generator exists."""


seed_all = seed


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def empty_cache() -> None:
    """Nothing is cached."""


current_device = synchronize = set_device = get_device_name = get_device_properties = _unavailable
get_device_capability = mem_get_info = reset_peak_memory_stats = _unavailable
