"""pytorch/examples mnist_hogwild: two processes train one shared-memory model (on cpu, as Hogwild needs)."""
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from tests.programs._mnist_data import digits


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=5)
        self.fc1 = nn.Linear(128, 20)
        self.fc2 = nn.Linear(20, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 128)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def dataset():
    x, y = digits(256)
    return TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def train(rank, model, device, epochs):
    torch.manual_seed(1 + rank)
    train_loader = DataLoader(dataset(), batch_size=32, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.5)  # the example's defaults
    model.train()
    for epoch in range(epochs):
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data.to(device)), target.to(device))
            loss.backward()
            optimizer.step()


def test_loss(model, device):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for data, target in DataLoader(dataset(), batch_size=128):
            total += F.nll_loss(model(data.to(device)), target.to(device), reduction='sum').item()
    return total / 256


def main(steps=2):
    device = torch.device("cpu")
    torch.manual_seed(1)
    mp.set_start_method('spawn', force=True)
    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    before = test_loss(model, device)
    processes = []
    for rank in range(2):
        p = mp.Process(target=train, args=(rank, model, device, steps))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0, p.exitcode
    return [before, test_loss(model, device)]  # the parent's model learned from the children's steps
