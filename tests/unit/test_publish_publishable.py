"""Which environments `invoke publish` takes: a full-coverage run of this very image that agreed everywhere,
with torch getting a GPU on at least one host (pure, over run documents read by `history`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from refenv.model.rundoc import from_data
from refenv.publish import history
from refenv.publish.publishable import judge

HASH = "ab" * 32
HOSTS = {"none": None, "r470": "470.256.02", "r580": "580.95.05", "real": None}
SCENARIOS = {"gpu": {"gpus": "all", "env": {}}, "no-gpu": {"gpus": "none", "env": {}},
             "cvd-empty": {"gpus": "all", "env": {"CUDA_VISIBLE_DEVICES": ""}}}
REQUIRED = frozenset((h, s) for h in HOSTS for s in SCENARIOS)

# What the default matrix observes for a CUDA 13.0 build: a GPU on r580 only.
GPU_VERDICT = {"none": "NO_DRIVER", "r470": "DRIVER_TOO_OLD", "r580": "OK"}


def cell(host: str, scenario: str, status: str = "PASS", observed: str | None = None, env: str = "env",
         reason: str = "as expected") -> dict[str, Any]:
    if observed is None and status != "NOT_RUN":
        observed = GPU_VERDICT[host] if scenario == "gpu" else "NOT_VISIBLE"
    return {"id": f"{env}/{host}/{scenario}", "environment": env, "host": host, "scenario": scenario,
            "status": status, "reason": reason, "expected": {"verdict": observed or "OK"},
            "observed": {"verdict": observed, "simulated": host != "none"} if observed else None}


def full_cells(env: str = "env") -> list[dict[str, Any]]:
    return [cell(h, s, env=env) if h != "real" else cell(h, s, "NOT_RUN", env=env, reason="no NVIDIA runtime")
            for h in HOSTS for s in SCENARIOS]


def record(run_id: str, cells: list[dict[str, Any]], content_hash: str = HASH, interrupted: bool = False,
           started: str | None = None, extra_envs: tuple[dict[str, Any], ...] = (),
           measurements: tuple[dict[str, Any], ...] = ()) -> history.Run:
    doc = {
        "schema": "refenv.cells", "version": 1,
        "run": {"id": run_id, "started": started or run_id, "interrupted": interrupted},
        "environments": [{"name": "env", "torch": "2.14.1", "cuda": "13.0", "content_hash": content_hash},
                         *extra_envs],
        "hosts": [{"name": h, "kind": "none" if d is None else "simulated", "driver": d, "gpus": []}
                  for h, d in HOSTS.items()],
        "scenarios": [{"name": n, **body} for n, body in SCENARIOS.items()],
        "cells": cells,
        "measurements": list(measurements),
    }
    return history.Run(Path(f"/r/{run_id}/cells.json"), from_data(doc))


def test_a_full_run_that_agreed_with_a_gpu_somewhere_is_known_good() -> None:
    j = judge([record("2026-11-02", full_cells())], "env", HASH, REQUIRED)
    assert j.ok and j.reasons == () and j.run_id == "2026-11-02" and j.runs_used == ("2026-11-02",)
    assert j.readiness is not None
    assert [h.label for h in j.readiness.ready] == ["r580 (simulated)"]
    assert [h.label for h in j.readiness.refused] == ["none: NO_DRIVER (needs >= 580.65.06)",
                                                      "r470: DRIVER_TOO_OLD (needs >= 580.65.06)"]
    assert j.readiness.untested == (("real", "NOT_RUN: no NVIDIA runtime"),)
    assert j.pull_cell == ("r580", "gpu")  # a cell where torch got the GPU, not any cell that passed


def test_a_real_gpu_is_the_pull_back_cell_when_torch_got_one() -> None:
    cells = [c if c["host"] != "real" else cell("real", c["scenario"], observed="OK" if c["scenario"] == "gpu"
                                                else "NOT_VISIBLE") for c in full_cells()]
    for c in cells:
        if c["host"] == "real" and c["observed"]:
            c["observed"]["simulated"] = False
    j = judge([record("run", cells)], "env", HASH, REQUIRED)
    assert j.ok and j.pull_cell == ("real", "gpu")


def test_a_single_cell_history_is_refused() -> None:
    j = judge([record("2026-11-03", [cell("r470", "no-gpu")])], "env", HASH, REQUIRED)
    assert not j.ok
    assert "no uninterrupted run of this image covers every host and scenario" in j.reasons[0]
    assert "ran 1 of its 12 cells (missing none/cvd-empty, none/gpu, none/no-gpu, r470/cvd-empty, r470/gpu, and 6 more)" \
        in j.reasons[0]


def test_slices_do_not_add_up_to_coverage() -> None:
    slices = [record(f"2026-11-0{i}", [c for c in full_cells() if c["host"] == h]) for i, h in enumerate(HOSTS, 1)]
    j = judge(slices[::-1], "env", HASH, REQUIRED)
    assert not j.ok and "covers every host and scenario" in j.reasons[0]


def test_a_newer_slice_does_not_replace_the_full_run_but_is_read() -> None:
    full = record("2026-11-01", full_cells())
    agreeing = record("2026-11-02", [cell("r470", "no-gpu")])
    j = judge([agreeing, full], "env", HASH, REQUIRED)
    assert j.ok and j.run_id == "2026-11-01" and j.runs_used == ("2026-11-01", "2026-11-02")
    disagreeing = record("2026-11-03", [cell("r580", "gpu", "FAIL", "DRIVER_BROKEN", reason="expected OK")])
    j = judge([disagreeing, agreeing, full], "env", HASH, REQUIRED)
    assert not j.ok and j.reasons == ("a newer run of this image disagrees (1 cell(s))",
                                      "run 2026-11-03: env/r580/gpu: FAIL (expected OK)")


def test_an_interrupted_run_is_no_coverage() -> None:
    j = judge([record("run", full_cells(), interrupted=True)], "env", HASH, REQUIRED)
    assert not j.ok and "the newest, run run, was interrupted" in j.reasons[0]


@pytest.mark.parametrize("status", ["FAIL", "ERROR", "BUILD_FAILED", "TIMEOUT", "OOM_KILLED"])
def test_any_bad_cell_in_the_full_run_refuses(status: str) -> None:
    cells = full_cells()
    cells[3] = cell("r470", "gpu", status, "OK", reason="what went wrong")
    j = judge([record("run-7", cells)], "env", HASH, REQUIRED)
    assert not j.ok
    assert j.reasons == ("1 of its 12 cells disagree or did not run as planned in run run-7",
                         f"env/r470/gpu: {status} (what went wrong)")


def test_a_failed_measurement_of_the_environment_refuses() -> None:
    # Measured once per environment, a failed memory prediction no longer fails a cell: it must still refuse,
    # as it did when every cell carried its own.
    failed = {"id": "env/cpu", "environment": "env", "status": "FAIL", "reason": "memory: 2 of 5 cases off"}
    other = {"id": "other/cpu", "environment": "other", "status": "ERROR", "reason": "not this one"}
    j = judge([record("run-8", full_cells(), measurements=(failed, other))], "env", HASH, REQUIRED)
    assert not j.ok
    assert j.reasons == ("1 of its 1 measurements went wrong in run run-8 (probes, memory)",
                         "env/cpu: FAIL (memory: 2 of 5 cases off)")
    assert judge([record("run-8", full_cells(), measurements=(other,))], "env", HASH, REQUIRED).ok


def test_an_environment_ready_nowhere_is_refused_with_that_reason() -> None:
    cells = [c if c["host"] != "r580" else cell("r580", c["scenario"], observed="CPU_WHEEL"
                                                if c["scenario"] == "gpu" else "NOT_VISIBLE") for c in full_cells()]
    j = judge([record("run-9", cells)], "env", HASH, REQUIRED)
    assert not j.ok and j.reasons[0] == "torch gets a GPU on no host in run run-9"
    assert "r470: DRIVER_TOO_OLD (needs >= 580.65.06)" in j.reasons
    assert "real: NOT_RUN: no NVIDIA runtime" in j.reasons


def test_the_run_of_another_image_does_not_count() -> None:
    j = judge([record("new", full_cells(), content_hash="ff" * 32)], "env", HASH, REQUIRED)
    assert not j.ok and j.reasons[0].startswith(f"the image's content hash {HASH[:16]} differs from the one the "
                                                f"newest run of env tested (ffffffffffffffff, run new)")
    j = judge([record("new", full_cells())], "other", HASH, REQUIRED)
    assert not j.ok and j.reasons[0].startswith("no matrix run tested other")


def test_cells_of_hosts_the_matrix_no_longer_defines_are_not_evidence() -> None:
    required = frozenset(p for p in REQUIRED if p[0] != "r580")
    j = judge([record("run", full_cells())], "env", HASH, required)
    assert not j.ok and j.reasons[0] == "torch gets a GPU on no host in run run"


def test_load_runs_newest_first_reads_a_link_once_and_skips_other_documents(tmp_path: Path) -> None:
    for name, started in (("20261101-a", "2026-11-01T00:00:00+00:00"), ("20261103-c", "2026-11-03T00:00:00+00:00"),
                          ("20261102-b", "2026-11-02T00:00:00+00:00")):
        (tmp_path / name).mkdir()
        doc = {"schema": "refenv.cells", "version": 1, "run": {"id": name, "started": started}, "environments": [],
               "cells": []}
        (tmp_path / name / "cells.json").write_text(json.dumps(doc))
    os.symlink("20261103-c", tmp_path / "latest")
    (tmp_path / "publish").mkdir()
    (tmp_path / "publish" / "cells.json").write_text(json.dumps({"schema": "refenv.publish"}))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cells.json").write_text("{not json")
    assert [r.run_id for r in history.load_runs(tmp_path)] == ["20261103-c", "20261102-b", "20261101-a"]


def test_a_refused_host_names_another_environment_of_the_run_ready_there() -> None:
    cpu = [{**cell(h, s, env="cpu", observed="CPU_WHEEL" if s == "gpu" else "NOT_VISIBLE"), "environment": "cpu"}
           for h in ("none", "r470", "r580") for s in SCENARIOS]
    r = record("run", full_cells() + cpu,
               extra_envs=({"name": "cpu", "torch": "2.13.0", "cuda": None, "content_hash": "cd" * 32},))
    j = judge([r], "cpu", "cd" * 32, frozenset((h, s) for h in ("none", "r470", "r580") for s in SCENARIOS))
    assert not j.ok and "r580: CPU_WHEEL (use a CUDA build (env, ready there))" in j.reasons
    assert "r470: CPU_WHEEL (use a CUDA build)" in j.reasons
