"""matrix.yaml's team environments stay inside their project, and every placement value is checked whole.

`dockerfile:` and `context:` resolve (links followed, then checked) inside the folder that holds matrix.yaml,
unless `allow_outside: true` is written beside them; the filesystem's root and the host's own folders never;
a loop or an over-long name is refused as such (exit 2, a MatrixError, not an internal error). Image
references follow the distribution reference grammar; Slurm and Kubernetes values match whole and are
bounded; CDI devices are unique and bounded; a team image's `python:` is an interpreter; a recipe's Python
is one torch is built for.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from refenv.errors import MatrixError
from refenv.model import accepts
from refenv.model.matrix_yaml import MAX_DEVICES, MAX_GPUS, parse
from tests.unit.matrix_samples import GOOD

TAIL = "hosts:\n  none: {kind: none}\nscenarios:\n  gpu: {gpus: all}\n"


def project(tmp_path: Path) -> Path:
    """A project folder with its matrix.yaml, a Dockerfile, a context folder and a file outside it."""
    root = tmp_path / "team"
    (root / "docker").mkdir(parents=True)
    (root / "docker" / "Dockerfile").write_text("FROM team/base:1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "Dockerfile").write_text("FROM team/base:1\n")
    return root


def read(root: Path, env: str) -> object:
    path = root / "matrix.yaml"
    text = "version: 1\nenvironments:\n" + env + TAIL
    path.write_text(text)
    return parse(text, str(path))


def refused(root: Path, env: str) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        read(root, env)
    err = info.value
    assert "\n" not in str(err) and str(err).startswith(str(root / "matrix.yaml") + ":"), str(err)
    return err


@pytest.mark.parametrize(("key", "value", "phrase"), [
    ("context", "/", "the filesystem's root"),
    ("context", "..", "outside the project folder"),
    ("context", "../../..", "outside the project folder"),
    ("context", "/etc", "in the host's own /etc"),
    ("context", "/proc", "in the host's own /proc"),
    ("context", "/sys", "in the host's own /sys"),
    ("context", "/dev", "in the host's own /dev"),
    ("dockerfile", "/etc/passwd", "in the host's own /etc"),
    ("dockerfile", "/proc/self/environ", "in the host's own /proc"),
    ("dockerfile", "../outside/Dockerfile", "outside the project folder"),
    ("dockerfile", "docker/../../outside/Dockerfile", "outside the project folder"),
])
def test_a_path_out_of_the_project_is_refused_naming_key_and_line(tmp_path: Path, key: str, value: str,
                                                                   phrase: str) -> None:
    root = project(tmp_path)
    lines = {"dockerfile": "docker/Dockerfile", key: value}
    env = "  app:\n" + "".join(f"    {k}: \"{v}\"\n" for k, v in lines.items())
    err = refused(root, env)
    assert err.field == f"environments.app.{key}" and phrase in err.expected
    assert err.line == (4 if key == "dockerfile" else 5)
    assert "allow_outside" in err.expected or "root" in err.expected


def test_a_link_out_of_the_project_is_followed_then_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "ctx").symlink_to(tmp_path / "outside")
    (root / "docker" / "Linked").symlink_to(tmp_path / "outside" / "Dockerfile")
    err = refused(root, "  app:\n    dockerfile: docker/Dockerfile\n    context: ctx\n")
    assert err.field == "environments.app.context" and err.line == 5 and "outside the project" in err.expected
    err = refused(root, "  app:\n    dockerfile: docker/Linked\n")
    assert err.field == "environments.app.dockerfile" and str(tmp_path / "outside") in err.expected
    (root / "etc").symlink_to("/etc")
    err = refused(root, "  app:\n    dockerfile: docker/Dockerfile\n    context: etc\n")
    assert "host's own /etc" in err.expected


def test_allow_outside_written_beside_lets_a_path_out_but_never_to_the_host(tmp_path: Path) -> None:
    root = project(tmp_path)
    m = read(root, "  app:\n    dockerfile: ../outside/Dockerfile\n    allow_outside: true\n")
    env = m.environments[0]  # type: ignore[attr-defined]
    assert env.team.dockerfile == str(tmp_path / "outside" / "Dockerfile")
    assert env.team.context == str(tmp_path / "outside")
    for value in ("/", "/etc", "/proc"):
        err = refused(root, f"  app:\n    dockerfile: docker/Dockerfile\n    context: \"{value}\"\n"
                            "    allow_outside: true\n")
        assert err.field == "environments.app.context"
    err = refused(root, "  app:\n    dockerfile: docker/Dockerfile\n    allow_outside: \"yes\"\n")
    assert err.field == "environments.app.allow_outside" and "true or false" in err.expected
    err = refused(root, "  app:\n    image: team/app:1\n    allow_outside: true\n")
    assert err.field == "environments.app.allow_outside"


def test_inside_the_project_still_works_through_links(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "ctx").symlink_to(root / "docker")
    m = read(root, "  app:\n    dockerfile: docker/Dockerfile\n    context: ctx\n")
    assert m.environments[0].team.context == str(root / "docker")  # type: ignore[attr-defined]


def test_a_link_loop_is_refused_as_such(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    err = refused(root, "  app:\n    dockerfile: docker/Dockerfile\n    context: a\n")
    assert err.field == "environments.app.context" and "symbolic links loop" in err.expected


@pytest.mark.parametrize("name", ["x" * 300, "docker/" + "y" * 256, "/".join(["z" * 200] * 30)])
def test_an_over_long_name_is_refused_as_such(tmp_path: Path, name: str) -> None:
    root = project(tmp_path)
    err = refused(root, f"  app:\n    dockerfile: docker/Dockerfile\n    context: {name}\n")
    assert err.field == "environments.app.context"
    assert "longer than" in err.expected


# ---- image references ------------------------------------------------------------------------------------

@pytest.mark.parametrize("image", ["app@md5:" + "0" * 32, "app@sha256:" + "a" * 32, "app@sha256:" + "A" * 64,
                                   "app@sha1:" + "a" * 40, "app@sha512:" + "b" * 64, "reg.example:99999/app:1",
                                   "reg.example:0/app:1", "localhost:65536/app"])
def test_an_image_reference_docker_refuses_is_refused_here(tmp_path: Path, image: str) -> None:
    err = refused(project(tmp_path), f"  app:\n    image: \"{image}\"\n")
    assert err.field == "environments.app.image"


@pytest.mark.parametrize("image", ["app@sha256:" + "a" * 64, "app:1@sha384:" + "c" * 96, "app@sha512:" + "b" * 128,
                                   "reg.example:65535/ns/app:1", "localhost:5000/app", "reg.example:1/a"])
def test_a_reference_of_the_grammar_passes(image: str) -> None:
    assert accepts.image_reference(image, "image") == image


# ---- placement -------------------------------------------------------------------------------------------

def real_host(placement: str) -> str:
    return GOOD.replace("hosts:\n", f"hosts:\n  cluster: {{kind: real, {placement}}}\n", 1)


def placement_error(placement: str) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        parse(real_host(placement), "m.yaml")
    assert "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize(("placement", "field"), [
    ('slurm: {constraint: "a100\\n"}', "hosts.cluster.slurm.constraint"),
    ('slurm: {constraint: "a100 --uid=0"}', "hosts.cluster.slurm.constraint"),
    ('slurm: {partition: "gpu\\n"}', "hosts.cluster.slurm.partition"),
    ('slurm: {partition: "gpu;rm"}', "hosts.cluster.slurm.partition"),
    ('slurm: {account: "--wrap=id"}', "hosts.cluster.slurm.account"),
    ('slurm: {account: "ml team"}', "hosts.cluster.slurm.account"),
    ('slurm: {gres: "gpu:1\\n"}', "hosts.cluster.slurm.gres"),
    ('slurm: {gres: "gpu:h100:123456"}', "hosts.cluster.slurm.gres"),
    ('kubernetes: {node_selector: {nvidia.com/gpu.product: "A100\\n"}}',
     "hosts.cluster.kubernetes.node_selector.nvidia.com/gpu.product"),
    ('kubernetes: {node_selector: {"bad key\\n": "x"}}', "hosts.cluster.kubernetes.node_selector"),
    ('kubernetes: {node_selector: {"' + "a" * 64 + '": "x"}}', "hosts.cluster.kubernetes.node_selector"),
    ('kubernetes: {gpus: 100000}', "hosts.cluster.kubernetes.gpus"),
    (f'kubernetes: {{gpus: {MAX_GPUS + 1}}}', "hosts.cluster.kubernetes.gpus"),
    ('kubernetes: {namespace: "Default"}', "hosts.cluster.kubernetes.namespace"),
    ('kubernetes: {namespace: "ns\\n"}', "hosts.cluster.kubernetes.namespace"),
])
def test_placement_values_match_whole_and_are_bounded(placement: str, field: str) -> None:
    assert placement_error(placement).field.startswith(field)


@pytest.mark.parametrize("placement", [
    'slurm: {constraint: "driver_r535&h100", gres: "gpu:h100:2", partition: "gpu,gpu-long", account: "ml-team"}',
    'slurm: {constraint: "[rack1|rack2]*2"}',
    'kubernetes: {node_selector: {nvidia.com/cuda.driver.major: "535"}, gpus: 8, namespace: ml-ci}',
])
def test_real_placements_pass(placement: str) -> None:
    parse(real_host(placement), "m.yaml")


# ---- CDI devices, interpreters, Python versions ---------------------------------------------------------------

def scenario(devices: list[str]) -> str:
    listed = ", ".join(devices)
    return GOOD.replace("scenarios:\n", f"scenarios:\n  cdi: {{devices: [{listed}]}}\n", 1)


def test_cdi_devices_are_unique() -> None:
    with pytest.raises(MatrixError) as info:
        parse(scenario(["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=0"]), "m.yaml")
    assert info.value.field == "scenarios.cdi.devices[2]" and "named twice" in info.value.expected


def test_cdi_devices_are_bounded() -> None:
    with pytest.raises(MatrixError) as info:
        parse(scenario([f"nvidia.com/gpu={i}" for i in range(5000)]), "m.yaml")
    assert info.value.field == "scenarios.cdi.devices" and str(MAX_DEVICES) in info.value.expected
    parse(scenario([f"nvidia.com/gpu={i}" for i in range(MAX_DEVICES)]), "m.yaml")


@pytest.mark.parametrize("python", ["..", ".", "/dev/null", "/proc/self/exe", "/usr/bin/../bin/python3", "bash",
                                    "/bin/sh", "python3 -c 'import os'", "/opt/conda/bin/", "-c", "-python", "/dev/python3",
                                    "/opt/../python"])
def test_a_team_images_python_is_an_interpreter(tmp_path: Path, python: str) -> None:
    err = refused(project(tmp_path), f"  app:\n    image: team/app:1\n    python: \"{python}\"\n")
    assert err.field == "environments.app.python"


@pytest.mark.parametrize("python", ["python", "python3", "python3.12", "python3.13t", "pypy3", "team-python",
                                    "/usr/local/bin/team-python",
                                    "/opt/conda/bin/python", "/usr/local/bin/python3.11", "/venv/bin/python"])
def test_real_interpreters_pass(tmp_path: Path, python: str) -> None:
    m = read(project(tmp_path), f"  app:\n    image: team/app:1\n    python: \"{python}\"\n")
    assert m.environments[0].team.interpreter == python  # type: ignore[attr-defined]


@pytest.mark.parametrize("python", ["3.99", "3.5", "3.0", "3.15"])
def test_a_python_no_torch_is_built_for_is_refused(python: str) -> None:
    text = GOOD.replace("    variant: cu130\n", f"    variant: cu130\n    python: \"{python}\"\n", 1)
    with pytest.raises(MatrixError) as info:
        parse(text, "m.yaml")
    assert info.value.field.endswith(".python") and "no torch release" in info.value.expected
