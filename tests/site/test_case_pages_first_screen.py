"""A case page as a reader first sees it: the title, the error, Why and Fix before the programs
and their tracebacks; PyTorch's frames folded away; nothing the simulator itself printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from samedevice.site.notebook_html import short_traceback
from tests.site.browser import BROWSER, serve
from tests.site.sitebuild import BuiltSite

FIRST_SCREENS_PX = 1500  # at 1280×800: the first screen and a little scrolling
# What the simulator, Inductor or a CPU-only build print besides the program's own output
SIMULATOR_NOISE = re.compile(r"samedevice\.sim:|triton not found|compiled without cuDNN")


def test_no_case_page_shows_what_the_simulator_printed(built_site: BuiltSite) -> None:
    noisy = [case.slug for case in built_site.cases
             if SIMULATOR_NOISE.search(built_site.page(f"cases/{case.slug}/").read_text(encoding="utf-8"))]
    assert noisy == []


def test_every_case_page_folds_pytorch_frames_below_a_short_traceback(built_site: BuiltSite) -> None:
    html = {case.slug: built_site.page(f"cases/{case.slug}/").read_text(encoding="utf-8")
            for case in built_site.cases}
    # every failing program that goes through PyTorch's frames gets the short view first
    folded = [slug for slug, text in html.items() if 'class="sd-short-traceback"' in text]
    assert len(folded) >= len(html) * 3 // 4, sorted(set(html) - set(folded))
    for slug in folded:
        text = html[slug]
        assert text.index('class="sd-short-traceback"') < text.index('class="sd-full-traceback"'), slug


def test_every_case_page_gives_a_reproduce_command_that_works_outside_a_checkout(built_site: BuiltSite) -> None:
    for case in built_site.cases:
        text = built_site.page(f"cases/{case.slug}/").read_text(encoding="utf-8")
        beside = [p for p in case.broken_path.parent.iterdir()
                  if p.is_file() and p.name not in ("broken.py", "fixed.py")]
        if beside:  # the program reads files kept beside it: only a checkout has them
            assert "in a checkout of samedevice (the program reads the files beside it), <code>" in text, case.slug
            assert f"snippets/{case.slug}/broken.py</code> runs it" in text, case.slug
        else:
            assert f"<code>samedevice snippet {case.slug} --broken -o broken.py &amp;&amp; " in text, case.slug


def test_the_reproduce_command_as_the_page_gives_it_fails_with_the_cases_error(tmp_path) -> None:
    from samedevice.cases import get_case
    from samedevice.pages.notebook import _reproduce

    case = get_case("llms-from-scratch-out-head")
    command = re.search(r"`([^`]+)`", _reproduce(case)).group(1)
    assert command == ("samedevice snippet llms-from-scratch-out-head --broken -o broken.py "
                       "&& samedevice run broken.py")
    bindir = Path(sys.executable).parent  # the venv's samedevice, as a reader's shell finds it
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    env.pop("SAMEDEVICE_ROOT", None)
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 1, proc.stderr[-2000:]
    # the case's own message for this PyTorch, word for word
    assert any(m.text in proc.stderr for m in case.error.messages), proc.stderr[-2000:]
    assert "but got mat1 is on cuda:0, different from other tensors on cpu" in proc.stderr


TRACEBACK = """\
---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
Cell In[2], line 40
     38 model = Net().cuda()
---> 40 out = model(x)

File /venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1779, in Module._wrapped_call_impl(self, *args, **kwargs)
   1778 else:
-> 1779     return self._call_impl(*args, **kwargs)

File /venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1790, in Module._call_impl(self, *args, **kwargs)
-> 1790     return forward_call(*args, **kwargs)

Cell In[2], line 12, in Net.forward(self, x)
---> 12     return self.fc(x)

File /venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:134, in Linear.forward(self, input)
-> 134     return F.linear(input, self.weight, self.bias)

RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"""


def test_short_traceback_keeps_the_programs_frames_and_the_error_and_counts_pytorchs() -> None:
    short, dropped = short_traceback(TRACEBACK)
    assert dropped == 3
    assert "site-packages/torch" not in short
    assert "---> 40 out = model(x)" in short and "---> 12     return self.fc(x)" in short
    assert short.count("... 2 frames inside PyTorch (in the full traceback below)") == 1
    assert short.count("... 1 frame inside PyTorch (in the full traceback below)") == 1
    assert short.rstrip().endswith("(when checking argument in method wrapper_CUDA_addmm)")
    # the order is kept: the program's line, PyTorch's two frames, the forward, PyTorch's one
    assert short.index("line 40") < short.index("2 frames") < short.index("line 12") < short.index("1 frame")


def test_short_traceback_leaves_alone_what_it_cannot_shorten() -> None:
    assert short_traceback("RuntimeError: boom") is None
    only_program = "\n".join(line for line in TRACEBACK.split("\n\n") if "site-packages" not in line)
    assert short_traceback(only_program) is None


@pytest.fixture(scope="module")
def base_url(site):
    root, _ = site
    yield from serve(root)




@BROWSER[0]
@BROWSER[1]
def test_why_and_fix_are_on_the_first_screen_of_every_case_page(built_site: BuiltSite, browser, base_url) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    late = {}
    try:
        for case in built_site.cases:
            page.goto(f"{base_url}cases/{case.slug}/")
            tops = page.evaluate("""() => Object.fromEntries(['why', 'fix'].map(id => {
                const h = document.getElementById(id);
                return [id, h ? h.getBoundingClientRect().top + window.scrollY : null];
            }))""")
            if tops["why"] is None or tops["why"] > FIRST_SCREENS_PX:
                late[case.slug] = tops
    finally:
        context.close()
    assert late == {}
