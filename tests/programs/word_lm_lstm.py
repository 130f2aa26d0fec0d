"""pytorch/examples word_language_model with --model LSTM: embedding, LSTM, decoder; whole-model checkpoint."""
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.programs._lm_data import corpus


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt=10):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def main(steps=2):
    torch.manual_seed(1111)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
    ids, ntokens = corpus()
    train_data = batchify(torch.tensor(ids), 8, device)
    model = RNNModel('LSTM', ntokens, 16, 16, 2, 0.2, tie_weights=True).to(device)
    criterion = nn.NLLLoss()
    lr, losses = 5.0, []
    for epoch in range(1, steps + 1):
        model.train()
        total_loss = 0.
        hidden = model.init_hidden(8)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, 10)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
        losses.append(total_loss / (batch + 1))
        print('| epoch {:3d} | loss {:5.2f} | ppl {:8.2f}'.format(epoch, losses[-1], math.exp(losses[-1])))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.pt")
        with open(path, 'wb') as f:
            torch.save(model, f)
        with open(path, 'rb') as f:
            model = torch.load(f, weights_only=False)
            if model.rnn_type in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
                model.rnn.flatten_parameters()
    model.eval()
    with torch.no_grad():
        output, _ = model(train_data[:10], model.init_hidden(8))
    assert output.shape == (80, ntokens)
    return losses
