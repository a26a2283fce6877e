"""The CI gate's own judgements: the disk a run needs against the disk free (refenv.run.disk), and the job's
summary and outputs (refenv.report.gate)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from refenv.model.rundoc import from_data
from refenv.report import diff, gate
from refenv.run import disk
from tests.unit.run_samples import raw, sample
from tests.unit.test_report_diff import CU130, driver_too_old_on

GB = disk.GB
CU130_WHEELS = {"torch-2.14.1.whl": 900_000_000, "nvidia-cublas.whl": 800_000_000, "nvidia-cudnn.whl": 1_350_000_000}


def test_a_recipe_image_is_predicted_from_its_lock_within_the_sizes_measured_here() -> None:
    need = disk.recipe_need("cu130", CU130_WHEELS)
    assert 5.95 * GB <= need.image_bytes <= 7.0 * GB  # the image is 5.95 GB here for 3.05 GB of wheels
    cpu = disk.recipe_need("cpu", {"torch-cpu.whl": 219_000_000})
    assert 1.0 * GB <= cpu.image_bytes <= 1.3 * GB    # 1.11 GB for 0.22 GB of wheels


def test_a_run_fits_at_once_one_at_a_time_or_not_at_all_and_says_what_to_do() -> None:
    needs = [disk.recipe_need("cu130", CU130_WHEELS), disk.team_need("team", 6 * GB),
             disk.team_need("serve", None, from_bytes=5 * GB)]
    assert disk.plan(needs, 40 * GB, True, True).verdict == disk.FITS
    one = disk.plan(needs, 14 * GB, True, True)       # GitHub's standard runner
    assert one.verdict == disk.ONE_AT_A_TIME and one.one_bytes < 14 * GB < one.all_bytes
    assert any("refenv matrix --low-disk" in line for line in disk.lines(one))
    none = disk.plan([disk.team_need("huge", None)], 5 * GB, True, False)
    assert none.verdict == disk.TOO_SMALL and none.needs[0].assumed
    text = "\n".join(disk.lines(none))
    assert "cannot hold the run" in text and "refenv matrix --env NAME" in text and "larger runner" in text
    assert "not in the engine: 8 GB assumed" in text


def test_shared_wheels_count_once() -> None:
    a = disk.recipe_need("a", {"torch.whl": GB})
    b = disk.recipe_need("b", {"torch.whl": GB})
    assert disk.plan([a, b], 100 * GB, False, True).shared_bytes == GB + disk.BASE_IMAGE


def test_the_summary_opens_with_the_outcome_and_the_diff_then_readiness() -> None:
    doc = sample("passing")
    plain = gate.step_summary(doc, None)
    assert plain.startswith("# refenv matrix: PASSED") and "## Upgrade readiness" in plain
    assert "## The stack beside torch" in plain or "stack" not in plain.lower()
    worse = from_data(driver_too_old_on(raw("passing"), CU130, "r580"), "new")
    d = diff.diff(doc, worse)
    text = gate.step_summary(worse, d)
    assert text.startswith("# refenv matrix: REGRESSED")
    assert text.index("## Against the baseline run") < text.index("## Upgrade readiness")
    out = gate.outputs(worse, Path("/r/run"), d)
    assert out["status"] == "regressed" and out["hosts-lost"] == f"{CU130}/r580" and out["run"] == "/r/run"
    assert f"{CU130}: " in out["gpu-hosts"] and "torch-2.13.0-cpu: none" in out["gpu-hosts"]
    assert gate.output_lines({"a": "x\ny", "b": ""}) == "a=x y\nb=\n"


def test_the_summary_task_writes_the_step_summary_and_outputs(tmp_path: Path) -> None:
    import json

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cells.json").write_text(json.dumps(raw("passing")))
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "out")}
    done = subprocess.run([str(Path(sys.executable).parent / "refenv"), "summary", "--run", "run"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "summary.md").read_text().startswith("# refenv matrix: PASSED")
    outputs = dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())
    assert outputs["status"] == "passed" and outputs["run"] == str(tmp_path / "run")
    missing = subprocess.run([str(Path(sys.executable).parent / "refenv"), "summary", "--run", "run", "--baseline", "nope"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "the baseline nope is not there" in missing.stderr
