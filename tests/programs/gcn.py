"""pygcn (Kipf & Welling): a two-layer GCN with a sparse normalised adjacency, legacy FloatTensor parameters."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter
from torch.nn.modules.module import Module


class GraphConvolution(Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        return output + self.bias if self.bias is not None else output


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def sparse_mx_to_torch_sparse_tensor(rows, cols, vals, shape):
    indices = torch.from_numpy(np.vstack((rows, cols)).astype(np.int64))
    values = torch.from_numpy(vals)
    return torch.sparse_coo_tensor(indices, values, torch.Size(shape))


def load_graph(n=60, nfeat=16, nclass=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, nclass, n)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n)
             if rng.random() < (0.3 if labels[i] == labels[j] else 0.02)]
    rows = np.array([e[0] for e in edges] + [e[1] for e in edges] + list(range(n)))
    cols = np.array([e[1] for e in edges] + [e[0] for e in edges] + list(range(n)))
    deg = np.bincount(rows, minlength=n).astype(np.float32)
    vals = (1.0 / deg[rows]).astype(np.float32)  # row-normalised, as pygcn's normalize()
    features = (rng.normal(size=(n, nfeat)) + np.eye(nclass)[labels] @ rng.normal(size=(nclass, nfeat))).astype(np.float32)
    adj = sparse_mx_to_torch_sparse_tensor(rows, cols, vals, (n, n))
    return adj, torch.FloatTensor(features), torch.LongTensor(labels)


def main(steps=60):
    torch.manual_seed(42)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
    adj, features, labels = load_graph()
    model = GCN(nfeat=features.shape[1], nhid=16, nclass=int(labels.max()) + 1, dropout=0.5)
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    model, features, adj, labels = model.to(device), features.to(device), adj.to(device), labels.to(device)
    idx_train = torch.LongTensor(range(40)).to(device)
    losses = []
    for epoch in range(steps):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())
    model.eval()
    output = model(features, adj)
    acc = output.max(1)[1].eq(labels).double().mean()
    print('accuracy: {:.4f}'.format(acc.item()))
    return losses
