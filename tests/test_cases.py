"""The case registry: every case's files are complete and consistent with each other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from samedevice.cases import (
    FAMILY_IDS,
    CaseError,
    case_message_text,
    families,
    load_cases,
    parse_case,
    version_in,
)
from samedevice.testing import signature

CASES = load_cases()


def test_there_are_cases_with_unique_ids():
    assert len(CASES) >= 5
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_current_message_matches_the_documented_signature(case):
    """The message for PyTorch >= 2.8 says what the metadata says: template, op, argument."""
    message = case.error.message_for("2.13.0")
    assert message is not None, "every case records the current message"
    sig = signature(message.text)
    assert sig is not None, message.text
    assert sig.template == case.error.template
    if case.error.argument:
        assert sig.argument == case.error.argument
    if sig.op:
        assert sig.op.lstrip("_") == case.error.op.lstrip("_")
    if case.error.devices and sig.devices:
        assert tuple(sig.devices) == case.error.devices


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_each_case_links_upstream_evidence_and_has_prose(case):
    assert case.upstream.issue or case.upstream.fix or case.upstream.evidence
    for link in (*case.upstream.issue, *case.upstream.fix, *case.upstream.introduced, *case.upstream.evidence):
        assert link.url.startswith("https://")
    assert case.why and case.fix and case.find
    assert case.family in FAMILY_IDS and case.family in families()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_snippets_are_standalone_programs_that_say_cuda(case):
    for path in (case.broken_path, case.fixed_path):
        text = path.read_text()
        assert "samedevice" not in text, f"{path} must run without samedevice"
        assert text.startswith('"""'), f"{path} opens with a docstring naming its upstream source"
        if case.verify != "cpu":
            # "cuda", torch.device("cuda") or .cuda(), as docs/add-a-case.md allows
            assert re.search(r"[\"']cuda|\.cuda\(", text), f"{path} should say 'cuda' like the original code"


def test_version_ranges():
    assert version_in("2.13.0+cpu", ">=2.8")
    assert not version_in("2.7.1", ">=2.8")
    assert version_in("2.7.1", ">=2.0,<2.8")
    assert not version_in("1.13.1", ">=2.0,<2.8")


def test_a_broken_case_file_gets_a_one_line_error(tmp_path: Path):
    bad = tmp_path / "cases" / "bad-case.toml"
    bad.parent.mkdir()
    bad.write_text('id = "SD-9999"\ntitle = "x"\nfamily = "F42"\n')
    with pytest.raises(CaseError, match=r"bad-case.toml: family: 'F42' is not valid \(must be one of F1, "):
        parse_case(bad, tmp_path)
    bad.write_text("id = [broken")
    with pytest.raises(CaseError, match=r"bad-case.toml: invalid TOML"):
        parse_case(bad, tmp_path)


# torch 2.13's torch.compile graph break for a CPU input to a compiled CUDA model: the part a
# case records, then Dynamo's trailer naming where the code ran (a notebook cell's file)
COMPILE_MESSAGE = (
    "Tensor device mismatch\n"
    "  Explanation: Expected all tensors to be on the same device, but found at least two devices, "
    "cpu and cuda:0!\n"
    "  Hint: Move inputs, parameters, and buffers to the same device.\n\n"
    "  Developer debug context: call_function <built-in function linear>\n\n"
    " For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb5173.html")
USER_CODE = (
    "\n\nfrom user code:\n"
    '   File "/tmp/ipykernel_4242/1337.py", line 10, in forward\n'
    "    return self.fc(x)\n"
    '  File "/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 134, '
    "in forward\n    return F.linear(input, self.weight, self.bias)\n")
VERBOSE_HINT = (
    "\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if "
    "you're reporting a bug to PyTorch). For even more developer context, set "
    'TORCH_LOGS="+dynamo"\n')


@pytest.mark.parametrize("trailer", [USER_CODE + VERBOSE_HINT,  # as printed by default
                                     USER_CODE,  # TORCHDYNAMO_VERBOSE=1: no hint
                                     "\n" + VERBOSE_HINT,  # no user frames: the hint alone
                                     "", "\n"])
def test_a_case_message_is_the_text_before_dynamos_trailer(trailer):
    assert case_message_text(COMPILE_MESSAGE + trailer) == COMPILE_MESSAGE


def test_a_case_message_keeps_everything_else_word_for_word():
    assert case_message_text("  Expected all tensors ... cuda:0 and cpu!\n") == "Expected all tensors ... cuda:0 and cpu!"
    other = COMPILE_MESSAGE.replace("cpu and cuda:0", "cuda:0 and cpu")
    assert case_message_text(other + USER_CODE + VERBOSE_HINT) != COMPILE_MESSAGE
    # "from user code" inside the text (not Dynamo's block) is text
    odd = COMPILE_MESSAGE + "\nfrom user code: x"
    assert case_message_text(odd) == odd


def _compile_case():
    import dataclasses

    from samedevice.cases import Message

    case = CASES[0]
    error = dataclasses.replace(case.error, exception="TorchRuntimeError", template="T13", op="",
                                argument="", devices=("cpu", "cuda:0"),
                                messages=(Message(">=2.8", COMPILE_MESSAGE),))
    return dataclasses.replace(case, error=error)


def test_the_pages_word_for_word_check_ignores_dynamos_trailer(monkeypatch):
    import samedevice.cases
    from samedevice.testing import check_case_error

    case = _compile_case()
    monkeypatch.setattr(samedevice.cases, "get_case", lambda slug, root=None: case)
    TorchRuntimeError = type("TorchRuntimeError", (RuntimeError,), {})
    sig = check_case_error(case.slug, TorchRuntimeError(COMPILE_MESSAGE + USER_CODE + VERBOSE_HINT))
    assert (sig.template, sig.devices) == ("T13", ("cpu", "cuda:0"))
    other = COMPILE_MESSAGE.replace("Move inputs", "Move outputs")
    with pytest.raises(AssertionError, match="message differs"):
        check_case_error(case.slug, TorchRuntimeError(other + USER_CODE + VERBOSE_HINT))
