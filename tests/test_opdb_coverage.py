"""scripts/opdb_coverage.py's core on a few op_db entries: resolution, conversion, comparison and the totals."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import DEVICES, fp64_ok
from tests.opdb import ops, script

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
FIRST_CL = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)






@pytest.mark.parametrize("name", ["sub", "where", "nn.functional.triplet_margin_with_distance_loss"])
def test_present_ops_match(device, name):
    """A function op, one whose op_db lambda reorders arguments (run with torch meaning clgrad), and one that
    takes a torch module as an argument (converted to clgrad's)."""
    if device not in ("cpu", FIRST_CL) or not fp64_ok(device):
        pytest.skip("float64 samples on cpu and the first OpenCL device with fp64 only")
    C = script()
    res = C.run_op(ops()[name], device, 2, seconds=30.0)  # a loaded CI machine compiling kernels
    assert res.found and res.samples == 2
    assert res.fwd_ok == 2, res.errors
    assert res.bwd_total == 2 and res.bwd_ok == 2, res.errors


def test_missing_op_and_totals():
    C = script()
    results = [C.run_op(ops()[n], "cpu", 1) for n in ("jiterator_unary", "abs")]
    assert [r.found for r in results] == [False, True]
    tot = C.totals(results)
    assert (tot["applicable"], tot["present"], tot["samples"]) == (2, 1, 1)
    assert tot["fwd_pct"] == 100.0 and tot["present_pct"] == 50.0
    md = C.markdown(results, tot, "cpu")
    assert "1 of 2 (50.0%)" in md and "jiterator_unary" in md


def test_compare_reports_the_kind_of_mismatch():
    C = script()
    a = np.arange(3.0)
    assert C.compare([a], [a + 1e-9]) == ""
    assert C.compare([a], [a + 1e-3]) == "values"
    assert C.compare([a], [a.astype(np.float32)]) == "dtype"
    assert C.compare([a], [a[:2]]) == "shape"
    assert C.compare([a, 1.0], [a]) == "n_outputs"
    assert C.compare([np.array([np.nan])], [np.array([np.nan])]) == ""


def test_tolerances_follow_the_entrys_overrides():
    C = script()
    rtol, atol = C.tolerances(ops()["abs"])
    assert rtol >= C.RTOL and atol >= C.ATOL
    overridden = [o for o in ops().values() if C.tolerances(o) != (C.RTOL, C.ATOL)]
    assert overridden, "some op_db entries loosen float64 tolerances"


def test_float32_mode_for_devices_without_fp64():
    """``--float32`` takes float32 samples and float32 tolerances (rusticl's runs), complex64 over complex128."""
    C = script()
    try:
        C.PRECISION = torch.float32
        assert C.sample_dtype(ops()["add"]) is torch.float32
        assert C.sample_dtype(ops()["view_as_real"]) is torch.complex64
        assert C.tolerances(ops()["add"]) >= (C.RTOL32, C.ATOL32)
        res = C.run_op(ops()["add"], "cpu", 2)
        assert res.found and res.fwd_ok == 2 and res.bwd_ok == res.bwd_total == 2, res.errors
    finally:
        C.PRECISION = torch.float64
