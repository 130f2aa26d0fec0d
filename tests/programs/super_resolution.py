"""pytorch/examples super_resolution: an ESPCN net with PixelShuffle, orthogonal init, whole-model checkpoint."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def main(steps=25):
    torch.manual_seed(123)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
    hr = torch.rand(8, 1, 16, 16)
    hr = (hr + hr.roll(1, 2) + hr.roll(1, 3)) / 3  # some spatial correlation
    lr_img = nn.functional.avg_pool2d(hr, 2)
    model = Net(upscale_factor=2).to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.003)
    losses = []
    for epoch in range(steps):
        input, target = lr_img.to(device), hr.to(device)
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    with tempfile.TemporaryDirectory() as d:
        model_out_path = os.path.join(d, "model_epoch_{}.pth".format(steps))
        torch.save(model, model_out_path)
        restored = torch.load(model_out_path, weights_only=False)
        assert torch.equal(restored(lr_img.to(device)), model(lr_img.to(device)))
    return losses
