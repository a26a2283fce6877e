"""Readiness first in every report, and what moving between two environments changes (refenv.report.ready)."""

from __future__ import annotations

from pathlib import Path

import pytest
from invoke.context import Context
from invoke.exceptions import Exit
from rich.console import Console

from refenv import tasks
from refenv.report import console_summary, console_table, ready, render_html, render_markdown
from tests.unit.run_samples import SAMPLES, sample

TOO_OLD = "r535: driver too old for CUDA 13.0; install R580 (>= 580.65.06) or use the cu129 build (torch 2.14.1+cu129)"


def test_each_environment_says_where_torch_gets_a_gpu_and_the_smallest_fix() -> None:
    by_env = {s.environment: s for s in ready.sections(sample("passing"))}
    cu130 = by_env["torch-2.14.1-cu130"]
    assert cu130.ready and cu130.gpu_on == "r580 (simulated), local (real GPU)"
    assert TOO_OLD in cu130.no_gpu
    assert cu130.agreed and cu130.agreement == "all 10 cells agreed with the predictions"
    cpu = by_env["torch-2.13.0-cpu"]
    assert not cpu.ready and cpu.gpu_on == "no host"
    assert "r580, local: a CPU-only build; use a CUDA build (torch-2.14.1-cu130, ready there)" in cpu.no_gpu


def test_disagreements_and_unanswered_hosts_are_told() -> None:
    by_env = {s.environment: s for s in ready.sections(sample("failures"))}
    cu130 = by_env["torch-2.14.1-cu130"]
    assert not cu130.agreed and cu130.disagreed == ("torch-2.14.1-cu130/r570/gpu",)
    assert cu130.agreement == "predictions: 3 agreed, 1 disagreed, 2 no answer, 2 not run"
    broken = by_env["torch-2.9.0-cu126"]
    assert len(broken.untested) == 1 and broken.untested[0].startswith("none, r570, r580, local: BUILD_FAILED")


def test_cells_not_run_do_not_count_against_the_predictions() -> None:
    from dataclasses import replace

    doc = sample("passing")
    skipped = replace(doc, cells=tuple(replace(c, status="NOT_RUN", observed=None) if c.host == "local" else c
                                       for c in doc.cells))
    cu130 = {s.environment: s for s in ready.sections(skipped)}["torch-2.14.1-cu130"]
    assert cu130.agreed and "not run" in cu130.agreement and "agreed" in cu130.agreement


def test_readiness_comes_first_in_markdown_html_and_console() -> None:
    doc = sample("passing")
    markdown = render_markdown(doc)
    assert markdown.index("## Upgrade readiness") < markdown.index("## Scenario")
    assert "- torch gets a GPU on: r580 (simulated), local (real GPU)" in markdown
    html = render_html(doc)
    assert html.index('id="readiness"') < html.index('class="scenario"')
    assert TOO_OLD.replace(">", "&gt;") in html
    summary = console_summary(doc, {"markdown": Path("report.md")})
    assert summary.index("upgrade readiness:") < summary.index("reports:")
    assert "torch-2.14.1-cu130 (torch 2.14.1, CUDA 13.0): GPU on r580 (simulated), local (real GPU)" in summary
    console = Console(record=True, width=400)
    console.print(console_table(doc))
    text = console.export_text()
    assert text.index("upgrade readiness") < text.index("scenario gpu") and TOO_OLD in text


def test_comparing_two_environments_names_what_changes_per_host() -> None:
    changes = {c.host: c for c in ready.compare(sample("passing"), "torch-2.10.0-cu128", "torch-2.14.1-cu130")}
    assert (changes["r535"].before, changes["r535"].after) == ("GPU (simulated)", "no GPU: DRIVER_TOO_OLD")
    assert changes["r535"].changed and changes["r535"].fix.startswith("install R580 (>= 580.65.06)")
    assert not changes["r580"].changed and not changes["none"].changed
    lines = ready.compare_lines(sample("passing"), "torch-2.10.0-cu128", "torch-2.14.1-cu130")
    assert lines[0] == "moving from torch-2.10.0-cu128 to torch-2.14.1-cu130:"
    assert any(line.split()[:1] == ["r570"] and "[changes]" in line for line in lines)


def test_invoke_compare_reads_a_run_and_refuses_one_without_both(capsys: pytest.CaptureFixture[str]) -> None:
    run = str(SAMPLES / "passing.json")
    tasks.compare(Context(), "torch-2.10.0-cu128", "torch-2.14.1-cu130", run=run)
    assert "r535   GPU (simulated) -> no GPU: DRIVER_TOO_OLD  [changes]" in capsys.readouterr().out
    with pytest.raises(Exit) as info:
        tasks.compare(Context(), "torch-2.10.0-cu128", "torch-9.9.9-cu999", run=run)
    assert "did not run torch-9.9.9-cu999" in str(info.value.message)
    with pytest.raises(Exit):
        tasks.compare(Context(), "a", "b", run=str(Path("/nowhere")))
