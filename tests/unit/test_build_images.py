"""Environment images as a plan (refenv.builder.images): content-addressed tags, labels, the Dockerfile, the install."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness import __version__ as harness_version
from harness import compat
from refenv.builder import images
from refenv.builder.wheelhouse import Lock, LockInputs, Wheel
from refenv.model.labels import MANAGED
from refenv.model.matrix import Environment

CU128 = Environment("torch-2.10.0-cu128", "2.10.0", "cu128")
CPU = Environment("torch-2.13.0-cpu", "2.13.0", "cpu")
BASE_ID = "sha256:" + "b" * 64
HARNESS = "h" * 64


def lock(env: Environment, torch_version: str, sha: str = "a" * 64) -> Lock:
    wheels = (Wheel("numpy", "2.3.0", "numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl", "c" * 64, 10),
              Wheel("torch", torch_version, f"torch-{torch_version}-cp311-cp311-manylinux_2_28_x86_64.whl", sha, 20))
    inputs: LockInputs = {"requirements": ["torch"], "python": "3.11", "platform": "manylinux x86_64 (glibc 2.36)",
                          "extra_index_url": None}
    return Lock(env.name, inputs, "i" * 64, wheels)


def plan(env: Environment = CU128, lk: Lock | None = None, base: str = BASE_ID, harness: str = HARNESS,
         template: str | None = None) -> images.ImagePlan:
    return images.plan(env, base, lk or lock(env, "2.10.0"), harness, template)


def test_the_same_inputs_make_the_same_tags() -> None:
    a, b = plan(), plan()
    assert (a.deps_tag, a.env_tag, a.content_hash) == (b.deps_tag, b.env_tag, b.content_hash)
    assert a.deps_tag.startswith("refenv/deps-torch-2.10.0-cu128:")
    assert a.env_tag == f"refenv/env-torch-2.10.0-cu128:{a.content_hash[:16]}"


def test_a_changed_wheel_changes_both_images() -> None:
    a, b = plan(), plan(lk=lock(CU128, "2.10.0", sha="d" * 64))
    assert a.deps_tag != b.deps_tag and a.env_tag != b.env_tag


def test_a_changed_base_changes_both_images() -> None:
    a, b = plan(), plan(base="sha256:" + "e" * 64)
    assert a.deps_tag != b.deps_tag and a.env_tag != b.env_tag


def test_a_changed_harness_or_template_rebuilds_only_the_top_layer() -> None:
    a = plan()
    for b in (plan(harness="g" * 64), plan(template="FROM {{ deps_image }}\n")):
        assert a.deps_tag == b.deps_tag and a.env_tag != b.env_tag


def test_the_labels_name_the_stack() -> None:
    labels = dict(plan().labels)
    assert labels[MANAGED] == "true" and labels["refenv.kind"] == "environment"
    assert labels["refenv.torch"] == "2.10.0+cu128" and labels["refenv.variant"] == "cu128"
    assert labels["refenv.cuda"] == "12.8" and labels["refenv.python"] == "3.11"
    floor = compat.minor_floor(12)
    assert floor is not None and labels["refenv.min-driver"] == floor[0]  # any 12.x runtime starts on R525
    assert labels["refenv.min-driver-full"] == compat.min_driver_for_cuda("12.8")
    assert labels["refenv.harness-version"] == harness_version
    assert labels["refenv.lock-sha256"] == lock(CU128, "2.10.0").sha256
    assert labels["refenv.content-hash"] == plan().content_hash


def test_a_cpu_image_has_no_driver_floor() -> None:
    labels = dict(plan(CPU, lock(CPU, "2.13.0+cpu")).labels)
    assert labels["refenv.torch"] == "2.13.0+cpu"
    assert labels["refenv.cuda"] == labels["refenv.min-driver"] == labels["refenv.min-driver-full"] == "none"


def test_the_dockerfile_stands_on_the_deps_image_and_runs_as_its_user() -> None:
    p = plan()
    lines = p.dockerfile.splitlines()
    assert f"FROM {p.deps_tag}" in lines
    assert f"USER {images.UID}:{images.UID}" in lines
    assert 'ENTRYPOINT ["python", "-m", "harness"]' in lines
    for key, value in p.labels:
        assert f"LABEL {key}={images._dq(value)}" in lines
    # The classic builder (docker-py) knows no BuildKit syntax.
    assert "--mount" not in p.dockerfile and "<<" not in p.dockerfile


@pytest.mark.parametrize(("value", "quoted"), [("plain", '"plain"'), ('say "hi"', '"say \\"hi\\""'),
                                               ("back\\slash", '"back\\\\slash"')])
def test_label_values_are_quoted_for_the_dockerfile(value: str, quoted: str) -> None:
    assert images._dq(value) == quoted


def test_the_install_is_offline_and_hash_checked() -> None:
    script = plan().install_command[-1]
    for flag in ("--no-index", "--require-hashes", "--no-deps", "--compile-bytecode"):
        assert flag in script
    assert plan().requirements.splitlines()[-1] == f"torch==2.10.0 --hash=sha256:{'a' * 64}"


def test_the_harness_digest_ignores_bytecode_but_not_sources(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    first = images.tree_digest(tmp_path)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "b.pyc").write_bytes(b"\0")
    assert images.tree_digest(tmp_path) == first
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert images.tree_digest(tmp_path) != first
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "a.py").rename(tmp_path / "pkg" / "c.py")
    assert images.tree_digest(tmp_path) != first, "a renamed file is a different tree"


def test_the_environment_name_is_part_of_the_image() -> None:
    other = replace(CU128, name="torch-2.10.0-cu128-copy")
    copy = plan(other, lock(CU128, "2.10.0"))
    assert copy.env_tag.startswith("refenv/env-torch-2.10.0-cu128-copy:")
    assert copy.content_hash != plan().content_hash, "its labels name it, so it is another image"
