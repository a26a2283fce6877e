"""The single-file diagnoser inside one of the matrix's images (torch 2.13.0 CPU), networking off: the archive
alone, mounted read-only, diagnoses the container (its children import the image's torch from the archive's
harness) and a report, each output opening with the version line.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from refenv.builder.environment import build_environment
from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ContainerSpec
from refenv.model.labels import MANAGED
from refenv.model.matrix import Matrix
from refenv.ship import pyz
from tests.docker.support import CPU, ROOT

LOG = logging.getLogger(__name__)
VERSION_LINE = re.compile(r"^refenv-diagnose \S+ \(\S+\) on Python 3\.\d+\.\d+ \(Linux x86_64\)$")


@pytest.fixture(scope="module")
def cpu_image(engine: Engine, default_matrix: Matrix) -> str:
    env = next(e for e in default_matrix.environments if e.name == CPU)
    build = build_environment(engine, default_matrix, env, lambda name, line: LOG.debug("%s: %s", name, line))
    if build.image is None:
        pytest.fail(f"{CPU} did not build: {build.error}\n{build.log_tail}", pytrace=False)
    return build.image


def run_archive(engine: Engine, image: str, folder: Path, *args: str) -> tuple[int | None, list[str]]:
    spec = ContainerSpec(image=image, command=("/opt/refenv/refenv-diagnose.pyz", *args), entrypoint=("python",),
                         environment=(), labels=((MANAGED, "true"), ("refenv.kind", "test")),
                         binds=((str(folder / "in"), "/opt/refenv", True), (str(folder / "out"), "/out", False)))
    outcome = engine.run(spec, 300)
    assert not outcome.timed_out and not outcome.oom_killed, outcome.logs
    return outcome.exit_code, outcome.logs.splitlines()


def test_the_archive_diagnoses_the_container_and_a_report(engine: Engine, cpu_image: str, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out").chmod(0o777)  # the image runs as its own non-root user
    pyz.build(ROOT, tmp_path / "in" / pyz.NAME)
    (tmp_path / "in" / "report.txt").write_bytes((ROOT / "tests/data/reports/smi-table-pip.txt").read_bytes())

    code, lines = run_archive(engine, cpu_image, tmp_path, "--out", "/out/diagnosis.json")
    assert VERSION_LINE.match(lines[0]), lines
    doc = json.loads((tmp_path / "out" / "diagnosis.json").read_text(encoding="utf-8"))
    assert doc["error"] is None, doc["error"]
    assert doc["facts"]["torch"]["version"] == "2.13.0+cpu"  # the torch probe ran, from the archive
    # The same diagnosis as the harness the image carries, run as the matrix's cells run it.
    reference = ContainerSpec(image=cpu_image, command=("diagnose", "--out", "/out/reference.json"), environment=(),
                              labels=((MANAGED, "true"), ("refenv.kind", "test")),
                              binds=((str(tmp_path / "out"), "/out", False),))
    outcome = engine.run(reference, 300)
    expected = json.loads((tmp_path / "out" / "reference.json").read_text(encoding="utf-8"))
    assert lines[1] == f"refenv diagnose: {expected['diagnosis']['verdict']}" and code == outcome.exit_code == 1, lines
    assert [f["verdict"] for f in doc["diagnosis"]["findings"]] == [f["verdict"] for f in expected["diagnosis"]["findings"]]

    code, lines = run_archive(engine, cpu_image, tmp_path, "--from", "/opt/refenv/report.txt")
    assert VERSION_LINE.match(lines[0]) and lines[1] == "refenv diagnose: DRIVER_TOO_OLD" and code == 1, lines
