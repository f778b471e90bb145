"""Stands in for `pip install -e .` of minGPT: the project scripts import the `mingpt` package,
so link the checkout's mingpt/ next to the script (the script's folder is first on sys.path)."""
import os

if not os.path.exists("mingpt"):
    os.symlink(os.path.join("..", "..", "mingpt"), "mingpt")
