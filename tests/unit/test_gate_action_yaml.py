"""The composite actions' YAML (matrix/action.yml, the CI gate; action.yml, the issue bot) is what GitHub reads:
valid against its schema (check-jsonschema's vendored `vendor.github-actions`) and clean under zizmor's audits
(template injection, unpinned actions, environment files), both offline; and the gate passes inputs to its
scripts only through the environment."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import in_ci

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = [ROOT / "matrix" / "action.yml", ROOT / "action.yml"]


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        message = f"{name} is not installed (the dev extra has it: pip install -e '.[dev]'; ./go installs it)"
        if in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    return found


def test_the_actions_are_valid_against_github_s_schema() -> None:
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", *map(str, ACTIONS)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing_offline() -> None:
    done = subprocess.run([tool("zizmor"), "--offline", "--no-progress", *map(str, ACTIONS)], capture_output=True,
                          text=True, timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gate_s_scripts_read_inputs_from_the_environment_and_name_refenv_by_path() -> None:
    action = yaml.safe_load((ROOT / "matrix" / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    runs = [s for s in steps if "run" in s]
    assert [s["id"] for s in runs] == ["install", "disk", "matrix", "summary", "gate"]
    for step in runs:
        assert "${{" not in step["run"], step["id"]          # no expression spliced into a script
        assert "GITHUB_ENV" not in step["run"] and "GITHUB_PATH" not in step["run"]
        assert not re.search(r"(?m)^\s*refenv ", step["run"]), step["id"]  # always "$REFENV", the action's own
    uses = [s["uses"] for s in steps if "uses" in s]
    assert all(re.fullmatch(r"actions/[a-z/-]+@[0-9a-f]{40}", u.split()[0]) for u in uses), uses
    assert set(action["outputs"]) == {"status", "gpu-hosts", "hosts-lost", "run"}
