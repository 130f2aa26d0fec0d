"""pytorch/examples mnist_forward_forward: layer-local training with positive and negative data."""
import torch
import torch.nn as nn
from torch.optim import Adam


def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg, epochs):
        losses = []
        for _ in range(epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach(), losses


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = [Layer(dims[d], dims[d + 1]) for d in range(len(dims) - 1)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg, epochs):
        h_pos, h_neg = x_pos, x_neg
        losses = []
        for layer in self.layers:
            h_pos, h_neg, layer_losses = layer.train(h_pos, h_neg, epochs)
            losses += layer_losses
        return losses


def main(steps=40):
    torch.manual_seed(1234)
    x = torch.rand(64, 50)
    y = (x[:, 10:20].sum(1) * 3).long() % 10
    net = Net([50, 32, 32])
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])
    losses = net.train(x_pos, x_neg, steps)
    err = 1.0 - net.predict(x).eq(y).float().mean().item()
    print('train error:', err)
    return losses[:steps]
