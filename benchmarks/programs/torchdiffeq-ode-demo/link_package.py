"""Stands in for `pip install torchdiffeq` (from this checkout): the example imports the
`torchdiffeq` package, so link the checkout's torchdiffeq/ next to the script."""
import os

if not os.path.exists("torchdiffeq"):
    os.symlink(os.path.join("..", "torchdiffeq"), "torchdiffeq")
