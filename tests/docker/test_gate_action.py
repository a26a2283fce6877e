"""The CI gate's run: steps (matrix/action.yml), executed in order as a GitHub runner executes them, against a
small team folder: the runner's variables set (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_WORKSPACE,
RUNNER_TEMP), each step's `env:` expressions evaluated, its script run by `bash --noprofile --norc -eo pipefail`
(GitHub's `shell: bash`). The `uses:` steps are GitHub's own actions (cache, artifact) and are not run here.

A team upgrades its image from the cu128 base to the cu130 one: the first run (cu128) is the baseline; the
second, against it, loses the GPU on the R535 host (a CUDA 13 wheel needs R580), so the gate fails, its summary
and outputs say which host, and the matrix itself passed (every cell as predicted).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from tests.docker.installed import ROOT, Installed
from tests.docker.support import CU128, CU130

ACTION = ROOT / "matrix" / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


@dataclass
class Runner:
    """What a GitHub runner keeps across one job's steps, for one use of the action."""

    workspace: Path
    temp: Path
    inputs: dict[str, str]
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    def value(self, expr: str) -> str:
        """The few expressions the action's run: steps use; any other fails the test."""
        if expr.startswith("inputs."):
            return self.inputs[expr.removeprefix("inputs.")]
        if expr.startswith("steps."):
            step, _, name = expr.removeprefix("steps.").partition(".outputs.")
            return self.outputs.get(step, {}).get(name, "")
        known = {"github.action_path": str(ACTION.parent), "runner.temp": str(self.temp)}
        assert expr in known, f"the test's runner does not evaluate ${{{{ {expr} }}}}"
        return known[expr]

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)


def run_steps(runner: Runner, summary: Path) -> int:
    """Each run: step in order, as GitHub does (a failing step ends the job); the last exit status."""
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    for i, step in enumerate(action["runs"]["steps"]):
        if "run" not in step:
            continue
        sid = step.get("id", f"step{i}")
        out = runner.temp / f"output-{sid}"
        out.write_text("")
        script = runner.temp / f"{sid}.sh"
        script.write_text(step["run"])
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "CI": "true",
               "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(runner.workspace), "GITHUB_OUTPUT": str(out),
               "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(runner.temp), "RUNNER_OS": "Linux",
               **{k: os.environ[k] for k in ("REFENV_WHEELHOUSE", "REFENV_BUILDROOT", "DOCKER_HOST") if k in os.environ},
               **{k: runner.substitute(str(v)) for k, v in (step.get("env") or {}).items()}}
        cwd = runner.workspace / runner.substitute(step.get("working-directory", "."))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=1800, check=False)
        runner.logs[sid] = done.stdout + done.stderr
        runner.outputs[sid] = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
        if done.returncode != 0:
            return done.returncode
    return 0


def team_folder(where: Path, base: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "Dockerfile").write_text(f"FROM {base}\nENV TEAM_STAGE=ci\n", encoding="utf-8")
    (where / "matrix.yaml").write_text("""version: 1
environments:
  team:
    dockerfile: Dockerfile
hosts:
  none: {kind: none}
  r535: {kind: simulated, profile: r535}
  r580: {kind: simulated, profile: r580}
scenarios:
  gpu: {gpus: all}
run: {probes: "off", memory_check: "off"}
""", encoding="utf-8")
    return where


@pytest.fixture(scope="module")
def runs(installed_refenv: Installed, env_builds: dict[str, EnvBuild], engine: Engine,
         tmp_path_factory: pytest.TempPathFactory) -> Any:
    temp = tmp_path_factory.mktemp("runner")
    inputs = {"matrix": "matrix.yaml", "working-directory": ".", "baseline": "", "python": "python3", "args": "",
              "cache": "true", "artifact-name": "refenv-matrix", "refenv": str(installed_refenv.wheel)}
    base_ws = team_folder(tmp_path_factory.mktemp("main"), str(env_builds[CU128].tag))
    first = Runner(base_ws, temp, dict(inputs))
    first_rc = run_steps(first, temp / "summary-main.md")
    new_ws = team_folder(tmp_path_factory.mktemp("pr"), str(env_builds[CU130].tag))
    baseline = first.outputs.get("summary", {}).get("run", "")
    second = Runner(new_ws, temp, {**inputs, "baseline": f"{baseline}/cells.json"})
    second_rc = run_steps(second, temp / "summary-pr.md")
    yield first, first_rc, second, second_rc, temp
    for runner in (first, second):  # the team images these runs built, by the names their documents give
        run = runner.outputs.get("summary", {}).get("run")
        if run and (Path(run) / "cells.json").is_file():
            for env in json.loads((Path(run) / "cells.json").read_text(encoding="utf-8"))["environments"]:
                if env.get("image"):
                    engine.remove_image(env["image"])


def test_the_baseline_run_passes_and_says_where_torch_gets_a_gpu(runs: Any) -> None:
    first, rc, _, _, temp = runs
    assert rc == 0, first.logs
    assert first.logs["install"].startswith("refenv ")
    assert "disk:" in first.logs["disk"] and first.outputs["disk"]["disk"] in ("fits", "one at a time")
    assert first.outputs["matrix"]["exit"] == "0"
    out = first.outputs["summary"]
    assert out["status"] == "passed" and out["gpu-hosts"] == "team: r535, r580" and out["hosts-lost"] == ""
    summary = (temp / "summary-main.md").read_text()
    assert summary.startswith("# refenv matrix: PASSED") and "## Upgrade readiness" in summary
    assert (Path(out["run"]) / "report.html").is_file() and (Path(out["run"]) / "cells.json").is_file()


def test_the_upgrade_that_loses_a_host_fails_the_gate_and_says_which(runs: Any) -> None:
    _, _, second, rc, temp = runs
    assert rc == 1, second.logs
    assert second.outputs["matrix"]["exit"] == "0"      # every cell as predicted: the loss is readiness's
    out = second.outputs["summary"]
    assert out["status"] == "regressed" and out["hosts-lost"] == "team/r535" and out["gpu-hosts"] == "team: r580"
    summary = (temp / "summary-pr.md").read_text()
    assert summary.startswith("# refenv matrix: REGRESSED")
    assert "lost   team on r535: GPU (simulated) -> no GPU: DRIVER_TOO_OLD" in summary
    assert "readiness REGRESSED" in second.logs["gate"]
