"""PyTorch's own OpInfo samples (op_db) for the issue-17 nn ops, run through scripts/opdb_coverage.py's
``run_sample`` (forward and input gradients against torch, float64): a few small samples per entry, on cpu and
the first OpenCL device with fp64."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICES, fp64_ok
from tests.opdb import ops, script

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
FIRST_CL = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)
NAMES = ["nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward",
         "nn.functional.grid_sample", "grid_sampler_2d", "grid_sampler_3d", "nn.functional.embedding_bag",
         "nn.functional.ctc_loss", "nn.functional.local_response_norm", "nn.functional.instance_norm",
         "nn.functional.linear_cross_entropy", "nn.functional.linear_cross_entropy.chunked", "native_batch_norm",
         "_native_batch_norm_legit", "_batch_norm_with_update", "_upsample_bilinear2d_aa",
         "torch.ops.aten._safe_softmax.default", "histogramdd", "_chunk_cat", "_segment_reduce.lengths",
         "_segment_reduce.offsets"]
PER_OP, MAX_NUMEL = 3, 4000  # the small samples only: CI time






def _numel(sample) -> int:
    tensors = [t for t in (sample.input, *sample.args, *sample.kwargs.values()) if isinstance(t, torch.Tensor)]
    return sum(t.numel() for t in tensors)


@pytest.mark.parametrize("name", NAMES)
def test_opinfo_samples(device, name):
    if device not in ("cpu", FIRST_CL) or not fp64_ok(device):
        pytest.skip("op_db samples run in float64 on cpu and the first OpenCL device only (CI time)")
    coverage, op = script(), ops()[name]
    found = coverage.resolve(op)
    assert found is not None, f"{name} does not resolve in clgrad"
    samples = list(op.sample_inputs("cpu", torch.float64, requires_grad=op.supports_autograd))
    small = [s for s in samples if _numel(s) <= MAX_NUMEL] or [min(samples, key=_numel)]  # ctc's are all big
    for sample in small[:PER_OP]:
        try:
            fwd, bwd = coverage.run_sample(op, found[1], sample, device)
        except coverage.TorchRejects:
            continue
        assert fwd == "", f"{name} forward: {fwd} on {sample}"
        assert not bwd, f"{name} backward: {bwd} on {sample}"
