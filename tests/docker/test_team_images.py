"""A team's own images through `invoke matrix`'s runner, beside refenv's own environment, with the same reports.

- `image:`: an image made here by a plain `docker build` of a small Dockerfile outside refenv (FROM the default
  cu130 image, its Python named by path);
- `dockerfile:`: a Dockerfile refenv builds offline from that local image, with a build argument, which unpacks
  torchvision 0.28.0 (built for torch 2.13.0) without its dependencies: the real import failure, in a cell, named
  with its fix;
- `image:` of refenv's base image, which has a Python and no torch: one line for its cells, the rest runs.
Everything the tests made is removed after them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from refenv.builder.baseimage import bootstrap_tag
from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Matrix
from refenv.report.ready import sections
from refenv.run.pipeline import Outcome
from tests.docker.support import CU130, DIAGNOSIS_ONLY, cell, run_grid, small_matrix, wheel

PLAIN = "refenv-test/team-plain:1"
# The image's torchvision (0.29.1) replaced by 0.28.0, unpacked without its dependencies: a team that kept its
# torchvision pin while torch moved on.
DOCKERFILE = """ARG BASE
FROM ${BASE}
USER root
COPY torchvision.whl /tmp/torchvision.whl
RUN cd /opt/venv/lib/python3.11/site-packages && rm -rf torchvision torchvision-*.dist-info torchvision.libs \\
 && python -m zipfile -e /tmp/torchvision.whl . && rm /tmp/torchvision.whl
USER 10001:10001
"""


@pytest.fixture(scope="module")
def team_run(engine: Engine, env_builds: dict[str, EnvBuild], default_matrix: Matrix,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    base = str(env_builds[CU130].tag)
    work = tmp_path_factory.mktemp("team")
    (work / "plain").mkdir()
    # A team's own image, as a team makes it: its Python where it wants it, nothing of refenv's in its recipe.
    (work / "plain" / "Dockerfile").write_text(
        f"FROM {base}\nUSER root\n"
        "RUN printf '#!/bin/sh\\nexec /opt/venv/bin/python \"$@\"\\n' > /usr/local/bin/team-python "
        "&& chmod 755 /usr/local/bin/team-python\nUSER 10001:10001\n")
    subprocess.run(["docker", "build", "--network", "none", "-q", "-t", PLAIN, str(work / "plain")], check=True,
                   env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/local/bin:/usr/bin:/bin"}, capture_output=True)
    (work / "mismatch").mkdir()
    (work / "mismatch" / "Dockerfile").write_text(DOCKERFILE)
    shutil.copyfile(wheel("torchvision==0.28.0"), work / "mismatch" / "torchvision.whl")
    matrix = small_matrix(
        [CU130], ["none", "r580", "r535"], {"gpu": {"gpus": "all"}}, run=DIAGNOSIS_ONLY,
        extra_envs={"team-image": {"image": PLAIN, "python": "/usr/local/bin/team-python"},
                    # The Dockerfile lives in a temporary folder, outside the project of the matrix: allowed
                    # by name (refenv/model/project_paths.py).
                    "team-dockerfile": {"dockerfile": str(work / "mismatch" / "Dockerfile"),
                                        "build_args": {"BASE": base}, "allow_outside": True},
                    # refenv's bootstrapped base: Debian's Python, no torch
                    "no-torch": {"image": bootstrap_tag(default_matrix.environment(CU130).base.bootstrap)}})
    outcome = run_grid(matrix, work / "results", use_cache=True)
    yield outcome
    for env in outcome.document.environments:
        if env.source == "dockerfile" and env.image:
            engine.remove_image(env.image)
    engine.remove_image(PLAIN)


def test_an_image_environment_reads_as_the_built_one(team_run: Outcome) -> None:
    doc = team_run.document
    env = doc.environment("team-image")
    assert env is not None and (env.source, env.interpreter) == ("image", "/usr/local/bin/team-python")
    assert (env.torch, env.cuda, env.python) == ("2.14.1+cu130", "13.0", "3.11")
    by = {s.environment: s for s in sections(doc)}
    built, team = by[CU130], by["team-image"]
    assert (team.gpu_on, team.no_gpu, team.stack_blocked) == (built.gpu_on, built.no_gpu, built.stack_blocked)
    assert team.agreed and built.agreed
    for host in ("none", "r580", "r535"):
        c = cell(team_run, "team-image", host, "gpu")
        assert c["status"] == "PASS", c
    assert "## The stack beside torch" in (team_run.folder / "report.md").read_text(encoding="utf-8")


def test_a_torchvision_built_for_another_torch_is_named_in_its_cell_with_the_fix(team_run: Outcome) -> None:
    c = cell(team_run, "team-dockerfile", "r580", "gpu")
    assert c["status"] == "PASS" and c["observed"]["verdict"] == "OK"  # torch itself gets the (simulated) GPU
    stack = c["stack"]
    assert stack["ready"] is False and stack["status"]["torchvision"] == "broken"
    (found,) = [f for f in stack["findings"] if f["title"].startswith("torchvision 0.28.0 does not import")]
    assert found["title"].endswith("RuntimeError: operator torchvision::nms does not exist")
    assert any("undefined symbol" in e for e in found["evidence"])
    assert found["remediation"][0].startswith("pip install torchvision==0.29.1")
    by = {s.environment: s for s in sections(team_run.document)}
    assert by["team-dockerfile"].gpu_on == "no host"
    assert any(line.startswith("r580: torchvision 0.28.0 does not import") for line in by["team-dockerfile"].stack_blocked)
    env = team_run.document.environment("team-dockerfile")
    assert env is not None and env.image is not None and env.image.startswith("refenv/team-team-dockerfile:")


def test_an_image_without_torch_gets_one_line_and_the_rest_runs(team_run: Outcome) -> None:
    cells = [c for c in team_run.document.cells if c.environment == "no-torch"]
    assert cells and {c.status for c in cells} == {"BUILD_FAILED"}
    assert all("no torch in the image" in c.reason for c in cells)
    assert {c.status for c in team_run.document.cells if c.environment != "no-torch"} == {"PASS"}
