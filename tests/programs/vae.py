"""pytorch/examples vae: a variational autoencoder with the reparameterisation trick."""
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 8)
        self.fc22 = nn.Linear(32, 8)
        self.fc3 = nn.Linear(8, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main(steps=6):
    torch.manual_seed(1)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
    protos = (torch.rand(5, 1, 8, 8) > 0.5).float()
    data = protos[torch.randint(0, 5, (256,))]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, torch.zeros(256)),
                                         batch_size=64, shuffle=True)
    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(1, steps + 1):
        model.train()
        train_loss = 0
        for batch_idx, (data, _) in enumerate(loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        losses.append(train_loss / len(loader.dataset))
        with torch.no_grad():
            sample = torch.randn(64, 8).to(device)
            sample = model.decode(sample).cpu()
    return losses
