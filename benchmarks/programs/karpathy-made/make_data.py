"""Writes a synthetic binarized_mnist.npz (train_data / valid_data, float32 0/1 arrays of 784
pixels, the layout of the file run.py's docstring links) with a few hundred images."""
import numpy as np

rng = np.random.RandomState(0)
protos = rng.rand(10, 784) < 0.3


def sample(n):
    x = protos[rng.randint(0, 10, size=n)]
    flip = rng.rand(n, 784) < 0.05
    return np.logical_xor(x, flip).astype(np.float32)


np.savez("binarized_mnist.npz", train_data=sample(300), valid_data=sample(100), test_data=sample(100))
