"""Shared by the op_db tests: scripts/opdb_coverage.py loaded as a module, and PyTorch's op_db by entry name."""
from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "opdb_coverage.py"


@functools.lru_cache(maxsize=1)
def script():
    spec = importlib.util.spec_from_file_location("opdb_coverage", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


@functools.lru_cache(maxsize=1)
def ops() -> dict:
    """op_db's entries by ``name.variant`` (needs torch and expecttest)."""
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    return {f"{o.name}.{o.variant_test_name}".rstrip("."): o for o in op_db}
