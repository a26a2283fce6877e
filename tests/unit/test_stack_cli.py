"""`python -m harness stack` and `diagnose --stack` as a user runs them: the document, the text, the exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.stack_samples import install

ROOT = Path(__file__).resolve().parents[2]


def harness(*args: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), pythonpath) if p)}
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False, cwd=ROOT)


def test_the_document_names_what_it_read_and_judges_a_named_gpu(tmp_path: Path) -> None:
    install(tmp_path, "needsold", "1.0", {"needsold/__init__.py": ""}, requires=("torch (==1.0.0)",))
    done = harness("stack", "--no-imports", "--json", "--capability", "8.9", pythonpath=str(tmp_path))
    doc = json.loads(done.stdout)
    assert (doc["schema"], doc["version"], doc["command"]) == ("refenv.stack", 1, "stack")
    stack = doc["stack"]
    assert stack["host"] == {"gpus": [{"name": "the named GPU", "compute_capability": "8.9"}], "driver_cuda": None}
    assert stack["inventory"]["read"]["distributions"] >= 1
    keys = [d["key"] for d in stack["inventory"]["distributions"]]
    assert "needsold" in keys
    # needsold is pure Python: a requirement it does not meet is worth a warning, not "cannot run"
    if "torch" in keys:
        assert any(f["title"].startswith("needsold 1.0 requires torch==1.0.0") for f in stack["findings"])
    assert done.returncode == (0 if stack["ready"] else 1)


def test_the_text_lists_each_distribution(tmp_path: Path) -> None:
    install(tmp_path, "needsold", "1.0", {"needsold/__init__.py": ""}, requires=("torch (==1.0.0)",))
    done = harness("stack", "--no-imports", pythonpath=str(tmp_path))
    assert done.stdout.startswith("refenv stack: ")
    assert "\n  needsold 1.0  requires torch==1.0.0" in done.stdout
    assert "distributions," in done.stdout and "shared objects" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["stack", "--capability", "nine"], "--capability"),
    (["stack", "--driver-cuda", "580"], "--driver-cuda"),
    (["diagnose", "--stack", "--from", "-"], "does not apply to --from"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = harness(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
