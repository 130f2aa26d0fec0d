"""clgrad.onnx.export: each layer family exported, checked with onnx.checker and run in onnxruntime against
clgrad's own output (float32, rtol 1e-4). Export is device independent, so these run on cpu; one test checks that
an OpenCL device writes the same file."""
from __future__ import annotations

import io

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.onnx.tracer import flat_tensors

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from clgrad.onnx.exporter import split_args  # noqa: E402 - needs onnx


def _session(data: bytes):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _expected(model, args):
    model.eval()
    args, kwargs = split_args(args, None)
    with clgrad.no_grad():
        out = model(*args, **kwargs)
    return [t.numpy() for t in flat_tensors(out)]


def check(model, args, *, feeds=None, rtol=1e-4, atol=1e-5, **kwargs):
    """Export ``model(*args)`` to BytesIO, check the model, run it in onnxruntime and compare with clgrad;
    ``feeds``: other inputs (a list of tuples of tensors) to run both on, too (dynamic axes)."""
    buf = io.BytesIO()
    proto = clgrad.onnx.export(model, args, buf, **kwargs)
    onnx.checker.check_model(proto, full_check=True)
    assert buf.getvalue() == proto.SerializeToString()
    sess = _session(buf.getvalue())
    for inputs in [args] + list(feeds or []):
        flat = flat_tensors(inputs)
        names = [i.name for i in sess.get_inputs()][: len(flat)]
        got = sess.run(None, {n: t.numpy() for n, t in zip(names, flat)})
        want = _expected(model, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return proto


def op_types(proto) -> set:
    return {n.op_type for n in proto.graph.node}


@pytest.fixture(autouse=True)
def _seed():
    clgrad.manual_seed(0)


# ---- layers ----------------------------------------------------------------------------------------
ACTIVATIONS = [nn.ReLU(), nn.GELU(), nn.GELU(approximate="tanh"), nn.Sigmoid(), nn.Tanh(), nn.Softmax(dim=1),
               nn.LogSoftmax(dim=-1), nn.LeakyReLU(0.1), nn.ELU(0.7), nn.SELU(), nn.SiLU(), nn.Mish(),
               nn.Hardtanh(-0.5, 0.5), nn.ReLU6(), nn.Softplus(beta=2.0, threshold=1.0), nn.Softmin(dim=1),
               nn.Identity(), nn.Dropout(0.5)]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda m: type(m).__name__)
def test_linear_and_activation(act):
    model = nn.Sequential(nn.Linear(5, 6), act, nn.Linear(6, 3, bias=False))
    check(model, (clgrad.randn(4, 5) * 2,))


def test_linear_on_3d_input_and_functional_activations():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            return (F.hardswish(y) + F.hardsigmoid(y) + F.logsigmoid(y) + F.elu(y) + F.celu(y, 0.5)
                    + F.leaky_relu(y, 0.2) + F.relu6(y) + y.clamp(-0.3, 0.4) + y.clamp(min=0.1))

    check(M(), (clgrad.randn(2, 3, 4),))


def test_elementwise_reduction_and_shape_ops():
    class M(nn.Module):
        def forward(self, x, y):
            a = (x + y) * 2 - y / 3 + x ** 2 + (x.abs() + 1).sqrt() + (x * 0.1).exp() + (y.abs() + 0.5).log()
            a = -a + clgrad.where(x > y, x, y) + x.clamp(-1, 1) + x.maximum(y) + x.pow(3) + 2 ** x.tanh()
            b = a.reshape(2, 12).t().matmul(a.view(2, 12)).sum(1, keepdim=True).transpose(0, 1)
            c = a.permute(2, 0, 1).flatten(1).mean(0) + a.max(dim=2).values.reshape(-1).sum() + a.amax((0, 1)).sum()
            parts = a.split([1, 3], dim=2)
            d = clgrad.cat([parts[1], parts[0]], 2).unsqueeze(0).squeeze(0)[:, 1:, ::2]
            e = clgrad.stack([a[0, :, :3], a[1, :, 0:3], a[0, :, -1:].expand(3, 3) * 1.0], 1)
            f = a[1, 2] + a[:, -1].sum() + a.var(2).sum() + a.std().reshape(1) + a.logsumexp(1).sum()
            return b, c, d, e, f, a.max(1)[1], x > y

    check(M(), (clgrad.randn(2, 3, 4), clgrad.randn(2, 3, 4)))


