"""refenv installed in a team's folder against `invoke matrix` in refenv's checkout, and the CI gate cold and warm.

A wheel built from this tree is installed into a fresh venv; a team folder holds one Dockerfile (FROM the default
cu130 image, an ENV) and the matrix `refenv init --drivers 535,580` wrote for it. The same cells (none, r535, r580
x gpu, no-gpu, every cell run again) are run by `refenv matrix` in the team folder and by `invoke matrix -m
TEAM/matrix.yaml` in the checkout, in alternating order. Target: the median `refenv matrix` takes at most 1.1x the
median `invoke matrix`. Exit 1 when it does not.

Then the gate (matrix/action.yml's run: steps, as tests/docker/test_gate_action.py runs them) on the team folder:
cold (a new runner folder: refenv installed, its cache empty, the team image not built) and warm (a new runner
folder again, with the cold run's cache folder restored, as actions/cache restores it; the team image not built,
as on a fresh runner). The build root of the simulated driver is made from nothing in the cold run (debootstrap);
base images the Dockerfile starts FROM are in the engine for both (a runner would pull them).

    python benchmarks/team_tool.py [--rounds N]   (--rounds 0: the gate's cold and warm times only)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.builder.environment import build_environment  # noqa: E402
from refenv.engines.docker.sdk import Engine  # noqa: E402
from refenv.model import matrix_yaml  # noqa: E402
from tests.docker.installed import build_wheel, install  # noqa: E402
from tests.docker.support import CU130, DEFAULT_MATRIX  # noqa: E402
from tests.docker.test_gate_action import Runner, run_steps  # noqa: E402

TARGET = 1.1
CELLS = ["--host", "none,r535,r580", "--scenario", "gpu,no-gpu", "--rerun"]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - start


def remove_team_images(engine: Engine, results: Path) -> None:
    """The team images the runs under `results` built (a fresh runner has none)."""
    for cells in results.rglob("cells.json"):
        for env in json.loads(cells.read_text(encoding="utf-8"))["environments"]:
            if env.get("image", "").startswith("refenv/team-"):
                engine.remove_image(env["image"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    engine = Engine.connect()
    default = matrix_yaml.load(DEFAULT_MATRIX)
    base = build_environment(engine, default, default.environment(CU130), lambda n, line: None)
    with tempfile.TemporaryDirectory(prefix="refenv-bench-team-") as tmp_name:
        tmp = Path(tmp_name)
        installed = install(build_wheel(tmp / "wheel"), tmp / "venv")
        team = tmp / "team"
        team.mkdir()
        (team / "Dockerfile").write_text(f"FROM {base.tag}\nENV TEAM_STAGE=bench\n", encoding="utf-8")
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
               "PATH": f"{installed.venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        subprocess.run([str(installed.refenv), "init", "--drivers", "535,580"], cwd=team, env=env, check=True,
                       capture_output=True)
        tool = [str(installed.refenv), "matrix", *CELLS]
        checkout = [sys.executable, "-m", "refenv.cli", "--as", "invoke", "matrix", "-m", str(team / "matrix.yaml"),
                    "--results", str(tmp / "checkout-results"), *CELLS]
        timed(tool, team, env)  # the team image built once, for both
        times: dict[str, list[float]] = {"refenv": [], "invoke": []}
        for i in range(args.rounds):
            order = [("refenv", tool, team), ("invoke", checkout, ROOT)]
            for name, command, cwd in order if i % 2 == 0 else reversed(order):
                times[name].append(timed(command, cwd, env if name == "refenv" else dict(os.environ)))
                # each figure as it comes: a run stopped by its time limit still leaves what it measured
                print(f"round {i + 1}: {name} matrix {times[name][-1]:.1f} s", flush=True)
        remove_team_images(engine, team / "results")
        gate = {}
        cold_temp, warm_temp = tmp / "runner-cold", tmp / "runner-warm"
        inputs = {"matrix": "matrix.yaml", "working-directory": ".", "baseline": "", "python": sys.executable,
                  "args": " ".join(CELLS[:4]), "cache": "true", "artifact-name": "refenv-matrix",
                  "refenv": str(installed.wheel)}
        runner_env = {k: v for k, v in os.environ.items() if k not in ("REFENV_BUILDROOT", "REFENV_WHEELHOUSE")}
        for name, temp in (("cold", cold_temp), ("warm", warm_temp)):
            temp.mkdir()
            if name == "warm":
                # `cp -a`, as actions/cache's tar restores it: the build root's device nodes (/dev/zero,
                # /dev/console) stay nodes; shutil.copytree would read them as files, without end
                (temp / "refenv").mkdir()
                subprocess.run(["cp", "-a", str(cold_temp / "refenv" / "cache"), str(temp / "refenv" / "cache")],
                               check=True, timeout=600)
            start = time.monotonic()
            saved = dict(os.environ)
            os.environ.clear()
            os.environ.update(runner_env)
            try:
                rc = run_steps(Runner(team, temp, dict(inputs)), temp / "summary.md")
            finally:
                os.environ.clear()
                os.environ.update(saved)
            gate[name] = time.monotonic() - start
            print(f"gate {name}: {gate[name]:.0f} s (exit {rc})", flush=True)
            remove_team_images(engine, team / "results")
            if rc != 0:
                print(f"the {name} gate failed ({rc})")
                return 1
    print(f"gate (matrix/action.yml's run: steps): cold {gate['cold']:.0f} s, warm {gate['warm']:.0f} s")
    if not args.rounds:  # --rounds 0: the gate's times only
        return 0
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median["refenv"] / median["invoke"]
    print(f"6 cells (a team Dockerfile FROM {CU130} on none, r535, r580 x gpu, no-gpu), {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        print(f"  {name:7s} median {median[name]:6.1f} s  ({', '.join(f'{v:.1f}' for v in values)})")
    print(f"  refenv matrix / invoke matrix: {ratio:.2f}x (target <= {TARGET}x)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
