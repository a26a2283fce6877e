"""`refenv init`: the matrix a team starts from (refenv.model.scaffold, the init task), read back by refenv's loader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.inputs import InputError
from refenv.model import matrix_yaml, profiles, scaffold

REFENV = Path(sys.executable).parent / "refenv"


def refenv(folder: Path, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REFENV), *words], cwd=folder, text=True, capture_output=True, timeout=120, check=False)


def test_dockerfiles_are_found_by_docker_s_names_and_outputs_and_hidden_folders_are_left_out(tmp_path: Path) -> None:
    for rel in ("Dockerfile", "docker/train/Dockerfile", "serve/Dockerfile.gpu", "ci/api.Dockerfile",
                "tools/Containerfile", ".git/Dockerfile", "node_modules/x/Dockerfile", "results/Dockerfile",
                "a/b/c/d/e/Dockerfile", "docs/Dockerfile.md.txt", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("FROM scratch\n")
    found = scaffold.find_dockerfiles(tmp_path)
    assert found == ["Dockerfile", "ci/api.Dockerfile", "docker/train/Dockerfile", "docs/Dockerfile.md.txt",
                     "serve/Dockerfile.gpu", "tools/Containerfile"]


@pytest.mark.parametrize(("rel", "name"), [
    ("Dockerfile", "team-repo"), ("docker/train/Dockerfile", "train"), ("serve/Dockerfile.gpu", "serve-gpu"),
    ("ci/api.Dockerfile", "ci-api"), ("Dockerfile.CUDA_12", "team-repo-cuda-12"),
])
def test_an_environment_is_named_after_where_its_dockerfile_is(rel: str, name: str) -> None:
    assert scaffold.dockerfile_name(rel, "Team_Repo") == name


def test_images_and_duplicates_get_names_of_their_own() -> None:
    planned = scaffold.plan(["a/Dockerfile", "b/a/Dockerfile"], ["nvcr.io/nvidia/pytorch:25.01-py3"], "x")
    assert [(p.name, p.dockerfile, p.image) for p in planned] == [
        ("a", "a/Dockerfile", None), ("a-2", "b/a/Dockerfile", None),
        ("pytorch-25-01-py3", None, "nvcr.io/nvidia/pytorch:25.01-py3")]
    with pytest.raises(InputError, match="--image"):
        scaffold.plan([], ["Not An Image!"], "x")


def test_drivers_name_shipped_branches_and_the_default_is_every_profile() -> None:
    assert scaffold.hosts("535,570, r580,535") == ["r535", "r570", "r580"]
    assert scaffold.hosts(None) == list(profiles.names())
    assert {"r470", "r580", "r580-mismatch", "r580-cuinit-hang"} <= set(scaffold.hosts(None))
    with pytest.raises(InputError, match=r"'999' is not a driver branch refenv simulates; it has 470, 525, 535"):
        scaffold.hosts("535,999")


def test_what_init_writes_is_a_matrix_refenv_reads(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "Dockerfile").write_text("FROM scratch\n")
    envs = scaffold.plan(["train/Dockerfile"], ["registry.example:5000/ml/serve:1.2"], tmp_path.name)
    text = scaffold.matrix_text(envs, scaffold.hosts(None))
    m = matrix_yaml.parse(text, str(tmp_path / "matrix.yaml"))
    assert [e.name for e in m.environments] == ["train", "serve-1-2"]
    train, serve = m.environments
    assert train.team is not None and train.team.dockerfile == str(tmp_path / "train" / "Dockerfile")
    assert serve.team is not None and serve.team.image == "registry.example:5000/ml/serve:1.2"
    assert [h.name for h in m.hosts] == ["none", *profiles.names()]
    assert [s.name for s in m.scenarios] == ["gpu", "no-gpu", "cvd-empty", "nvd-void"]
    assert "# network: none" in text and "# target:" in text  # the build's options, said where they are written


def test_init_writes_says_what_and_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    done = refenv(tmp_path, "init", "--drivers", "535,580")
    assert done.returncode == 0, done.stderr
    assert f"environment {scaffold.environment_name(tmp_path.name)}: built from Dockerfile" in done.stdout
    assert "hosts: none (no driver), r535, r580" in done.stdout
    first = (tmp_path / "matrix.yaml").read_text()
    again = refenv(tmp_path, "init")
    assert again.returncode == 2 and "matrix.yaml exists" in again.stderr and "--force" in again.stderr
    assert (tmp_path / "matrix.yaml").read_text() == first
    forced = refenv(tmp_path, "init", "--force", "--image", "python:3.12-slim")
    assert forced.returncode == 0 and "environment python-3-12-slim: image python:3.12-slim" in forced.stdout


def test_init_in_a_folder_without_a_dockerfile_says_what_it_needs(tmp_path: Path) -> None:
    done = refenv(tmp_path, "init")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no Dockerfile in" in done.stderr and "refenv init --image REGISTRY/NAME:TAG" in done.stderr
    assert not (tmp_path / "matrix.yaml").exists()
    bad = refenv(tmp_path, "init", "--image", "python:3.12", "--drivers", "123")
    assert bad.returncode == 2 and "'123' is not a driver branch" in bad.stderr