def test_indexing_padding_and_rearranging_ops():
    class M(nn.Module):
        def forward(self, x, idx):
            a = x.flip(2).repeat(1, 2, 1) + F.pad(x, (1, 2), mode="reflect")[..., 1:5].repeat(1, 2, 1)
            b = F.pad(x, (1, 1, 0, 1), value=0.5) + F.pad(x, (1, 1, 1, 0), mode="replicate")
            c = x.index_select(1, idx) + x[:, idx] + x.gather(2, idx.reshape(1, 3, 1).expand(2, 3, 1))
            d = clgrad.unbind(x, 1)[2] + x.narrow(2, 1, 2).sum(2)[:, 0:1] + x.select(1, 0).cumsum(1)
            e = x.masked_fill(x > 0.5, x.mean()) + x.norm(dim=2, keepdim=True) + x.norm(1) + x.remainder(0.7)
            return a, b, c, d, e, x.norm(3.0, dim=(1, 2))

    check(M(), (clgrad.randn(2, 3, 4), clgrad.tensor([2, 0, 1])))


def test_conv_and_transposed_conv():
    model = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 3, padding="same", dilation=2, groups=2),
                          nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1))
    check(model, (clgrad.randn(2, 2, 7, 6),))
    model1d = nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.Tanh(), nn.ConvTranspose1d(4, 2, 4, stride=2),
                            nn.Conv1d(2, 2, 2, stride=3, bias=False))
    check(model1d, (clgrad.randn(2, 3, 9),))


@pytest.mark.parametrize("pool", [nn.MaxPool2d(2), nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
                                  nn.AvgPool2d(2), nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                                  nn.AdaptiveAvgPool2d((1, 1)), nn.AdaptiveAvgPool2d(2)],
                         ids=lambda m: repr(m))
def test_pooling_2d(pool):
    check(nn.Sequential(nn.Conv2d(1, 2, 1), pool), (clgrad.randn(2, 1, 8, 8),))


def test_pooling_1d():
    model = nn.Sequential(nn.Conv1d(2, 2, 1), nn.MaxPool1d(2), nn.AvgPool1d(2, stride=1), nn.AdaptiveAvgPool1d(1))
    check(model, (clgrad.randn(3, 2, 9),))


@pytest.mark.parametrize("opset", [13, 17, 20])
def test_norms(opset):
    bn = nn.BatchNorm2d(3)
    bn.running_mean.copy_(clgrad.randn(3))
    bn.running_var.copy_(clgrad.rand(3) + 0.5)
    model = nn.Sequential(nn.Conv2d(2, 3, 1), bn, nn.GroupNorm(1, 3), nn.Flatten(), nn.LayerNorm(48),
                          nn.Linear(48, 6), nn.BatchNorm1d(6), nn.Unflatten(1, (2, 3)), nn.GroupNorm(2, 2))
    proto = check(model, (clgrad.randn(2, 2, 4, 4),), opset_version=opset)
    assert ("LayerNormalization" in op_types(proto)) == (opset >= 17)


def test_embedding_dynamic_batch_and_sequence():
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    idx = clgrad.tensor([[1, 2, 3], [4, 5, 9]])
    check(model, (idx,), input_names=["ids"], dynamic_axes={"ids": {0: "batch", 1: "seq"}},
          feeds=[(clgrad.tensor([[0, 1, 2, 3, 4]] * 3),)])


