"""`invoke publish` against a real registry on loopback: evidence, labels, pull-back, refusals, secrets.

A matrix of its own (the default matrix's CUDA 13.0 and CPU environments, so their locks and images; hosts
`none`, `r470` and `r580`; scenarios with and without `--gpus`) gives the evidence: one full run, and a
history holding only a single cell of it. The command itself runs as a user runs it (`invoke publish`),
with the registry's credentials in the environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from refenv.builder.wheelhouse import lock_path
from refenv.engines.docker.sdk import Engine
from refenv.model import codec, matrix_yaml
from refenv.model.matrix import select
from refenv.run.pipeline import Options, run_matrix
from tests.docker.registry import PASSWORD, USERNAME, Registry, running_registry
from tests.docker.support import CPU, CU130, DEFAULT_MATRIX, DIAGNOSIS_ONLY, ROOT, RecordingUI, matrix_text

pytestmark = pytest.mark.docker
SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "no-gpu": {"gpus": "none"}}
HOSTS = ["none", "r470", "r580"]
RELEASE_TAG = "torch2.14.1-cu130-py3.11"


@dataclass(frozen=True)
class World:
    matrix: Path          # the matrix file (its locks beside it)
    full: Path            # results holding one run of every cell
    single: Path          # results holding one run of one cell (as `invoke run --host r470 --scenario no-gpu`)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="module")
def world(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("publish-matrix")
    (folder / "locks").mkdir()
    for env in (CU130, CPU):
        shutil.copy(lock_path(DEFAULT_MATRIX, env), folder / "locks" / f"{env}.json")
    path = folder / "matrix.yaml"
    path.write_text(matrix_text([CU130, CPU], HOSTS, SCENARIOS, DIAGNOSIS_ONLY), encoding="utf-8")
    m = matrix_yaml.load(str(path))
    full = run_matrix(m, Options(results_root=folder / "full", probes="off", memory_check="off"), RecordingUI())
    verdicts = {c["id"]: (c["status"], (c.get("observed") or {}).get("verdict")) for c in codec.encode(full.document.cells)}
    assert verdicts[f"{CU130}/r580/gpu"] == ("PASS", "OK"), verdicts
    assert verdicts[f"{CU130}/r470/gpu"] == ("PASS", "DRIVER_TOO_OLD"), verdicts
    assert all(status == "PASS" for status, _ in verdicts.values()), verdicts
    single = select(m, [CU130], ["r470"], ["no-gpu"])
    run_matrix(single, Options(results_root=folder / "single", probes="off", memory_check="off"), RecordingUI())
    return World(path, folder / "full", folder / "single")


def invoke_publish(world: World, args: list[str], password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFENV_REGISTRY_USERNAME": USERNAME, "REFENV_REGISTRY_PASSWORD": password,
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "invoke", "publish", "--matrix", str(world.matrix), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1500, check=False)


def remove_local(engine: Engine, repository: str) -> None:
    """Every local name of a repository (the release images a test made)."""
    for image in engine.client.images.list(name=repository):
        for name in [*image.tags, *image.attrs.get("RepoDigests", [])]:
            engine.untag(name)


def manifest_of(results: Path) -> tuple[Path, dict[str, Any]]:
    paths = sorted((results / "publish").glob("*.json"))
    assert paths, f"no manifest under {results / 'publish'}"
    return paths[-1], json.loads(paths[-1].read_text(encoding="utf-8"))


def copy_run(source: Path, target: Path) -> tuple[Path, dict[str, Any]]:
    """The (only) run under `source`, copied under `target`: its cells.json path there and its document."""
    run_dir = next(p.parent for p in source.glob("2*/cells.json"))
    (target / run_dir.name).mkdir(parents=True)
    doc = json.loads((run_dir / "cells.json").read_text(encoding="utf-8"))
    return target / run_dir.name / "cells.json", doc


def test_a_single_cell_history_is_refused(registry: Registry, world: World) -> None:
    done = invoke_publish(world, ["--registry", f"{registry.host}/single", "--env", CU130,
                                  "--results", str(world.single)])
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert f"{CU130}: refused: no uninterrupted run of this image covers every host and scenario" in console
    assert "ran 1 of its 6 cells" in console, console
    assert f"single/{CU130}" not in registry.repositories()
    _, manifest = manifest_of(world.single)
    assert manifest["published"] == [] and manifest["refused"][0]["environment"] == CU130


def test_an_environment_ready_nowhere_is_refused(registry: Registry, world: World) -> None:
    done = invoke_publish(world, ["--registry", f"{registry.host}/nowhere", "--env", CPU,
                                  "--results", str(world.full)])
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert f"{CPU}: refused: torch gets a GPU on no host in run" in console, console
    assert "r580: CPU_WHEEL (use a CUDA build" in console, console
    assert f"nowhere/{CPU}" not in registry.repositories()


def test_refuses_an_environment_with_a_failing_cell(registry: Registry, world: World, tmp_path: Path) -> None:
    path, doc = copy_run(world.full, tmp_path)
    failing = next(c for c in doc["cells"] if c["id"] == f"{CU130}/none/gpu")
    failing.update(status="FAIL", reason="expected NO_DRIVER, observed OK")
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = invoke_publish(world, ["--registry", f"{registry.host}/refused", "--env", CU130, "--results",
                                  str(tmp_path)])
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert f"{CU130}: refused" in console and f"{CU130}/none/gpu: FAIL" in console
    assert f"refused/{CU130}" not in registry.repositories()


def test_a_wrong_password_fails_without_showing_it(engine: Engine, registry: Registry, world: World,
                                                   tmp_path: Path) -> None:
    path, doc = copy_run(world.full, tmp_path)
    path.write_text(json.dumps(doc), encoding="utf-8")
    wrong = "not-the-password-93b1e7"
    done = invoke_publish(world, ["--registry", f"{registry.host}/denied", "--env", CU130, "--results",
                                  str(tmp_path), "--no-pull-check"], password=wrong)
    console = done.stdout + done.stderr
    assert done.returncode == 1, console
    assert "authentication required" in console or "unauthorized" in console, console
    assert wrong not in console
    path, manifest = manifest_of(tmp_path)
    assert manifest["failed"][0]["environment"] == CU130 and wrong not in path.read_text(encoding="utf-8")
    remove_local(engine, f"{registry.host}/denied/{CU130}")


def test_publish_labels_ready_and_refused_hosts_and_pulls_back_a_ready_cell(engine: Engine, registry: Registry,
                                                                             world: World) -> None:
    done = invoke_publish(world, ["--registry", f"{registry.host}/ci", "--env", CU130, "--results", str(world.full)])
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    path, doc = manifest_of(world.full)
    [published] = doc["published"]
    repository = f"{registry.host}/ci/{CU130}"
    assert published["reference"] == f"{repository}@{published['digest']}"
    content_hash = published["content_hash"]
    assert published["tags"] == [RELEASE_TAG, content_hash[:16]]
    assert sorted(registry.tags(f"ci/{CU130}")) == sorted(published["tags"])

    # The pull-back check pulled the release by digest and re-ran a cell where torch got the GPU.
    check = published["pull_check"]
    assert check["ok"] and check["cell"] == f"{CU130}/r580/gpu", check
    assert (check["status"], check["observed"]) == ("PASS", "OK"), check
    assert engine.image_id(f"{repository}:{RELEASE_TAG}") is None
    labels = engine.image_labels(published["reference"])
    assert labels is not None

    # The labels say where torch gets a GPU, where not with the verdict and the minimum fix, and by which run.
    run_dir = next(p.parent for p in world.full.glob("2*/cells.json"))
    report_digest = "sha256:" + hashlib.sha256((run_dir / "cells.json").read_bytes()).hexdigest()
    assert labels["refenv.ready-hosts"] == "r580 (simulated)"
    # `none` injects no driver, so `--gpus` gives the container nothing: NOT_VISIBLE, fixed by a driver.
    assert labels["refenv.refused-hosts"] == ("none: NOT_VISIBLE (needs >= 580.65.06); "
                                              "r470: DRIVER_TOO_OLD (needs >= 580.65.06)")
    assert labels["refenv.untested-hosts"] == ""
    assert "refenv.verified-hosts" not in labels
    assert labels["refenv.min-driver"] == "580.65.06"
    assert labels["refenv.run"] == labels["refenv.runs"] == run_dir.name == published["run"]
    assert labels["refenv.report-digest"] == report_digest == published["report_digest"]
    assert labels["refenv.content-hash"] == content_hash and labels["refenv.kind"] == "release"
    description = labels["org.opencontainers.image.description"]
    assert "torch gets a GPU on r580 (simulated)" in description and "r470: DRIVER_TOO_OLD" in description
    for key in ("title", "version", "created"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    # The source is the repository's remote URL, or absent: never a local path.
    source = labels.get("org.opencontainers.image.source")
    assert source is None or "://" in source or ":" in source.split("/")[0], source
    assert not any(str(ROOT) in v or v.startswith("file:") for v in labels.values()), labels

    # The console and the manifest say the same as the labels.
    assert description in console
    assert [h["host"] for h in published["ready_hosts"]] == ["r580"] and published["ready_hosts"][0]["gpu"] == \
        "simulated"
    assert [h["label"] for h in published["refused_hosts"]] == labels["refenv.refused-hosts"].split("; ")
    assert published["description"] == description

    # The password is nowhere: not in the console, the manifest, or the image's labels.
    assert PASSWORD not in console
    assert PASSWORD not in path.read_text(encoding="utf-8")
    assert PASSWORD not in json.dumps(labels)
    assert doc["credentials_from"] == "REFENV_REGISTRY_USERNAME / REFENV_REGISTRY_PASSWORD"
    remove_local(engine, repository)
