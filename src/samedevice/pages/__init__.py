"""Case pages: each ``cases/<slug>.ipynb`` is generated from the case's own files.

Sources: ``cases/<slug>.toml`` (facts and prose) and ``snippets/<slug>/{broken,fixed}.py``
(the programs, shown verbatim). ``build_cells`` lays them out under fixed headings --
Error, Why, Fix (first, on the first screen), Reproduce, Fixed program, Find it in your code, Affected versions, Upstream, Last verified --
with hidden cells (tag ``remove-cell``) that load the simulated accelerator and assert, like
Lean's error explanations, that the failing cell failed with exactly the documented message.
``samedevice notebook`` executes the result and stores the outputs the site renders;
``samedevice notebook --check`` fails when a notebook no longer matches its sources.
"""

from __future__ import annotations

from .notebook import (
    HIDDEN_TAG,
    RAISES_TAG,
    build_notebook,
    cell_sources,
    check_notebook,
    normalise_outputs,
)

__all__ = [
    "HIDDEN_TAG",
    "RAISES_TAG",
    "build_notebook",
    "cell_sources",
    "check_notebook",
    "normalise_outputs",
]