# ---- recurrent -------------------------------------------------------------------------------------
class LanguageModel(nn.Module):
    def __init__(self, vocab=12, emb=6, hidden=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, (h, c) = self.lstm(self.emb(ids))
        return F.log_softmax(self.head(out), dim=-1), h, c


def test_lstm_language_model_dynamic_batch():
    ids = clgrad.randint(0, 12, (2, 5))
    proto = check(LanguageModel(), (ids,), input_names=["ids"], output_names=["logp", "h", "c"],
                  dynamic_axes={"ids": {0: "batch", 1: "seq"}, "logp": {0: "batch", 1: "seq"}},
                  feeds=[(clgrad.randint(0, 12, (3, 7)),)])
    assert "LSTM" in op_types(proto)
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


@pytest.mark.parametrize("kind, kw", [("RNN", {"nonlinearity": "relu", "bidirectional": True}),
                                      ("RNN", {"num_layers": 2}),
                                      ("GRU", {"bidirectional": True, "num_layers": 2}),
                                      ("LSTM", {"bidirectional": True, "batch_first": True})])
def test_recurrent_layers_with_initial_state(kind, kw):
    layer = getattr(nn, kind)(3, 4, **kw)
    dirs = 2 if kw.get("bidirectional") else 1
    h0 = clgrad.randn(kw.get("num_layers", 1) * dirs, 2, 4)
    hx = (h0, clgrad.randn(*h0.shape)) if kind == "LSTM" else h0
    x = clgrad.randn(2, 5, 3) if kw.get("batch_first") else clgrad.randn(5, 2, 3)
    proto = check(layer, (x, hx))
    assert {"RNN": "RNN", "GRU": "GRU", "LSTM": "LSTM"}[kind] in op_types(proto)


def test_unbatched_gru_and_projected_lstm_traced_op_by_op():
    check(nn.GRU(3, 4), (clgrad.randn(5, 3),))
    proto = check(nn.LSTM(3, 4, proj_size=2), (clgrad.randn(4, 1, 3),))
    assert "LSTM" not in op_types(proto)  # no ONNX counterpart: the steps are exported as they ran


# ---- attention -------------------------------------------------------------------------------------
class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer from MultiheadAttention, LayerNorm, Linear and dropout."""

    def __init__(self, d=8, heads=2, ff=16):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Dropout(0.1), nn.Linear(ff, d))
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, mask=None):
        a, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        x = self.norm1(x + a)
        return self.norm2(x + self.ff(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(), EncoderLayer()])
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        causal = clgrad.ones(x.shape[1], x.shape[1]).triu(1).bool()
        for layer in self.layers:
            x = layer(x, causal)
        return self.head(x.mean(1))


def test_transformer_encoder_dynamic_batch():
    x = clgrad.randn(2, 4, 8)
    proto = check(Encoder(), (x,), input_names=["x"], dynamic_axes={"x": [0]},
                  feeds=[(clgrad.randn(5, 4, 8),)], rtol=1e-4, atol=1e-5)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"


class CausalEncoder(nn.Module):
    """nn.TransformerEncoder with a causal mask built inside forward, as language models do."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.enc(x, mask=mask, is_causal=True)


@pytest.mark.parametrize("norm_first", [False, True])
def test_nn_transformer_encoder_and_full_transformer(norm_first):
    check(CausalEncoder(), (clgrad.randn(3, 5, 16),), input_names=["x"], dynamic_axes={"x": {0: "batch"}},
          feeds=[(clgrad.randn(6, 5, 16),)])
    full = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                          norm_first=norm_first)
    check(full, (clgrad.randn(5, 2, 16), clgrad.randn(4, 2, 16)))


def test_attention_weights_sequence_first():
    mha = nn.MultiheadAttention(6, 3, kdim=4, vdim=5)
    q, k, v = clgrad.randn(3, 2, 6), clgrad.randn(4, 2, 4), clgrad.randn(4, 2, 5)
    check(mha, (q, k, v))


