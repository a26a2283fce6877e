"""action.yml, run as GitHub's runner runs a composite action's step: its expressions filled in, its script
given to `bash --noprofile --norc -eo pipefail` in its working directory with its env, a Python of this
machine as the runner's, against the loopback stub of GitHub's API.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.unit.github_stub import TOKEN, State, github_stub

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "data" / "events"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def action() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def fill(text: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    """GitHub's expressions of the kinds action.yml may use: inputs.X and github.X; anything else fails."""
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("inputs."):
            return inputs[name.removeprefix("inputs.")]
        return context[name]
    return EXPRESSION.sub(value, text)


def run_step(inputs: dict[str, str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    spec = action()
    defaults = {k: str(v.get("default", "")) for k, v in spec["inputs"].items()}
    context = {"github.action_path": str(ROOT), "github.token": TOKEN}
    given = {k: fill(v, {}, context) for k, v in {**defaults, **inputs}.items()}
    (step,) = spec["runs"]["steps"]
    step_env = {k: fill(str(v), given, context) for k, v in step["env"].items()}
    cwd = fill(step["working-directory"], given, context)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=cwd, env={"PATH": os.environ["PATH"], **env, **step_env}, capture_output=True,
                          text=True, timeout=120, check=False)


def test_it_is_a_composite_action_whose_inputs_never_enter_its_script_text() -> None:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    (step,) = spec["runs"]["steps"]
    assert not EXPRESSION.search(step["run"]), "an input spliced into the script could inject shell"
    assert step["shell"] == "bash" and step["id"] == "answer"
    assert set(spec["outputs"]) == {"action", "verdict", "confidence"}


def test_the_actions_step_answers_an_issue(tmp_path: Path) -> None:
    state = State()
    outputs = tmp_path / "outputs"
    outputs.touch()
    workspace = tmp_path / "workspace" / "harness"  # a workspace with its own `harness` must not shadow the action's
    workspace.mkdir(parents=True)
    (workspace / "__init__.py").write_text("raise SystemExit('the workspace harness was imported')\n")
    with github_stub(state) as api:
        done = run_step({"label-prefix": "cuda: ", "python": sys.executable},
                        {"GITHUB_EVENT_PATH": str(EVENTS / "issues-opened.json"), "GITHUB_EVENT_NAME": "issues",
                         "GITHUB_API_URL": api, "GITHUB_OUTPUT": str(outputs), "GITHUB_WORKSPACE": str(workspace.parent)})
    assert done.returncode == 0, done.stderr
    assert state.calls() == ["GET /repos/o/r/issues/7/comments", "POST /repos/o/r/issues/7/comments",
                             "POST /repos/o/r/issues/7/labels"]
    assert outputs.read_text(encoding="utf-8") == "action=create\nverdict=DRIVER_TOO_OLD\nconfidence=high\n"
    assert TOKEN not in done.stdout + done.stderr


def test_the_step_fails_when_github_refuses(tmp_path: Path) -> None:
    state = State(refuse=403)
    with github_stub(state) as api:
        done = run_step({"python": sys.executable}, {"GITHUB_EVENT_PATH": str(EVENTS / "issues-opened.json"),
                                                    "GITHUB_API_URL": api})
    assert done.returncode == 1
    assert "GitHub answered 403" in done.stderr
