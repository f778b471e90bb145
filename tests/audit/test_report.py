"""Report: text table, notebook HTML, dict, truthiness, links; assert_on_device; light import."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from samedevice import assert_on_device, audit
from samedevice.auditing import family_url


def misplaced_model(acc: torch.device) -> nn.Module:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).to(acc)
    model.out_head = nn.Linear(4, 2)
    return model


def test_text_table(acc, acc_label):
    model = misplaced_model(acc)
    report = audit(model)
    assert str(report).splitlines() == [
        f"samedevice.audit: 2 of 4 tensors are not on {acc_label} (where most parameters are).",
        "",
        "  path                   device  shape   dtype    family",
        "  model.out_head.weight  cpu     (2, 4)  float32  F1",
        "  model.out_head.bias    cpu     (2,)    float32  F1",
        "",
        "F1 Moved, then modified: https://samedevice.github.io/samedevice/families/f1/",
    ]
    assert repr(report) == str(report)  # a notebook's text output shows the table
    assert bool(report) and len(report) == 2


def test_text_fits_in_100_columns_with_many_findings(acc):
    model = nn.Linear(4, 4).to(acc)
    model.cache = {f"slot_{i:02d}": torch.zeros(16, 16, dtype=torch.float16) for i in range(40)}
    text = str(audit(model))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "  ... and 10 more (report.findings has all)" in text
    assert len(audit(model).findings) == 40


def test_nothing_misplaced_says_so(acc, acc_label):
    layer = nn.Linear(4, 4).to(acc)
    report = audit(layer)
    assert not report
    assert str(report) == (f"samedevice.audit: all 2 tensors in layer are on {acc_label} "
                           "(where most parameters are). Nothing misplaced.")


def test_non_reference_arguments_are_numbered(acc):
    report = audit(nn.Linear(4, 4).to(acc), torch.ones(2))
    assert report.roots == ["arg0", "arg1"]
    assert report.findings[0].path == "arg1"


def test_to_dict(acc, acc_label):
    model = misplaced_model(acc)
    d = audit(model).to_dict()
    assert d["findings"][0] == {"path": "model.out_head.weight", "device": "cpu", "shape": [2, 4],
                                "dtype": "float32", "family": "F1", "expected": acc_label}
    assert d["skipped"] == []
    assert d["expected"] == acc_label
    assert d["tensors"] == 4


def test_html_escapes_everything(acc):
    model = nn.Linear(4, 4).to(acc)
    batch = {"<script>alert(1)</script>": torch.ones(2)}
    page = audit(model, batch)._repr_html_()
    assert "<script>" not in page
    assert "batch[&#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;]" in page
    assert '<td><a href="https://samedevice.github.io/samedevice/families/f3/">F3 Model and data apart</a></td>' in page


def test_family_links_follow_samedevice_docs_url(acc, monkeypatch):
    monkeypatch.setenv("SAMEDEVICE_DOCS_URL", "https://example.org/samedevice")
    assert family_url("F2") == "https://example.org/samedevice/families/f2/"
    model = misplaced_model(acc)
    assert "F1 Moved, then modified: https://example.org/samedevice/families/f1/" in str(audit(model))


def test_assert_on_device_raises_with_the_table(acc):
    model = misplaced_model(acc)
    with pytest.raises(AssertionError) as info:
        assert_on_device(model, device=acc)
    assert "  model.out_head.weight  cpu     (2, 4)  float32  F1" in str(info.value)
    assert not assert_on_device(nn.Linear(2, 2).to(acc), device=acc)


def test_importing_samedevice_does_not_import_torch():
    code = "import sys, samedevice; assert 'torch' not in sys.modules; print(samedevice.__all__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "audit" in out.stdout


def test_audit_in_a_fresh_process_never_initialises_cuda():
    code = (
        "import torch, samedevice\n"
        "from torch import nn\n"
        "m = nn.Linear(2, 2)\n"
        "r = samedevice.audit(m, device='cuda')\n"
        "with samedevice.locate(m):\n"
        "    m(torch.ones(1, 2))\n"
        "assert len(r.findings) == 2, r\n"
        "print(torch.cuda.is_initialized())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
