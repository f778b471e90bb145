"""``samedevice explain`` as a user runs it: a fresh interpreter, files and stdin, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SEED, run_cli
from samedevice.docs_url import DEFAULT_DOCS_URL

LLMS = (SEED / "rasbt__LLMs-from-scratch.txt").read_bytes()


def _four_kb() -> bytes:
    """A realistic 4 KB paste: training log lines, then a traceback ending in the error."""
    log = b"".join(b"epoch 1 step %d loss 0.%04d lr 5e-05\n" % (i, i * 37 % 10000) for i in range(200))
    body = LLMS
    return log[: 4096 - len(body)] + body


def test_text_report(tmp_path):
    f = tmp_path / "tb.txt"
    f.write_bytes(LLMS)
    r = run_cli(str(f))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    flat = " ".join(out.split())  # the report wraps long lines
    assert out.startswith("T1: Expected all tensors to be on the same device")
    assert "op addmm (wrapper_CUDA_addmm) · argument mat1 on cuda:0 · the other tensors on cpu" in flat
    assert "printed by PyTorch 2.0.0 - 2.7.x" in flat
    causes = out.split("Likely causes, best first\n")[1]
    assert causes.splitlines()[0].startswith("  1. F1 Moved, then modified")
    assert f"  {DEFAULT_DOCS_URL}cases/llms-from-scratch-out-head/  SD-0002" in out.split("Pages to read\n")[1]
    assert "samedevice.audit(model)" in out.split("Next step\n")[1]


def test_json_shape(tmp_path):
    f = tmp_path / "tb.txt"
    f.write_bytes(LLMS)
    r = run_cli("--json", str(f))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["template"] == "T1"
    assert data["families"][0] == "F1"
    assert data["cases"][0] == "llms-from-scratch-out-head"
    assert (data["op"], data["argument"], data["devices"]) == ("addmm", "mat1", ["cpu", "cuda:0"])
    scores = [r["score"] for r in data["ranking"]]
    assert scores == sorted(scores, reverse=True) and [r["family"] for r in data["ranking"]] == data["families"]
    weights = [max(e["families"].values()) for e in data["evidence"]]
    assert weights == sorted(weights, reverse=True)
    # the catalogue order is a tie-break, never shown as evidence
    assert "template-prior" not in {e["rule"] for e in data["evidence"]}
    assert data["thin"] is False and data["next"] == data["next_step"]
    for e in data["evidence"]:
        assert set(e) >= {"rule", "where", "families", "match", "line", "why", "family"}
        # each piece of evidence is listed under exactly the one family it supports
        assert [r["family"] for r in data["ranking"] if e["rule"] in r["evidence"]] == [e["family"]]
    frame = next(e for e in data["evidence"] if e["rule"] == "case-library-frame")
    assert (frame["case"], frame["match"], frame["line"]) == ("llms-from-scratch-out-head", "gpt_class_finetune.py", 3)
    kinds = [p["kind"] for p in data["pages"]]
    assert kinds[0] == "case" and "family" in kinds
    assert data["pages"][0]["href"] == DEFAULT_DOCS_URL + "cases/llms-from-scratch-out-head/"
    assert data["errors"][0]["line"] == 17


def test_site_url_makes_links_absolute(tmp_path):
    f = tmp_path / "tb.txt"
    f.write_bytes(LLMS)
    data = json.loads(run_cli("--json", "--site-url", "https://example.org/sd/", str(f)).stdout)
    assert data["pages"][0]["href"] == "https://example.org/sd/cases/llms-from-scratch-out-head/"


@pytest.mark.parametrize("args", [(), ("-",)], ids=["no file", "dash"])
def test_reads_stdin(args):
    r = run_cli("--json", *args, stdin=b"RuntimeError: No backend type associated with device type cpu\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["template"] == "T7"


def test_several_errors_listed():
    text = (
        b"RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same\n"
        b"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!\n"
    )
    data = json.loads(run_cli("--json", stdin=text).stdout)
    assert [(e["template"], e["line"]) for e in data["errors"]] == [("T3", 1), ("T12", 2)]
    out = run_cli(stdin=text).stdout.decode()
    assert "Other device errors in this paste (1)" in out and "line 2: T12" in out


def test_no_device_error_exits_1():
    r = run_cli(stdin=b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert r.returncode == 1
    assert r.stdout.decode().startswith("No PyTorch device error recognised")
    assert json.loads(run_cli("--json", stdin=b"hello\n").stdout)["template"] is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the input is empty"),
        (b" \n\t\n", "the input is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "the input looks binary (it contains NUL bytes)"),
        (bytes(range(1, 32)) * 20, "the input looks binary (too many control characters)"),
        (b"RuntimeError: caf\xe9 Expected all tensors", "the input is not UTF-8 text (byte 0xe9 at offset 17)"),
        (b"\xff\xfeR\x00\x00\xd8", "the input is not UTF-16-LE text"),
    ],
    ids=["empty", "blank", "binary", "control characters", "latin-1", "broken utf-16"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, data, message):
    f = tmp_path / "paste.txt"
    f.write_bytes(data)
    for r in (run_cli(str(f)), run_cli(stdin=data)):
        assert r.returncode == 2
        assert r.stdout == b""
        err = r.stderr.decode()
        assert err.startswith(f"samedevice explain: {message}")
        assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_and_directory(tmp_path):
    r = run_cli(str(tmp_path / "nope.txt"))
    assert (r.returncode, r.stderr.decode().startswith("samedevice explain: cannot read")) == (2, True)
    r = run_cli(str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_never_imports_torch(tmp_path):
    f = tmp_path / "tb.txt"
    f.write_bytes(LLMS)
    code = (
        "import sys\n"
        "from samedevice.cli import main\n"
        f"rc = main(['explain', '--json', {str(f)!r}])\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0
    assert r.stderr.decode().strip().splitlines()[-1] == "NO-TORCH"


def test_a_4kb_paste_of_log_then_traceback_names_the_case(tmp_path):
    # How fast this is goes in benchmarks/explain_devset.py --timing (not a timed test); the
    # import guard above is what keeps the cold run cheap.
    f = tmp_path / "tb.txt"
    f.write_bytes(_four_kb())
    assert f.stat().st_size == 4096
    r = run_cli("--json", str(f))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cases"][0] == "llms-from-scratch-out-head"


def test_ten_megabyte_paste(tmp_path):
    f = tmp_path / "big.log"
    line = b"[rank0]:[2024-05-01 12:00:00,000] INFO train.py:88 step 123 loss=0.1234 lr=0.0001 throughput=512 samples/s\n"
    f.write_bytes(line * ((10_000_000 - len(LLMS)) // len(line)) + LLMS)
    assert f.stat().st_size > 9_900_000
    r = run_cli("--json", str(f))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cases"][0] == "llms-from-scratch-out-head"


def test_thin_paste_says_so_and_gives_the_deciding_step():
    """A bare T1 message: no evidence, no pretended finding, and the step that tells families apart."""
    text = b"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    data = json.loads(run_cli("--json", stdin=text).stdout)
    assert data["evidence"] == [] and data["thin"] is True
    assert "samedevice.locate(" in data["next"] and "inside forward" in data["next"]
    assert all(r["evidence"] == [] for r in data["ranking"])
    out = run_cli(stdin=text).stdout.decode()
    assert "the message alone cannot tell these apart" in out
    assert "samedevice.locate(" in out.split("Next step\n")[1]
    assert "Likely causes" not in out


def test_traceback_without_its_error_line_asks_for_it():
    text = (
        b"Traceback (most recent call last):\n"
        b'  File "/home/u/proj/train.py", line 12, in <module>\n'
        b"    out = model(torch.zeros(3))\n"
    )
    r = run_cli("--json", stdin=text)
    data = json.loads(r.stdout)
    assert data["template"] is None and data["traceback"]["frames"] == 1
    assert "last line" in data["next"]
    assert "last line" in run_cli(stdin=text).stdout.decode()


def test_t10_variants_are_read_from_the_message():
    no_gpu = b"RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.\n"
    other_machine = b"RuntimeError: Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1.\n"
    assert json.loads(run_cli("--json", stdin=no_gpu).stdout)["families"][0] == "F10"
    assert json.loads(run_cli("--json", stdin=other_machine).stdout)["families"][0] == "F7"


T3_TEXT = "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same\r\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-32-be", "utf-8-sig"])
def test_text_with_a_byte_order_mark_is_read(tmp_path, encoding):
    """PowerShell 5.1 writes `2> err.txt` as UTF-16 LE with a BOM; some editors write UTF-32."""
    data = T3_TEXT.encode(encoding)
    if encoding.endswith("-be"):
        data = ("\ufeff" + T3_TEXT).encode(encoding)
    f = tmp_path / "err.txt"
    f.write_bytes(data)
    for r in (run_cli("--json", str(f)), run_cli("--json", stdin=data)):
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["template"] == "T3"


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_any_stdout_encoding(encoding, as_json):
    """Windows redirection (cp1252) or a C locale (ASCII): no UnicodeEncodeError, same answer."""
    paste = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! \u2192 \u4f60\u597d \U0001F525\n"
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONUTF8": "0"}
    r = run_cli(*(["--json"] if as_json else []), stdin=paste.encode("utf-8"), env=env)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b"Traceback" not in r.stderr
    out = r.stdout.decode(encoding)
    if as_json:
        assert json.loads(out)["template"] == "T1"
    else:
        assert out.startswith("T1: ")
