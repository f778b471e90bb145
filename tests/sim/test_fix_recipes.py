"""The general fixes on the family and message pages (data/fixes.toml) are proven like cases:
each recipe's ``before`` fails with the template it names, its ``after`` runs to the end."""

from __future__ import annotations

import pytest
import torch

from samedevice import fixes, sim
from samedevice.cases import FAMILY_IDS
from samedevice.explain import explain

RECIPES = fixes.recipes()


def _run(source: str, name: str) -> None:
    exec(compile(source, name, "exec"), {"__name__": "__recipe__"})


def _simulated(recipe: fixes.Recipe):
    # "cuda" is the simulated GPU; a recipe of the environment runs on the plain CPU build
    return sim.cuda_alias(recipe.needs_cuda)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.id)
def test_before_fails_with_the_template_the_recipe_names(simdev, recipe):
    if not recipe.needs_cuda and torch.cuda.is_available():
        pytest.skip("a machine with a GPU runs the environment's broken program")
    with _simulated(recipe), pytest.raises(Exception) as raised:
        _run(recipe.before, f"<{recipe.id}: before>")
    message = f"{type(raised.value).__name__}: {raised.value}"
    assert explain(message)["template"] == recipe.template, message


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.id)
def test_after_runs_to_the_end(simdev, recipe):
    with _simulated(recipe):
        _run(recipe.after, f"<{recipe.id}: after>")


def test_every_family_has_a_recipe_and_every_recipe_a_pytorch_doc_link():
    assert [f for f in FAMILY_IDS if not fixes.for_family(f)] == []
    assert [r.id for r in RECIPES if not r.docs] == []


def test_a_malformed_recipe_file_names_the_field(monkeypatch, tmp_path):
    bad = tmp_path / "fixes.toml"
    bad.write_text(fixes.FIXES.read_text(encoding="utf-8").replace('template = "T6"', 'template = "T99"')
                   .replace('docs = ["generator"]', 'docs = ["generators"]'), encoding="utf-8")
    monkeypatch.setattr(fixes, "FIXES", bad)
    fixes.recipes.cache_clear()
    try:
        with pytest.raises(fixes.FixesError) as raised:
            fixes.recipes()
    finally:
        fixes.recipes.cache_clear()
    text = str(raised.value)
    assert "recipe.10.template: a template id T1 to T13" in text
    assert "recipe generator-device: docs: no [docs] entry 'generators'" in text
