"""The matcher: signature + traceback evidence -> ranked families and the cases that match.

Cases come from the registry, never from a list in explain: a new case file is picked up (the
synthetic checkout below proves it), and every registered case is found from a traceback that
passes through its library frames.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import SEED
from samedevice.cases import load_cases
from samedevice.explain.engine import explain_text
from samedevice.explain.knowledge import build

CASES = load_cases()


def _seed_tracebacks():
    # file name: <owner>__<repo>.txt, the upstream project of the case it should find
    return sorted(SEED.glob("*.txt"))


@pytest.mark.parametrize("path", _seed_tracebacks(), ids=lambda p: p.stem)
def test_seed_case_found_from_its_traceback(explain, path):
    project = path.stem.replace("__", "/")
    wanted = [c for c in CASES if c.upstream.project == project]
    if not wanted:
        pytest.skip(f"no case for {project} in the registry yet")
    result = explain(path.read_text(encoding="utf-8"))
    assert result["cases"][0] == wanted[0].slug
    assert result["families"][0] == wanted[0].family
    assert result["template"] == wanted[0].error.template or result["template"] in wanted[0].templates


_KB = build()
# the fragments explain matches a case by (PyTorch's own plumbing, torch/*, is dropped), most
# specific first
_FRAGMENTS = {c["slug"]: c["library_frames"] for c in _KB["cases"]}
_GENERIC = _KB["scoring"]["generic_fragment"]


@pytest.mark.parametrize("case", [c for c in CASES if _FRAGMENTS.get(c.slug)], ids=lambda c: c.slug)
def test_every_case_found_through_its_library_frames(explain, case):
    """A traceback that passes through the case's own files, ending in its own message (cases
    whose bug lives in the user's own script, or only in PyTorch's plumbing, have no fragment to
    be found by). A bare file name (``train.py``) names the case but is no evidence for a family."""
    fragment = _FRAGMENTS[case.slug][0]
    text = textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/home/u/project/run.py", line 10, in <module>
            main()
          File "/home/u/.venv/lib/python3.11/site-packages/{fragment}", line 120, in step
            out = fn(batch)
        {case.error.exception}: {case.error.messages[0].text}
        """
    )
    result = explain(text)
    assert result["cases"][0] == case.slug
    if not _generic(fragment):
        assert case.family in result["families"][:3]


def _generic(fragment: str) -> bool:
    return bool(re.search(_GENERIC, fragment))


def test_plumbing_and_bare_names_are_not_family_evidence():
    """torch/* frames never name a case; a bare file name adds nothing to a family."""
    assert all(not f.startswith("torch/") for frags in _FRAGMENTS.values() for f in frags)
    assert _generic("train.py") and not _generic("lightly/loss/dino_loss.py")


# -- a synthetic checkout: explain reads whatever cases the registry holds -----------------------


def _case_file(slug, id_, family, template, frames, message, op="", argument=""):
    return textwrap.dedent(
        f"""\
        id = "{id_}"
        title = "Demo {slug}"
        summary = "A synthetic case for the matcher tests."
        family = "{family}"
        templates = ["{template}"]
        library_frames = {frames!r}

        [error]
        exception = "RuntimeError"
        template = "{template}"
        op = "{op}"
        argument = "{argument}"
        devices = ["cuda:0", "cpu"]

        [[error.messages]]
        torch = ">=2.8"
        text = "{message}"

        [upstream]
        project = "demo/{slug}"
        issue = ["https://github.com/demo/{slug}/issues/1"]

        [page]
        why = "w"
        fix = "f"
        find = "x"
        """
    ).replace("'", '"')


@pytest.fixture(scope="module")
def demo_kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkout")
    (root / "cases").mkdir()
    cases = {
        "demo-center-alias": _case_file(
            "demo-center-alias", "SD-9001", "F2", "T1", ["demolib/loss/center_loss.py"],
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        ),
        "demo-new-head": _case_file(
            "demo-new-head", "SD-9002", "F1", "T2", ["demo_finetune_head.py"],
            "Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)",
            op="addmm", argument="mat1",
        ),
        "demo-generic-name": _case_file(
            "demo-generic-name", "SD-9003", "F3", "T1", ["train.py"],
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        ),
    }
    for slug, text in cases.items():
        (root / "cases" / f"{slug}.toml").write_text(text)
        (root / "snippets" / slug).mkdir(parents=True)
        for name in ("broken.py", "fixed.py"):
            (root / "snippets" / slug / name).write_text("pass\n")
    return build(root)


