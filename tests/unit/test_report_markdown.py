"""report.md over the sample documents: header, grids, every cell that did not pass, builds, probes, memory."""

from __future__ import annotations

from typing import Any

from refenv.model.rundoc import RunDocument, from_data
from refenv.report import mdtext
from refenv.report.markdown import render_markdown
from tests.unit.run_samples import raw, sample


def cell(doc: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in doc["cells"] if c["id"] == cid)


def test_header_and_counts() -> None:
    text = render_markdown(sample("failures"))
    assert text.startswith("# refenv matrix report: run 20261129-171512-9f8e7d\n")
    assert "**FAILED**: 24 cells: 7 PASS, 2 FAIL, 1 ERROR, 8 BUILD_FAILED, 1 TIMEOUT, 1 OOM_KILLED, 4 NOT_RUN" in text
    assert "| docker | 28.2.2, NVIDIA runtime: no |" in text
    assert "| wall time | 20 min 47 s |" in text


def test_one_grid_per_scenario_with_labels() -> None:
    text = render_markdown(sample("failures"))
    assert "## Scenario `gpu`: --gpus all, nothing hidden" in text
    assert "## Scenario `hidden`" in text
    row = next(line for line in text.splitlines() if line.startswith("| torch-2.14.1-cu130 | PASS NO_DRIVER |"))
    assert "FAIL expected DRIVER_TOO_OLD / observed DRIVER_BROKEN (simulated)" in row
    assert "OOM_KILLED" in row and "NOT_RUN" in row


def test_a_fail_cell_has_its_reason_torch_message_findings_and_fix() -> None:
    failed = cell(raw("failures"), "torch-2.14.1-cu130/r570/gpu")
    text = render_markdown(sample("failures"))
    section = text.split("### FAIL `torch-2.14.1-cu130/r570/gpu`")[1].split("\n### ")[0]
    assert failed["reason"] in section
    assert f"- torch says: `{failed['observed']['torch_message']}`" in section
    assert "[error] DRIVER_BROKEN: cuInit fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)" in section
    assert "  - `cat /proc/driver/nvidia/version && nvidia-smi`" in section


def test_a_fail_without_remediation_says_so() -> None:
    text = render_markdown(sample("failures"))
    section = text.split("### FAIL `torch-2.10.0-cu128/r580/hidden`")[1].split("\n### ")[0]
    assert "- fix: the harness recorded no remediation" in section


def test_build_failure_told_once_with_its_log_tail() -> None:
    text = render_markdown(sample("failures"))
    assert "| BUILD_FAILED | 8 cells: `torch-2.9.0-cu126/none/gpu`" in text
    assert "### BUILD_FAILED" not in text
    builds = text.split("## Build failures")[1]
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in builds.split("\n## ")[0]


def test_error_and_timeout_show_their_log_tails() -> None:
    text = render_markdown(sample("failures"))
    error = text.split("### ERROR `torch-2.14.1-cu130/none/hidden`")[1].split("\n### ")[0]
    assert "RuntimeError: child process for torch facts exited with signal 11 (SIGSEGV)" in error
    assert "```text" in error


def test_probe_and_memory_summaries() -> None:
    text = render_markdown(sample("passing"))
    probes = text.split("## Probes")[1].split("\n## ")[0]
    h200 = next(line for line in probes.splitlines() if "`torch-2.14.1-cu130/local/gpu`" in line)
    assert "| NVIDIA H200 | PASS |" in h200
    assert "785.8 TFLOP/s 79%" in h200  # bf16 median and percent of the 989.4 spec
    assert "GPU probes waived: host r580 is a simulated driver" in probes
    memory = render_markdown(sample("failures")).split("## Memory")[1].split("\n## ")[0]
    row = next(line for line in memory.splitlines() if "`torch-2.10.0-cu128/r580/gpu`" in line)
    assert "| cpu | FAIL | 6/8 | small-llama/mixed-adamw/eager activations 418 KiB → 547 KiB (+31.0%); " in row
    assert "medium-gpt/lora/eager: RuntimeError: saved tensor hooks" in row
    passing = render_markdown(sample("passing")).split("## Memory")[1]
    assert "| NVIDIA H200 (cuda) | PASS | 8/8 | none: all 40 ledgers as predicted |" in passing


def test_text_from_a_container_cannot_inject_markup() -> None:
    doc = (raw("failures"))
    failed = cell(doc, "torch-2.14.1-cu130/r570/gpu")
    failed["reason"] = "bad <img src=x onerror=alert(1)> | pipe"
    failed["observed"]["torch_message"] = "<script>alert(`x`)</script>"
    text = render_markdown(from_data(doc))
    assert "<img" not in text.replace("\\<img", "")
    assert "bad \\<img src=x onerror=alert(1)\\> \\| pipe" in text
    assert "- torch says: ``<script>alert(`x`)</script>``" in text


def test_partial_document_renders_with_gaps_marked() -> None:
    text = render_markdown(sample("partial"))
    assert "**INTERRUPTED**" in text
    assert "This run was interrupted" in text
    hidden = text.split("## Scenario `hidden`")[1].split("\n## ")[0]
    assert "| torch-2.13.0-cpu | — | — | — |" in hidden


def test_nothing_at_all_still_renders() -> None:
    text = render_markdown(RunDocument())
    assert "**EMPTY**: 0 cells" in text
    assert "No cells." in text


def test_code_spans_and_fences_outlast_backticks_inside() -> None:
    assert mdtext.code("a `b` c") == "``a `b` c``"
    assert mdtext.fence("x\n```\ny").startswith("````text\n")
    assert mdtext.inline("a\x1b[0m") == "a\ufffd[0m"
