"""A team's Dockerfile image is tagged by what the build sees: the Dockerfile, the context (.dockerignore applied)
and the build arguments (refenv/builder/team.py)."""

from __future__ import annotations

from pathlib import Path

from refenv.builder.team import context_files, dockerfile_digest
from refenv.model.matrix import DOCKERFILE, TeamImage


def team(tmp_path: Path, args: tuple[tuple[str, str], ...] = ()) -> TeamImage:
    return TeamImage(DOCKERFILE, dockerfile=str(tmp_path / "Dockerfile"), context=str(tmp_path), build_args=args)


def test_dockerignore_leaves_files_out_of_the_context(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM base\nCOPY . /app\n")
    (tmp_path / "app.py").write_text("print(1)\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "weights.bin").write_bytes(b"\0" * 10)
    (tmp_path / "notes.log").write_text("x")
    (tmp_path / ".dockerignore").write_text("# comment\ndata\n*.log\n")
    assert context_files(tmp_path) == [".dockerignore", "Dockerfile", "app.py"]


def test_the_digest_follows_the_dockerfile_the_context_and_the_arguments(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM base\n")
    (tmp_path / "app.py").write_text("print(1)\n")
    first = dockerfile_digest(team(tmp_path), context_files(tmp_path))
    assert dockerfile_digest(team(tmp_path), context_files(tmp_path)) == first
    assert dockerfile_digest(team(tmp_path, (("BASE", "x"),)), context_files(tmp_path)) != first
    (tmp_path / "app.py").write_text("print(2)\n")
    second = dockerfile_digest(team(tmp_path), context_files(tmp_path))
    assert second != first
    (tmp_path / "Dockerfile").write_text("FROM base2\n")
    assert dockerfile_digest(team(tmp_path), context_files(tmp_path)) not in (first, second)