# ---- export options --------------------------------------------------------------------------------
class Net(nn.Module):
    """An MNIST-like CNN that flattens with the traced batch size."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3)
        self.fc = nn.Linear(8 * 5 * 5, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 5)
        return F.log_softmax(self.fc(x.view(x.size(0), -1)), dim=1)


def test_cnn_to_file_dynamic_batch(tmp_path):
    x = clgrad.randn(2, 1, 16, 16)
    path = tmp_path / "net.onnx"
    model = Net()
    proto = clgrad.onnx.export(model, x, str(path), input_names=["image"], output_names=["logp"],
                               dynamic_axes={"image": {0: "n"}, "logp": {0: "n"}})
    assert path.read_bytes() == proto.SerializeToString()
    onnx.checker.check_model(str(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for n in (2, 7):
        xb = clgrad.randn(n, 1, 16, 16)
        np.testing.assert_allclose(sess.run(None, {"image": xb.numpy()})[0], _expected(model, (xb,))[0],
                                   rtol=1e-4, atol=1e-5)
    assert [i.name for i in proto.graph.initializer][:6] == ["conv1.weight", "conv1.bias", "conv2.weight",
                                                          "conv2.bias", "fc.weight", "fc.bias"]


def test_cnn_matches_pytorch():
    torch = pytest.importorskip("torch")
    model = Net()
    ref = torch.nn.Sequential()  # the same layers in PyTorch, weights copied by state_dict
    ref.conv1, ref.conv2, ref.fc = torch.nn.Conv2d(1, 4, 3), torch.nn.Conv2d(4, 8, 3), torch.nn.Linear(200, 10)
    ref.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    x = clgrad.randn(3, 1, 16, 16)
    sess = _session(clgrad.onnx.export(model, (x,)).SerializeToString())
    tx = torch.from_numpy(x.numpy())
    with torch.no_grad():
        h = torch.nn.functional.relu(ref.conv2(torch.nn.functional.max_pool2d(torch.relu(ref.conv1(tx)), 2)))
        want = torch.log_softmax(ref.fc(torch.nn.functional.adaptive_avg_pool2d(h, 5).flatten(1)), 1).numpy()
    np.testing.assert_allclose(sess.run(None, {"x": x.numpy()})[0], want, rtol=1e-4, atol=1e-5)


def test_verbose_prints_the_graph_and_export_is_deterministic(capsys):
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    x = clgrad.randn(4, 3)
    first = clgrad.onnx.export(model, (x,), verbose=True).SerializeToString()
    assert "Gemm" in capsys.readouterr().out
    assert clgrad.onnx.export(model, (x,)).SerializeToString() == first


def test_export_params_false_and_initializers_as_inputs():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    x = clgrad.randn(4, 3)
    proto = clgrad.onnx.export(model, (x,), export_params=False)
    assert not proto.graph.initializer
    assert [i.name for i in proto.graph.input] == ["input", "0.weight", "0.bias"]
    proto = check(model, (x,), keep_initializers_as_inputs=True)
    assert [i.name for i in proto.graph.input] == ["input", "0.weight", "0.bias"]
    assert {i.name for i in proto.graph.initializer} == {"0.weight", "0.bias"}


def test_constant_folding_off_keeps_ops_on_parameters():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(clgrad.randn(3, 4))

        def forward(self, x):
            return x @ (self.w.t() * 2)

    x = clgrad.randn(2, 4)
    folded = check(M(), (x,))
    assert op_types(folded) == {"MatMul"}
    unfolded = check(M(), (x,), do_constant_folding=False)
    assert {"Transpose", "Mul", "MatMul"} <= op_types(unfolded)
    assert "w" in {i.name for i in unfolded.graph.initializer}


def test_kwargs_tuples_and_in_place_ops():
    class M(nn.Module):
        def forward(self, x, pair, scale=1.0, bias=None):
            y = x * pair[0] + pair[1]
            y.mul_(2)
            y += bias
            return y * scale

    x, a, b, bias = (clgrad.randn(2, 3) for _ in range(4))
    proto = check(M(), (x, (a, b), {"scale": 3.0, "bias": bias}))
    assert [i.name for i in proto.graph.input] == ["x", "pair.0", "pair.1", "bias"]


def test_is_in_onnx_export_and_modes():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append((clgrad.onnx.is_in_onnx_export(), self.training))
            return x + 1

    model = M()
    assert not clgrad.onnx.is_in_onnx_export()
    clgrad.onnx.export(model, clgrad.randn(2))
    assert seen and all(s == (True, False) for s in seen)
    assert model.training and not clgrad.onnx.is_in_onnx_export()


def test_custom_function_with_symbolic():
    class Twice(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def symbolic(g, x):
            return g.op("Add", x, x)

    class M(nn.Module):
        def forward(self, x):
            return Twice.apply(x) + 1

    assert "Add" in op_types(check(M(), (clgrad.randn(3),)))


# ---- errors ----------------------------------------------------------------------------------------
def test_unsupported_operator_names_the_op():
    class M(nn.Module):
        def forward(self, x):
            return clgrad.atan2(x, x + 1)

    with pytest.raises(clgrad.onnx.errors.UnsupportedOperatorError, match=r"'clgrad::atan2'.*Softmax"):
        clgrad.onnx.export(M(), (clgrad.randn(3),))
    assert issubclass(clgrad.onnx.UnsupportedOperatorError, RuntimeError)


def test_unrecorded_input_dependence_is_an_error():
    class Masked(nn.Module):
        def forward(self, x, mask):
            return x.masked_fill(mask.logical_not(), 0.0)  # logical_not on a bool input: not recorded

    x, mask = clgrad.randn(2, 3), clgrad.tensor([[True, False, True], [False, True, True]])
    with pytest.raises(clgrad.onnx.OnnxExporterError, match="freeze it as a constant"):
        clgrad.onnx.export(Masked(), (x, mask))


def test_bool_input_used_directly():
    class Masked(nn.Module):
        def forward(self, x, mask):
            return x.masked_fill(mask, -1.0) + clgrad.where(mask, x, 2.0)

    mask = clgrad.tensor([[True, False, True], [False, True, True]])
    check(Masked(), (clgrad.randn(2, 3), mask))


def test_argmax_is_not_recorded_and_says_so():
    class M(nn.Module):
        def forward(self, x):
            return x.argmax(1) + 0

    with pytest.raises(clgrad.onnx.OnnxExporterError, match="argmax"):
        clgrad.onnx.export(M(), (clgrad.randn(16, 32),))


def test_value_dependent_control_flow_is_an_error():
    class M(nn.Module):
        def forward(self, x):
            return x.exp() if float(x[0]) > 0.4 else x.sin().cos()

    with pytest.raises(clgrad.onnx.OnnxExporterError, match="control flow"):
        clgrad.onnx.export(M(), (clgrad.tensor([0.5, 0.0, 0.0]),))


def test_bad_opset():
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        clgrad.onnx.export(nn.ReLU(), (clgrad.randn(2),), opset_version=9)


# ---- devices ---------------------------------------------------------------------------------------
def test_opencl_device_writes_the_same_file(device):
    if device == "cpu":
        pytest.skip("compares an OpenCL device's export with the cpu one")
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3), nn.LogSoftmax(1))
    x = clgrad.randn(2, 1, 4, 4)
    on_cpu = clgrad.onnx.export(model, (x,)).SerializeToString()
    on_device = clgrad.onnx.export(model.to(device), (x.to(device),)).SerializeToString()
    assert on_device == on_cpu


@pytest.mark.parametrize("expr", ["LSTMCell(3, 4)", "LSTMCell(3, 4, bias=False)", "RNNCell(3, 4)",
                                  "RNNCell(3, 4, nonlinearity='relu')", "GRUCell(3, 4)"])
@pytest.mark.parametrize("state", [False, True])
@pytest.mark.parametrize("batched", [True, False])
def test_recurrent_cells(expr, state, batched):
    """A cell is one ONNX RNN/LSTM/GRU node over a one-step sequence (clgrad runs LSTMCell and RNNCell as fused
    nodes that have no op-by-op trace), with and without a given state, batched or not."""
    cell = eval("nn." + expr)
    x = clgrad.randn(2, 3) if batched else clgrad.randn(3)
    shape = (2, 4) if batched else (4,)
    args = (x,)
    if state:
        args = (x, (clgrad.randn(*shape), clgrad.randn(*shape)) if expr.startswith("LSTM") else clgrad.randn(*shape))
    proto = check(cell, args)
    assert {"LSTM": "LSTM", "RNNC": "RNN", "GRUC": "GRU"}[expr[:4]] in op_types(proto)
