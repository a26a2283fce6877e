"""matrix.yaml's team environments: `image:` and `dockerfile:` (with `context:`, `build_args:`), `python:` naming
the image's own interpreter; every mistake names its line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.errors import MatrixError
from refenv.model.matrix import DOCKERFILE, IMAGE, RECIPE
from refenv.model.matrix_yaml import parse

HEAD = "version: 1\nenvironments:\n"
TAIL = "hosts:\n  none: {kind: none}\nscenarios:\n  gpu: {gpus: all}\n"


def matrix(tmp_path: Path, body: str) -> str:
    path = tmp_path / "matrix.yaml"
    text = HEAD + body + TAIL
    path.write_text(text)
    return str(path)


def load(tmp_path: Path, body: str) -> object:
    path = matrix(tmp_path, body)
    return parse(Path(path).read_text(), path)


def test_an_image_environment_is_used_as_it_is_with_its_own_python(tmp_path: Path) -> None:
    m = load(tmp_path, "  app:\n    image: nvcr.io/nvidia/pytorch:24.10-py3\n    python: /usr/bin/python\n")
    (env,) = m.environments  # type: ignore[attr-defined]
    assert env.source == IMAGE and env.team.image == "nvcr.io/nvidia/pytorch:24.10-py3"
    assert env.team.interpreter == "/usr/bin/python"
    assert not env.known and env.cuda is None  # read from the image when the matrix runs


def test_a_dockerfile_environment_resolves_beside_the_matrix(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM scratch\n")
    m = load(tmp_path, "  app:\n    dockerfile: docker/Dockerfile\n    build_args: {BASE: \"team/base:1\", N: \"3\"}\n")
    (env,) = m.environments  # type: ignore[attr-defined]
    assert env.source == DOCKERFILE and env.team.interpreter == "python3"
    assert env.team.dockerfile == str(tmp_path / "docker" / "Dockerfile")
    assert env.team.context == str(tmp_path / "docker")
    assert env.team.build_args == (("BASE", "team/base:1"), ("N", "3"))


def test_a_recipe_environment_is_still_a_recipe(tmp_path: Path) -> None:
    m = load(tmp_path, "  cu130:\n    torch: \"2.14.1\"\n")
    assert [e.source for e in m.environments] == [RECIPE]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "field", "phrase"), [
    ("  app:\n    image: team/app:1\n    torch: \"2.14.1\"\n", "environments.app.torch", "takes its torch"),
    ("  app:\n    image: team/app:1\n    dockerfile: Dockerfile\n", "environments.app.dockerfile", "not both"),
    ("  app:\n    image: team/app:1\n    context: .\n", "environments.app.context", "used as it is"),
    ("  app:\n    image: \"--privileged\"\n", "environments.app.image", "not allowed"),
    ("  app:\n    image: team/app:1\n    python: \"python3 -c evil\"\n", "environments.app.python", "the image's Python"),
    ("  app:\n    image: team/app:1\n    python: \"-m\"\n", "environments.app.python", "the image's Python"),
    ("  app:\n    dockerfile: nowhere/Dockerfile\n", "environments.app.dockerfile", "is not a file"),
    ("  app:\n    dockerfile: Dockerfile\n    context: nowhere\n", "environments.app.context", "is not a folder"),
    ("  app:\n    dockerfile: Dockerfile\n    build_args: {\"A B\": x}\n", "environments.app.build_args", "name"),
    ("  app:\n    dockerfile: Dockerfile\n    build_args: {A: 3}\n", "environments.app.build_args.A", "string"),
    ("  app:\n    dockerfile: Dockerfile\n    build_args: {A: \"x\\ny\"}\n", "environments.app.build_args.A",
     "line break"),
    ("  cu130:\n    torch: \"2.14.1\"\n    build_args: {A: x}\n", "environments.cu130.build_args", "only a dockerfile"),
])
def test_mistakes_name_the_field(tmp_path: Path, body: str, field: str, phrase: str) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    with pytest.raises(MatrixError) as info:
        load(tmp_path, body)
    assert info.value.field.startswith(field), info.value
    assert phrase in info.value.expected, info.value
    assert info.value.line is not None