def test_new_case_files_are_picked_up(demo_kb):
    assert [c["slug"] for c in demo_kb["cases"]] == ["demo-center-alias", "demo-new-head", "demo-generic-name"]
    head = demo_kb["cases"][1]
    # its documented message, read by the same parser
    assert head["signatures"] == [
        {"template": "T2", "op": "addmm", "op_base": "addmm", "argument": "mat1", "common_kind": "cpu", "argdev_kind": "accelerator"}
    ]


def test_library_frame_selects_the_case_and_its_family(demo_kb):
    text = (
        'Traceback (most recent call last):\n'
        '  File "/opt/conda/lib/python3.10/site-packages/demolib/loss/center_loss.py", line 88, in forward\n'
        "    out = (t - c) / temp\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    result = explain_text(text, demo_kb)
    assert result["cases"] == ["demo-center-alias"]
    assert result["families"][0] == "F2"
    frame = next(e for e in result["evidence"] if e["rule"] == "case-library-frame")
    assert (frame["case"], frame["line"], frame["families"]) == ("demo-center-alias", 2, {"F2": 4.0})


def test_a_similar_path_is_not_the_case(demo_kb):
    # component boundary: "mydemolib/loss/center_loss.py" is another library
    text = (
        '  File "/x/site-packages/mydemolib/loss/center_loss.py", line 3, in f\n'
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    assert explain_text(text, demo_kb)["cases"] == []


def test_signature_alone_lists_a_case(demo_kb):
    """Same op, argument and orientation as a case's own message, in another era's text."""
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cpu and cuda:0! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)"
    )
    result = explain_text(text, demo_kb)
    assert result["cases"] == ["demo-new-head"]
    assert result["case_ranking"][0]["why"] == [
        "its documented error has the same template T1/T2, op addmm, argument mat1, device order (score 5)"]


