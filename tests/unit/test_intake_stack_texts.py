"""The report reader recognises the extensions' failure texts (catalogue layers `extension` and `pip`): a note names
the row's meaning and `python -m harness stack`, and a report holding only such a text is answered, not refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.diagnosis.report import diagnose_report

TEXTS = [
    "RuntimeError: operator torchvision::nms does not exist",
    "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
    "undefined symbol: _ZN3c104cuda9SetDeviceEi",
    "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
    "RuntimeError: Configured CUDA binary not found at /opt/venv/lib/python3.12/site-packages/bitsandbytes/"
    "libbitsandbytes_cuda130.so",
    "torch 2.10.0 requires triton==3.6.0, but you have triton 3.8.0 which is incompatible.",
]


@pytest.mark.parametrize("text", TEXTS)
def test_an_extension_failure_is_read_and_named(text: str, tmp_path: Path) -> None:
    report = tmp_path / "issue.txt"
    report.write_text(f"Traceback (most recent call last):\n  File \"train.py\", line 3\n{text}\n")
    doc = diagnose_report(str(report))
    assert doc.input is not None and doc.diagnosis is not None
    assert any("python -m harness stack" in n for n in doc.input.notes), doc.input.notes
    assert doc.diagnosis.verdict == "CANNOT_TELL"  # torch's own state is not in the text
