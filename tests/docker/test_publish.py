"""`invoke publish` against a real registry on loopback: push, pull back by digest, labels, refusals, secrets.

One matrix run of the CPU environment (its smallest image) on a simulated host, a driverless host and
`real` (NOT_RUN without an NVIDIA runtime) gives the evidence; the command itself runs as a user runs
it (`invoke publish`), with the registry's credentials in the environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refenv import matrix_load
from refenv.engine import Engine
from refenv.matrix import select
from refenv.runner import Options, run_matrix
from tests.docker.registry import PASSWORD, USERNAME, Registry, running_registry
from tests.docker.support import CPU, DEFAULT_MATRIX, ROOT, RecordingUI

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="module")
def verified_run(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding one known-good run of the CPU environment."""
    root = tmp_path_factory.mktemp("results")
    m = select(matrix_load.load(DEFAULT_MATRIX), [CPU], ["r580", "none", "real"], ["gpu"])
    outcome = run_matrix(m, Options(results_root=root, probes="off", memory_check="off"), RecordingUI())
    statuses = {c.host: c.status for c in outcome.document.cells}
    assert statuses["r580"] == "PASS" and statuses["none"] == "PASS", outcome.document.cells
    return root


def invoke_publish(args: list[str], password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFENV_REGISTRY_USERNAME": USERNAME, "REFENV_REGISTRY_PASSWORD": password,
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "invoke", "publish", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def remove_local(engine: Engine, repository: str) -> None:
    """Every local name of a repository (the release images a test made)."""
    for image in engine.client.images.list(name=repository):
        for name in [*image.tags, *image.attrs.get("RepoDigests", [])]:
            engine.untag(name)


def manifest_of(results: Path) -> tuple[Path, dict[str, Any]]:
    paths = sorted((results / "publish").glob("*.json"))
    assert paths, f"no manifest under {results / 'publish'}"
    return paths[-1], json.loads(paths[-1].read_text(encoding="utf-8"))


def test_publish_pushes_labels_and_pulls_back(engine: Engine, registry: Registry, verified_run: Path) -> None:
    done = invoke_publish(["--registry", f"{registry.host}/ci", "--env", CPU, "--results", str(verified_run)])
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    path, doc = manifest_of(verified_run)
    [published] = doc["published"]
    repository = f"{registry.host}/ci/{CPU}"
    assert published["repository"] == repository
    assert published["digest"].startswith("sha256:") and published["reference"] == f"{repository}@{published['digest']}"
    content_hash = published["content_hash"]
    assert published["tags"] == ["torch2.13.0-cpu-py3.11", content_hash[:16]]
    assert sorted(registry.tags(f"ci/{CPU}")) == sorted(published["tags"])

    # The pull-back check untagged the local release, pulled it by digest and re-ran a verified cell.
    check = published["pull_check"]
    assert check["ok"] and check["status"] == "PASS" and check["cell"] == f"{CPU}/r580/gpu", check
    assert engine.image_id(f"{repository}:torch2.13.0-cpu-py3.11") is None
    labels = engine.image_labels(published["reference"])
    assert labels is not None

    # Labels as promised: OCI annotations, the build, the hosts, and the digest of the run's report.
    run_dir = next(p.parent for p in verified_run.glob("2*/cells.json"))
    report_digest = "sha256:" + hashlib.sha256((run_dir / "cells.json").read_bytes()).hexdigest()
    for key in ("title", "description", "version", "created", "source"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.version"] == "torch2.13.0-cpu-py3.11"
    assert (labels["refenv.torch"], labels["refenv.variant"], labels["refenv.cuda"], labels["refenv.python"],
            labels["refenv.min-driver"]) == ("2.13.0+cpu", "cpu", "none", "3.11", "none")
    assert labels["refenv.content-hash"] == content_hash
    assert labels["refenv.report-digest"] == report_digest == published["report_digest"]
    run_doc = json.loads((run_dir / "cells.json").read_text(encoding="utf-8"))
    real = next(c for c in run_doc["cells"] if c["host"] == "real")
    if real["status"] == "NOT_RUN":  # no NVIDIA runtime here: it neither disagrees nor verifies
        assert labels["refenv.verified-hosts"] == "none, r580"  # the hosts of its PASS cells, in matrix order
        assert [v.split(":")[0] for v in published["not_verified"]] == [f"{CPU}/real/gpu"]
    else:
        assert labels["refenv.verified-hosts"] == "none, r580, real"
    assert labels["refenv.kind"] == "release"
    assert "verified on" in console and "r580 (simulated driver 580.95.05" in console

    # The password is nowhere: not in the console, the manifest, or the image's labels.
    assert PASSWORD not in console
    assert PASSWORD not in path.read_text(encoding="utf-8")
    assert PASSWORD not in json.dumps(labels)
    assert doc["credentials_from"] == "REFENV_REGISTRY_USERNAME / REFENV_REGISTRY_PASSWORD"
    remove_local(engine, repository)


def test_refuses_an_environment_with_a_failing_cell(registry: Registry, verified_run: Path,
                                                    tmp_path: Path) -> None:
    run_dir = next(p.parent for p in verified_run.glob("2*/cells.json"))
    doc = json.loads((run_dir / "cells.json").read_text(encoding="utf-8"))
    failing = next(c for c in doc["cells"] if c["host"] == "none")
    failing.update(status="FAIL", reason="expected NOT_VISIBLE, observed OK")
    copied = tmp_path / run_dir.name
    copied.mkdir()
    (copied / "cells.json").write_text(json.dumps(doc), encoding="utf-8")

    done = invoke_publish(["--registry", f"{registry.host}/refused", "--env", CPU, "--results", str(tmp_path)])
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert f"{CPU}: refused" in console and f"{CPU}/none/gpu: FAIL" in console
    assert f"refused/{CPU}" not in registry.repositories()
    _, manifest = manifest_of(tmp_path)
    assert manifest["published"] == [] and manifest["refused"][0]["environment"] == CPU


def test_a_wrong_password_fails_without_showing_it(engine: Engine, registry: Registry, verified_run: Path,
                                                   tmp_path: Path) -> None:
    run_dir = next(p.parent for p in verified_run.glob("2*/cells.json"))
    (tmp_path / run_dir.name).mkdir()
    (tmp_path / run_dir.name / "cells.json").write_bytes((run_dir / "cells.json").read_bytes())
    wrong = "not-the-password-93b1e7"
    done = invoke_publish(["--registry", f"{registry.host}/denied", "--env", CPU, "--results", str(tmp_path),
                           "--no-pull-check"], password=wrong)
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert "authentication required" in console or "unauthorized" in console, console
    assert wrong not in console
    path, manifest = manifest_of(tmp_path)
    assert manifest["failed"][0]["environment"] == CPU and wrong not in path.read_text(encoding="utf-8")
    remove_local(engine, f"{registry.host}/denied/{CPU}")
