"""A small MNIST-shaped set of digit-like images (the programs read torchvision's MNIST; here: synthetic)."""
import numpy as np


def digits(n=256, seed=0):
    """(n, 1, 28, 28) float32 images of 10 noisy prototype strokes, and their int64 labels."""
    rng = np.random.default_rng(seed)
    protos = np.zeros((10, 28, 28), np.float32)
    for k in range(10):
        r0, c0 = 4 + (k % 5) * 4, 4 + (k // 5) * 10
        protos[k, r0:r0 + 6, c0:c0 + 12] = 1.0
    labels = rng.integers(0, 10, n)
    images = protos[labels] + 0.3 * rng.normal(size=(n, 28, 28)).astype(np.float32)
    images = (images - 0.1307) / 0.3081
    return images[:, None].astype(np.float32), labels.astype(np.int64)
