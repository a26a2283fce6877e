"""refenv where a team works: the wheel installed into a fresh venv outside the checkout, run in an empty folder
that holds only the team's Dockerfile (FROM a local refenv image, a RUN step, an ENV): `refenv init`, then
`refenv matrix --host none,r535,r580 --scenario gpu,no-gpu` passes, writes its results there, and leaves the
checkout and the installed package as they were."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from tests.docker.installed import Installed, files_under, tree_state
from tests.docker.support import CU130


def test_init_then_matrix_in_a_team_folder(installed_refenv: Installed, env_builds: dict[str, EnvBuild],
                                           engine: Engine, tmp_path: Path) -> None:
    team = tmp_path / "team-repo"
    team.mkdir()
    (team / "Dockerfile").write_text(f"FROM {env_builds[CU130].tag}\nUSER root\nRUN echo ci > /etc/team-stage\n"
                                     "ENV TEAM_STAGE=ci\nUSER 10001:10001\n", encoding="utf-8")
    before, site = tree_state(), files_under(installed_refenv.site_packages)
    env = {**os.environ, "PATH": f"{installed_refenv.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"}
    init = subprocess.run([str(installed_refenv.refenv), "init"], cwd=team, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert init.returncode == 0, init.stderr
    assert "environment team-repo: built from Dockerfile" in init.stdout
    run = subprocess.run([str(installed_refenv.refenv), "matrix", "--host", "none,r535,r580", "--scenario",
                          "gpu,no-gpu"], cwd=team, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    cells = json.loads((team / "results" / "latest" / "cells.json").read_text(encoding="utf-8"))
    by_id = {c["id"]: c for c in cells["cells"]}
    assert len(by_id) == 6 and {c["status"] for c in by_id.values()} == {"PASS"}
    assert by_id["team-repo/r580/gpu"]["observed"]["verdict"] == "OK"
    assert by_id["team-repo/r535/gpu"]["observed"]["verdict"] == "DRIVER_TOO_OLD"
    assert "GPU on r580 (simulated)" in run.stdout
    assert (team / "results" / "latest" / "report.html").is_file()
    assert sorted(p.name for p in team.iterdir()) == ["Dockerfile", "matrix.yaml", "results"]
    assert tree_state() == before, "the run wrote into refenv's checkout"
    assert files_under(installed_refenv.site_packages) == site, "the run wrote into site-packages"
    built = cells["environments"][0]["image"]
    engine.remove_image(built)
