"""A real GPU host's measurement (`python -m harness measure --device cuda`, what the matrix runs once per
environment on each real GPU host): the GPU is measured, not waived, and the host judges it as it judges
a matrix run (refenv.run.measurements). Runs on the lent device; without a usable GPU this tier fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from refenv.model import codec
from refenv.model.records import MeasurementRecord
from refenv.run.measurements import judge_measurement

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("measure") / "measure-gpu.json"
    done = subprocess.run([sys.executable, "-m", "harness", "measure", "--out", str(out), "--device", "cuda",
                           "--probes", "quick", "--memory", "quick"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    doc: dict[str, Any] = json.loads(out.read_text())
    folder = os.environ.get("REFENV_ARTIFACTS")
    if folder:  # a device run brings the document back
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / out.name).write_text(json.dumps(doc, indent=2))
    return doc


def test_the_gpu_is_measured_not_waived(measured: dict[str, Any]) -> None:
    assert measured["error"] is None and measured["waived"] is None and measured["device"] == "cuda"
    gpu = measured["probes"]["gpu"]
    assert gpu["device"] == "cuda" and gpu.get("waived") is None
    ran = [m for m in gpu["measurements"] if m["status"] != "SKIP"]
    assert ran and all(m["status"] == "PASS" for m in ran), [(m["id"], m["status"], m.get("reason")) for m in ran]
    assert measured["memory"]["device"] == "cuda" and measured["memory"]["cases"]


def test_the_host_judges_it_as_a_matrix_run_does(measured: dict[str, Any]) -> None:
    record = judge_measurement(MeasurementRecord("env/real", "env", "real", "cuda"), measured, 0, False, False, "")
    assert record.status == "PASS", record.reason
    assert record.waived is None  # read as records, the sections write back what the harness wrote
    assert codec.encode(record.probes) == measured["probes"] and codec.encode(record.memory) == measured["memory"]
