"""Stands in for `pip install torchdiffeq` (from this checkout) and for matplotlib.

- The example imports the `torchdiffeq` package: link the checkout's torchdiffeq/ next to the script.
- latent_ode.py imports matplotlib (a compiled package, not installed here) and always plots the ground
  truth spirals with plt.figure/plot/legend/savefig before training; a stand-in matplotlib package
  next to the script accepts those calls and draws nothing. Nothing on the device is involved.
"""
import os

if not os.path.exists("torchdiffeq"):
    os.symlink(os.path.join("..", "torchdiffeq"), "torchdiffeq")

INIT = '''"""Stand-in for matplotlib (written by the benchmark): accepts calls, draws nothing."""


def use(backend, *args, **kwargs):
    pass
'''

PYPLOT = '''"""Stand-in for matplotlib.pyplot (written by the benchmark): every call is accepted and draws nothing."""


class _Nothing:
    def __call__(self, *args, **kwargs):
        return _Nothing()

    def __getattr__(self, name):
        return _Nothing()


def __getattr__(name):
    return _Nothing()
'''

os.makedirs("matplotlib", exist_ok=True)
with open(os.path.join("matplotlib", "__init__.py"), "w") as f:
    f.write(INIT)
with open(os.path.join("matplotlib", "pyplot.py"), "w") as f:
    f.write(PYPLOT)
