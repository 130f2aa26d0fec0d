"""pyGAT (Velickovic et al.): graph attention layers on a dense adjacency."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super(GraphAttentionLayer, self).__init__()
        self.dropout = dropout
        self.in_features = in_features
        self.out_features = out_features
        self.alpha = alpha
        self.concat = concat
        self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
        nn.init.xavier_uniform_(self.W.data, gain=1.414)
        self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
        nn.init.xavier_uniform_(self.a.data, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(self.alpha)

    def forward(self, h, adj):
        Wh = torch.mm(h, self.W)
        e = self._prepare_attentional_mechanism_input(Wh)
        zero_vec = -9e15 * torch.ones_like(e)
        attention = torch.where(adj > 0, e, zero_vec)
        attention = F.softmax(attention, dim=1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, Wh)
        return F.elu(h_prime) if self.concat else h_prime

    def _prepare_attentional_mechanism_input(self, Wh):
        Wh1 = torch.matmul(Wh, self.a[:self.out_features, :])
        Wh2 = torch.matmul(Wh, self.a[self.out_features:, :])
        e = Wh1 + Wh2.T
        return self.leakyrelu(e)


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        super(GAT, self).__init__()
        self.dropout = dropout
        self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
                           for _ in range(nheads)]
        for i, attention in enumerate(self.attentions):
            self.add_module('attention_{}'.format(i), attention)
        self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


def main(steps=40):
    torch.manual_seed(72)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
    rng = np.random.default_rng(1)
    n, nfeat, nclass = 40, 12, 3
    labels = rng.integers(0, nclass, n)
    adj = (rng.random((n, n)) < np.where(labels[:, None] == labels[None, :], 0.3, 0.03)).astype(np.float32)
    adj = np.maximum(adj, adj.T) + np.eye(n, dtype=np.float32)
    feats = (rng.normal(size=(n, nfeat)) + np.eye(nclass)[labels] @ rng.normal(size=(nclass, nfeat))).astype(np.float32)
    features, adj, labels = torch.FloatTensor(feats), torch.FloatTensor(adj), torch.LongTensor(labels)
    model = GAT(nfeat=nfeat, nhid=8, nclass=nclass, dropout=0.6, alpha=0.2, nheads=4)
    optimizer = optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    model.to(device)
    features, adj, labels = features.to(device), adj.to(device), labels.to(device)
    losses = []
    for epoch in range(steps):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output, labels)
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.data.item())
    return losses
