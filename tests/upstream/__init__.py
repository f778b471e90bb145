"""The opt-in upstream tier: real library releases from PyPI on the simulated accelerator."""
