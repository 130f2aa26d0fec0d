"""``torch.backends.mps``: Apple's Metal backend is not part of clgrad (on a Mac, clgrad reaches the GPU through
OpenCL: ``clgrad.accelerator``), so ``is_available()`` and ``is_built()`` are False."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False