def test_a_bare_generic_file_name_counts_less(demo_kb):
    text = (
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    x = a * b\n'
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    result = explain_text(text, demo_kb)
    assert result["cases"] == ["demo-generic-name"]
    # the case still matches, but a file name every project has adds nothing to its family
    assert "case-library-frame" not in {e["rule"] for e in result["evidence"]}
    assert result["case_ranking"][0]["why"][0] == "traceback passes through train.py"


PLUMBING = ("transformers/trainer.py", "pytorch_lightning/trainer/trainer.py", "accelerate/accelerator.py")


def test_pytorch_plumbing_and_shared_frames_are_not_case_evidence(kb):
    """torch/* fragments and a framework's entry points never count; a fragment several cases
    list is split between them."""
    for case in kb["cases"]:
        assert not any(f.startswith("torch/") or f in PLUMBING for f in case["library_frames"]), case["slug"]
    shared = [c for c in kb["cases"] if "accelerate/hooks.py" in c["library_frames"]]
    assert len(shared) >= 2
    assert {c["frame_share"]["accelerate/hooks.py"] for c in shared} == {1 / len(shared)}


def test_evidence_names_the_line_and_rule(explain):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/model.py", line 40, in forward\n'
        "    bias = torch.zeros(x.shape[-1])\n"
        '  File "/w/model.py", line 41, in forward\n'
        "    return x + bias\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    result = explain(text)
    assert result["families"][0] == "F4"
    top = result["evidence"][0]
    assert (top["rule"], top["line"], top["match"]) == ("factory-without-device", 3, "bias = torch.zeros(x.shape[-1])")
    assert top["why"].startswith("`bias = torch.zeros(x.shape[-1])`: a factory call without device=")


def test_factory_with_device_is_not_evidence(explain):
    text = (
        '  File "/w/model.py", line 40, in forward\n'
        "    bias = torch.zeros(x.shape[-1], device=x.device)\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    assert "factory-without-device" not in [e["rule"] for e in explain(text)["evidence"]]


def test_message_text_is_not_context(explain):
    """T10's own words (map_location, CPU-only machine) are not read as text evidence; the
    message's fact (is_available() is False) is, once, as a signature."""
    result = explain(
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
        "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu')"
    )
    assert [e["rule"] for e in result["evidence"]] == ["no-gpu-visible"]
    assert result["families"] == ["F10", "F7"]


def test_no_message_but_evidence_still_ranks(explain):
    text = '  File "/x/site-packages/torch/nn/parallel/data_parallel.py", line 171, in forward\n    outputs = self.parallel_apply(replicas, inputs, kwargs)\n'
    result = explain(text)
    assert result["template"] is None
    assert result["families"] == ["F8"]


# -- fingerprints: a documented project's code named in a paste ----------------------------------

SEED_THREADS = SEED.parent / "seed_threads"


@pytest.mark.parametrize("path", sorted(SEED_THREADS.glob("*.txt")), ids=lambda p: p.stem)
def test_seed_bug_as_its_thread_shows_it_finds_its_case(explain, path):
    """The five seed reports as their upstream threads show them (tests/explain/seed_threads,
    verbatim excerpts): a traceback cut above the message (LLMs-from-scratch #172), a message
    prefixed by the function that raised it (LyCORIS #146's title), prose naming the file,
    functions and variables (recognize-anything #155), frames printed as `file line function`
    (Lightning #19912), a cut traceback through the library (lightly #1630)."""
    project = path.stem.replace("__", "/")
    wanted = next(c for c in CASES if c.upstream.project == project)
    result = explain(path.read_text(encoding="utf-8"))
    assert result["cases"][0] == wanted.slug
    assert result["families"][0] == wanted.family


def _fingerprint_kb(tmp_path, why: str, program: str = "pass\n"):
    root = tmp_path / "checkout"
    (root / "cases").mkdir(parents=True)
    text = _case_file("demo-fp", "SD-9101", "F5", "T1", ["demo_extract.py"],
                      "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    (root / "cases" / "demo-fp.toml").write_text(text.replace('why = "w"', f"why = {why!r}".replace("'", '"')))
    (root / "snippets" / "demo-fp").mkdir(parents=True)
    (root / "snippets" / "demo-fp" / "broken.py").write_text(program)
    (root / "snippets" / "demo-fp" / "fixed.py").write_text("pass\n")
    return build(root)


def test_fingerprint_comes_from_the_case_files(tmp_path):
    """Names quoted in the page's prose and defined by its program, none typed into explain."""
    kb = _fingerprint_kb(tmp_path, "`merge_lowrank_diff` subtracts `root_weight_cache` ...",
                         "class LowRankMerger:\n    def fold_kernels(self):\n        self.kernel_bank = 1\n")
    prints = kb["cases"][0]["fingerprint"]
    assert {"merge_lowrank_diff", "root_weight_cache", "lowrankmerger", "fold_kernels", "kernel_bank"} <= set(prints)
    assert "register_buffer" not in prints and "demo_extract" in prints
    prose = "In fold_kernels the kernel_bank stays on the CPU: mismatch between cuda and cpu"
    result = explain_text(prose, kb)
    assert result["cases"] == ["demo-fp"]
    hit = next(e for e in result["evidence"] if e["rule"] == "case-fingerprint")
    assert (hit["match"], hit["line"], hit["families"]) == ("fold_kernels, kernel_bank", 1, {"F5": 4.0})


def test_a_function_prefixing_the_message_counts_alone(tmp_path):
    kb = _fingerprint_kb(tmp_path, "`merge_lowrank_diff` subtracts ...")
    msg = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    prefixed = explain_text(f"merge_lowrank_diff: {msg}", kb)
    assert prefixed["case_ranking"][0]["why"][0] == "the paste names its code: merge_lowrank_diff"
    # the same name elsewhere in the paste is one name only: a coincidence, not the case
    elsewhere = explain_text(f"I call merge_lowrank_diff later.\nRuntimeError: {msg}", kb)
    assert "case-fingerprint" not in {e["rule"] for e in elsewhere["evidence"]}


def test_names_every_project_uses_are_no_fingerprint(tmp_path):
    kb = _fingerprint_kb(tmp_path, "`register_buffer`, `input_ids`, `state_dict`, `index_select`")
    assert kb["cases"][0]["fingerprint"] == {"demo_extract": 1.0}
    text = "input_ids and state_dict: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    assert "case-fingerprint" not in {e["rule"] for e in explain_text(text, kb)["evidence"]}


def _generic_cases():
    return [(c, f) for c in _KB["cases"] for f in c["library_frames"] if _generic(f)]


def _signature_cases():
    return [c for c in _KB["cases"] if any(s["op"] and s["argument"] for s in c["signatures"])]


def test_a_common_script_name_never_outranks_a_matching_signature(explain):
    """A frame in `train.py` (a case's bare file name) against a case whose own message has the
    paste's template, op and argument: the message decides (a new user's report: the T2 addmm
    case lost to a case whose script was also called train.py)."""
    assert _generic_cases() and _signature_cases()
    losses = []
    for generic, fragment in _generic_cases():
        for case in _signature_cases():
            if case["slug"] == generic["slug"]:
                continue
            message = next(c for c in CASES if c.slug == case["slug"]).error.messages[0].text
            text = (f'Traceback (most recent call last):\n  File "/home/u/work/{fragment}", line 30, in <module>\n'
                    f"    main()\nRuntimeError: {message}\n")
            cases = explain(text)["cases"]
            if case["slug"] not in cases or (generic["slug"] in cases and cases.index(generic["slug"]) < cases.index(case["slug"])):
                losses.append((fragment, case["slug"]))
    assert losses == []
