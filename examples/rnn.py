"""A vanilla RNN built by hand from custom autograd Functions, then an ``nn.LSTM`` character language model.

    python examples/rnn.py [--device opencl:N|cpu] [--steps 400] [--lm-steps 400] [--seed 0]
    python examples/rnn.py --smoke            # a few seconds

Part 1 writes ReLU and Linear as ``autograd.Function``s with their own backward, builds an ``RNNCell``
module from them and unrolls it over time in an ``RNN`` module. It learns to add up a sequence of numbers
in [-1, 1): the state must carry the running sum from step to step (as two ReLU units, one for each sign),
and always guessing 0 scores an MSE of length/3, which a trained model beats by far.

Part 2 trains ``nn.Embedding`` + ``nn.LSTM`` + ``nn.Linear`` to predict the next character of
examples/data/tiny_text.txt (public-domain poems), then samples some text from it.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F

TEXT = Path(__file__).resolve().parent / "data" / "tiny_text.txt"


# ---- part 1: the hand-written RNN ----------------------------------------------------------------------

class ReLUF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class LinearF(torch.autograd.Function):
    """``input @ weight.T + bias``; backward returns one gradient per forward argument (None for no bias)."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        # needs_input_grad skips the products nobody asked for (the data's gradient, here).
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class Linear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        stdv = 1.0 / math.sqrt(in_features)
        for p in self.parameters():
            p.data.uniform_(-stdv, stdv)

    def forward(self, input):
        return LinearF.apply(input, self.weight, self.bias)


class RNNCell(nn.Module):
    """``h' = relu(W_ih x + b_ih + W_hh h + b_hh)``, with PyTorch's parameter names and initialisation."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = nn.Parameter(torch.empty(hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(hidden_size))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            weight.data.uniform_(-stdv, stdv)

    def forward(self, input, h):
        return ReLUF.apply(LinearF.apply(input, self.weight_ih, self.bias_ih)
                           + LinearF.apply(h, self.weight_hh, self.bias_hh))


class RNN(nn.Module):
    """Runs the cell over a (time, batch, features) sequence and reads the answer off the last state."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.cell = RNNCell(input_size, hidden_size)
        self.readout = Linear(hidden_size, output_size)

    def forward(self, input, h=None):
        if h is None:
            h = torch.zeros(input.shape[1], self.cell.hidden_size, device=input.device)
        # Plain Python unrolling: autograd records every step, and backward runs through all of them.
        for x in input:
            h = self.cell(x, h)
        return self.readout(h), h


def sum_batch(rng, batch, length, device):
    """(length, batch, 1) numbers drawn uniformly from [-1, 1), and their (batch, 1) sums."""
    x = rng.uniform(-1, 1, (length, batch, 1))
    return torch.tensor(x, dtype=torch.float, device=device), torch.tensor(x.sum(0), dtype=torch.float, device=device)


def train_rnn(args, device) -> tuple[float, float]:
    rng = np.random.default_rng(args.seed)
    model = RNN(1, args.hidden, 1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    x_test, y_test = sum_batch(rng, 256, args.length, device)

    def test_loss():
        with torch.no_grad():
            return F.mse_loss(model(x_test)[0], y_test).item()

    initial, start = test_loss(), time.perf_counter()
    print(f"RNN (custom Functions) summing {args.length} numbers; guessing 0 scores {args.length / 3:.4f}")
    for step in range(1, args.steps + 1):
        x, y = sum_batch(rng, args.batch_size, args.length, device)
        loss = F.mse_loss(model(x)[0], y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % args.log_interval == 0 or step == args.steps:
            print(f"  step {step:4d}  train loss {loss.item():.4f}  test loss {test_loss():.4f}")
    final = test_loss()
    print(f"RNN: initial loss {initial:.6g}, final loss {final:.6g} ({time.perf_counter() - start:.1f} s)")
    return initial, final


# ---- part 2: an nn.LSTM character language model ------------------------------------------------------

class CharLM(nn.Module):
    def __init__(self, vocab, embed=32, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, chars, state=None):
        """chars: (time, batch) indices -> logits (time, batch, vocab) and the LSTM's (h, c)."""
        out, state = self.lstm(self.embed(chars), state)
        return self.head(out), state


def windows(data, starts, length, device):
    """(input, target) index tensors of shape (length, len(starts)): target is input shifted by one."""
    idx = np.asarray(starts)[None, :] + np.arange(length + 1)[:, None]
    chunk = torch.tensor(data[idx], device=device)
    return chunk[:-1], chunk[1:]


def sample(model, stoi, itos, prime, n, temperature, rng, device) -> str:
    """Feed ``prime``, then draw ``n`` characters one at a time, carrying the LSTM state along."""
    out = prime
    with torch.no_grad():
        logits, state = model(torch.tensor([[stoi[c]] for c in prime], device=device))
        for _ in range(n):
            p = F.softmax(logits[-1, 0] / temperature, dim=0).cpu().numpy().astype(np.float64)
            c = int(rng.choice(len(p), p=p / p.sum()))
            out += itos[c]
            logits, state = model(torch.tensor([[c]], device=device), state)
    return out


def train_lm(args, device) -> tuple[float, float]:
    text = TEXT.read_text()
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    rng = np.random.default_rng(args.seed)
    model = CharLM(len(itos)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lm_lr)
    last = len(data) - args.seq_len - 1
    x_eval, y_eval = windows(data, np.linspace(0, last, 32).astype(int), args.seq_len, device)

    def eval_loss():
        with torch.no_grad():
            return F.cross_entropy(model(x_eval)[0].reshape(-1, len(itos)), y_eval.reshape(-1)).item()

    initial, start = eval_loss(), time.perf_counter()
    print(f"\nLSTM language model on {TEXT.name}: {len(text)} characters, {len(itos)} distinct; "
          f"uniform guessing scores {math.log(len(itos)):.4f}")
    for step in range(1, args.lm_steps + 1):
        x, y = windows(data, rng.integers(0, last, args.batch_size), args.seq_len, device)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(itos)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % args.log_interval == 0 or step == args.lm_steps:
            print(f"  step {step:4d}  train loss {loss.item():.4f}")
    final = eval_loss()
    print(f"LSTM: initial loss {initial:.6g}, final loss {final:.6g} ({time.perf_counter() - start:.1f} s)")
    print("sample:\n" + sample(model, stoi, itos, "Shall I", args.sample_chars, 0.8, rng, device))
    return initial, final


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="opencl" if torch.opencl.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=400, help="training steps of the hand-written RNN")
    p.add_argument("--lm-steps", type=int, default=400, help="training steps of the LSTM language model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="a short run of both parts (a few seconds)")
    p.add_argument("--length", type=int, default=10, help="how many numbers the RNN adds up")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--lm-lr", type=float, default=1e-2)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--sample-chars", type=int, default=300)
    p.add_argument("--log-interval", type=int, default=50)
    args = p.parse_args(argv)
    if args.smoke:
        args.steps, args.lm_steps, args.seq_len, args.sample_chars, args.log_interval = 60, 30, 16, 60, 10
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    _, rnn_final = train_rnn(args, device)
    lm_initial, lm_final = train_lm(args, device)
    # Each part must clearly learn: the RNN beat guessing by far, the LSTM beat uniform guessing.
    guess = args.length / 3
    ok = rnn_final < (0.3 if args.smoke else 0.05) * guess and lm_final < (0.85 if args.smoke else 0.6) * lm_initial
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
