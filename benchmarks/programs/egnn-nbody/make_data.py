"""Writes a small synthetic charged 5-body data set in the layout NBodyDataset loads
(n_body_system/dataset/{loc,vel,edges,charges}_{train,valid,test}_charged5_initvel1small.npy:
loc/vel (N, T, 3, 5), edges (N, 5, 5), charges (N, 5, 1)), in place of generate_dataset.py's
5,000-step simulations."""
import os

import numpy as np

rng = np.random.RandomState(0)
os.makedirs(os.path.join("n_body_system", "dataset"), exist_ok=True)
for split, n in (("train", 100), ("valid", 40), ("test", 40)):
    charges = rng.choice([-1.0, 1.0], size=(n, 5, 1))
    edges = charges @ charges.transpose(0, 2, 1)
    vel0 = rng.randn(n, 1, 3, 5) * 0.5
    acc = rng.randn(n, 1, 3, 5) * 0.01
    t = np.arange(49).reshape(1, 49, 1, 1)
    vel = vel0 + acc * t
    loc = rng.randn(n, 1, 3, 5) + vel0 * t * 0.1 + 0.5 * acc * t ** 2 * 0.1
    suffix = split + "_charged5_initvel1small"
    for name, arr in (("loc", loc), ("vel", vel), ("edges", edges), ("charges", charges)):
        np.save(os.path.join("n_body_system", "dataset", name + "_" + suffix + ".npy"), arr)
