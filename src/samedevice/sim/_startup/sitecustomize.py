"""Started in every Python process whose PYTHONPATH holds this folder (see ``runner``).

``SAMEDEVICE_SIM`` says how the process should see devices ("cuda": the simulated accelerator
answering to "cuda"; "sim": the simulated accelerator under its own name; "cpu": the plain-CPU
reference run). Processes a program spawns (``torch.multiprocessing.spawn``) inherit the
variable, so distributed snippets get the same device in every rank.
"""

import os

if os.environ.get("SAMEDEVICE_SIM"):
    from samedevice._quiet_numpy import quiet_missing_numpy

    quiet_missing_numpy()  # before torch is imported
    from samedevice.sim import _process

    _process.start(os.environ["SAMEDEVICE_SIM"])
