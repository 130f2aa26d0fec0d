"""PyTorch's "Automatic Mixed Precision" recipe: a deep MLP trained under torch.autocast with a GradScaler,
gradient clipping after scaler.unscale_, and a checkpoint holding the scaler's state."""
import torch

from tests.programs._mnist_data import digits


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*layers)


def main(epochs=3, batch_size=64):
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    device = acc.type if acc is not None else "cpu"
    images, labels = digits(512)
    data = [(images[i:i + batch_size].reshape(-1, 784), labels[i:i + batch_size])
            for i in range(0, len(images), batch_size)]
    torch.manual_seed(0)
    net = make_model(784, 10, 3).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    use_amp = True
    scaler = torch.amp.GradScaler(device, enabled=use_amp)
    losses = []
    for epoch in range(epochs):
        for x, y in data:
            x, y = torch.as_tensor(x).to(device), torch.as_tensor(y).to(device)
            with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
                output = net(x)
                assert output.dtype is torch.float16
                loss = loss_fn(output, y)
                assert loss.dtype is torch.float32
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
    scaler.load_state_dict(checkpoint["scaler"])
    print("final loss {:.4f}, scale {}".format(losses[-1], scaler.get_scale()))
    return losses
