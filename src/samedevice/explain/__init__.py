"""``samedevice explain``: from a pasted PyTorch device error to its template, cause and pages.

    >>> from samedevice.explain import explain
    >>> explain("RuntimeError: Expected all tensors to be on the same device, ...")["template"]

The engine reads only data: the message catalogue (``samedevice/data/templates.toml``), the
rules (``explain/rules.toml``) and the case registry. It never imports torch, and the browser's
"Paste your error" page runs the same rules from the same data (``explain.browser``).
"""

from __future__ import annotations

from samedevice.explain.clean import InputError

__all__ = ["InputError", "explain"]


def explain(text: str) -> dict:
    """Explain one paste; the dict is what ``samedevice explain --json`` prints."""
    from samedevice.explain.cache import knowledge
    from samedevice.explain.clean import check_text
    from samedevice.explain.engine import explain_text

    check_text(text)
    return explain_text(text, knowledge())
