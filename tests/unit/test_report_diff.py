"""`refenv diff BASE NEW`: hosts that lost or gained a GPU, extensions that broke, exit 1 on a loss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from refenv.model.rundoc import from_data
from refenv.report import diff
from tests.unit.run_samples import raw

CU130 = "torch-2.14.1-cu130"
BROKEN_VISION = {"ready": False, "status": {"torch": "ok", "torchvision": "broken"}, "findings": [
    {"verdict": "", "severity": "error", "title": "torchvision 0.28.0 does not import: RuntimeError: operator "
     "torchvision::nms does not exist", "evidence": [], "remediation": ["pip install torchvision==0.29.1"]}]}


def driver_too_old_on(data: dict[str, Any], env: str, host: str) -> dict[str, Any]:
    """The run with torch refused by the driver on `host` (as a CUDA 13 wheel is on an R570)."""
    for c in data["cells"]:
        if (c["environment"], c["host"]) == (env, host) and c["observed"]:
            c["observed"]["verdict"], c["observed"]["verdicts"] = "DRIVER_TOO_OLD", ["DRIVER_TOO_OLD"]
            c["expected"]["verdict"], c["expected"]["verdicts"] = "DRIVER_TOO_OLD", ["DRIVER_TOO_OLD"]
    data["run"]["id"] += "-new"
    return data


def test_a_host_that_loses_the_gpu_is_a_regression_with_its_fix() -> None:
    base = from_data(raw("passing"), "base")
    new = from_data(driver_too_old_on(raw("passing"), CU130, "r580"), "new")
    d = diff.diff(base, new)
    assert d.regressed and [(m.environment, m.host, m.before, m.after) for m in d.lost] == [
        (CU130, "r580", "GPU (simulated)", "no GPU: DRIVER_TOO_OLD")]
    assert not d.gained and not d.broke
    text = "\n".join(diff.lines(d))
    assert "readiness REGRESSED" in text and f"lost   {CU130} on r580: GPU (simulated) -> no GPU: DRIVER_TOO_OLD" in text


def test_the_reverse_is_a_gain_and_no_regression() -> None:
    base = from_data(driver_too_old_on(raw("passing"), CU130, "r580"), "base")
    d = diff.diff(base, from_data(raw("passing"), "new"))
    assert not d.regressed and [(m.host, m.after) for m in d.gained] == [("r580", "GPU (simulated)")]
    assert diff.lines(d)[0].endswith("no host lost the GPU")


def test_an_extension_that_breaks_fails_the_gate_and_one_run_s_own_environments_are_only_said() -> None:
    data = raw("passing")
    for c in data["cells"]:
        if c["environment"] == CU130:
            c["stack"] = BROKEN_VISION
    data["environments"] = [e for e in data["environments"] if e["name"] != "torch-2.13.0-cpu"]
    data["cells"] = [c for c in data["cells"] if c["environment"] != "torch-2.13.0-cpu"]
    d = diff.diff(from_data(raw("passing"), "base"), from_data(data, "new"))
    assert d.regressed and d.broke == (f"{CU130}: {BROKEN_VISION['findings'][0]['title']}",)  # type: ignore[index]
    assert d.only_base == ("torch-2.13.0-cpu",) and not d.only_new


def test_the_command_exits_1_on_a_loss_and_0_otherwise(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "new").mkdir()
    (tmp_path / "base" / "cells.json").write_text(json.dumps(raw("passing")))
    (tmp_path / "new" / "cells.json").write_text(json.dumps(driver_too_old_on(raw("passing"), CU130, "r580")))
    refenv = str(Path(sys.executable).parent / "refenv")
    same = subprocess.run([refenv, "diff", "base", "base/cells.json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert same.returncode == 0, same.stderr
    worse = subprocess.run([refenv, "diff", "base", "new"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=False)
    assert worse.returncode == 1 and "lost   torch-2.14.1-cu130 on r580" in worse.stdout
    missing = subprocess.run([refenv, "diff", "base", "nowhere"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, check=False)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
