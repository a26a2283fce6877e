"""`refenv check` on hostile input, as a user's shell runs it: a 5 MB Dockerfile, an unterminated heredoc, ARGs
that grow without end, binary bytes, a missing file. Each is a clear error naming the file, exit 2, no traceback;
and the pre-commit hook's own entry (.pre-commit-hooks.yaml) runs as pre-commit runs it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
REFENV = [sys.executable, "-c", "from refenv.cli import main; main()"]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REFENV, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def doubling_args(n: int) -> str:
    return "ARG A=ab\n" + "".join("ARG A=$A$A\n" for _ in range(n)) + "FROM python:3.11\n"


@pytest.mark.parametrize(("name", "data", "words"), [
    ("huge", b"FROM python:3.11\n" + b"RUN echo " + b"x" * (5 << 20) + b"\n", "more than the"),
    ("heredoc", b"FROM python:3.11\nRUN <<EOF\npip install torch==2.6.0\n", "unterminated heredoc"),
    ("arg-loop", doubling_args(40).encode(), "grows past"),
    ("binary", b"FROM python:3.11\n\x7fELF\x00\x01\x02", "NUL byte"),
    ("latin1", b"FROM python:3.11\nLABEL a=\xe9\n", "not UTF-8"),
    ("no-from", b"RUN pip install torch\n", "no FROM"),
    ("from-var", b"ARG BASE\nFROM ${BASE}\n", "FROM names no image"),
])
def test_hostile_dockerfiles_are_bad_input(tmp_path: Path, name: str, data: bytes, words: str) -> None:
    (tmp_path / "Dockerfile").write_bytes(data)
    done = run(["check", "--no-inspect", "Dockerfile"], tmp_path)
    assert done.returncode == 2, (done.stdout[-500:], done.stderr[-500:])
    assert "Traceback" not in done.stderr + done.stdout
    assert "Dockerfile" in done.stderr and words in done.stderr


def test_a_missing_file_and_a_bad_flag_are_bad_input(tmp_path: Path) -> None:
    for args in (["check", "nothing-here"], ["check"], ["check", "--drivers", "999", "x"]):
        done = run(args, tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)


def test_a_cpu_pin_exits_1_and_a_good_one_0_with_json(tmp_path: Path) -> None:
    import json

    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nRUN pip install torch==2.13.0+cpu\n")
    bad = run(["check", "--no-inspect", "--json", "--drivers", "580"], tmp_path)
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["status"] == "not good"
    assert {c["verdict"] for c in doc["environments"][0]["cells"] if c["scenario"] == "gpu"} == {"CPU_WHEEL"}
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nRUN pip install torch==2.14.1\n")
    good = run(["check", "--no-inspect", "--drivers", "580"], tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "torch would get a GPU on r580 (simulated)" in good.stdout


def test_the_pre_commit_hook_runs_as_pre_commit_runs_it(tmp_path: Path) -> None:
    """pre-commit runs `entry` (plus file names when pass_filenames) in the repository's root, for changed files
    that match `files`: the hook's own declaration, run the same way."""
    hook = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))[0]
    changed = ["Dockerfile", "docker/gpu.Dockerfile", "requirements-gpu.txt", "src/app.py", "matrix.yaml"]
    matched = [f for f in changed if re.search(hook["files"], f)]
    assert matched == ["Dockerfile", "docker/gpu.Dockerfile", "requirements-gpu.txt", "matrix.yaml"]
    (tmp_path / "requirements-gpu.txt").write_text("torch==2.14.1\n")
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY requirements-gpu.txt /r.txt\n"
                                         "RUN pip install -r /r.txt\n")
    entry = shlex.split(hook["entry"])
    assert entry[:2] == ["refenv", "check"] and hook["pass_filenames"] is False
    done = run(entry[1:], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "requirements-gpu.txt").write_text("torch==2.14.1\ntorchvision==0.28.0\n")
    done = run(entry[1:], tmp_path)
    assert done.returncode == 1 and "requirements-gpu.txt:2: error" in done.stdout
