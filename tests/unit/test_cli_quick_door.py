"""The `refenv` command's quick door for `refenv check` (refenv/cli.py): it reads a command line exactly as the
program (invoke's parser over the task collection) does or leaves it to the program, it gives the same answer as
the program's task, and it imports no invoke. Also: the program's help shows every flag's help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from refenv.cli import quick_check

ROOT = Path(__file__).resolve().parents[2]
REFENV = [sys.executable, "-c", "from refenv.cli import main; main()"]

PLAIN = [
    ["check"],
    ["check", "Dockerfile"],
    ["check", "--json"],
    ["check", "-j", "-n", "sub/Dockerfile"],
    ["check", "--drivers", "535,570", "matrix.yaml"],
    ["check", "--drivers=580"],
    ["check", "-d", "580", "--no-inspect", "--json", "Dockerfile"],
    ["check", "-d=470"],
    ["check", "matrix"],  # a path named like a task is still the path
    ["check", ""],
]
PROGRAMS_OWN = [
    ["check", "--path=Dockerfile"],
    ["check", "-p", "Dockerfile"],
    ["check", "-jn"],
    ["check", "--json", "--json"],
    ["check", "a", "b"],
    ["check", "--drivers"],
    ["check", "--drivers", "-j"],
    ["check", "--help"],
    ["check", "-h"],
    ["check", "--", "x"],
    ["--echo", "check"],
    ["matrix"],
    [],
]


def program_reading(args: list[str]) -> dict[str, object]:
    """The check task's arguments as the program parses `refenv ARGS`."""
    from refenv.program import Program
    from refenv.tasks import ns

    program = Program(name="refenv", binary="refenv", namespace=ns)
    program.create_config()
    program.parse_core(["refenv", *args])
    program.parse_collection()
    program.parse_tasks()
    [call] = program.tasks
    values = {a.attr_name or a.name: a.value for a in dict(call.args).values()}
    return {"path": values["path"] or "", "drivers": values["drivers"], "as_json": values["json"],
            "no_inspect": values["no_inspect"]}


@pytest.mark.parametrize("args", PLAIN, ids=" ".join)
def test_the_door_reads_a_plain_check_as_the_program_does(args: list[str]) -> None:
    assert quick_check(args) == program_reading(args)


@pytest.mark.parametrize("args", PROGRAMS_OWN, ids=" ".join)
def test_every_other_form_is_left_to_the_program(args: list[str]) -> None:
    assert quick_check(args) is None


def refenv(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REFENV, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("dockerfile", [
    "FROM python:3.11-slim\nRUN pip install torch==2.13.0+cpu\n",
    "FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04\nRUN pip install torch==2.14.1\nENV CUDA_VISIBLE_DEVICES=\"\"\n",
    "RUN pip install torch\n",  # no FROM: bad input
])
def test_both_doors_give_the_same_answer(tmp_path: Path, dockerfile: str) -> None:
    (tmp_path / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    quick = refenv(["check", "--no-inspect", "--json", "--drivers", "470,580", "Dockerfile"], tmp_path)
    program = refenv(["check", "--no-inspect", "--json", "--drivers", "470,580", "--path", "Dockerfile"], tmp_path)
    assert (quick.returncode, quick.stderr) == (program.returncode, program.stderr)
    assert quick.returncode in (0, 1, 2) and "Traceback" not in quick.stderr
    if quick.returncode != 2:
        assert json.loads(quick.stdout) == json.loads(program.stdout)


def test_the_door_imports_no_invoke(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nRUN pip install torch==2.14.1\n", encoding="utf-8")
    code = ("import sys\nsys.argv = ['refenv', 'check', '--no-inspect', 'Dockerfile']\nfrom refenv.cli import main\n"
            "try:\n    main()\nexcept SystemExit as done:\n"
            "    print('exit', done.code, sorted(m for m in sys.modules if m.split('.')[0] == 'invoke'), "
            "file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.stderr.strip().splitlines()[-1] == "exit 0 []", done.stderr[-1000:]


@pytest.mark.parametrize("words", [["--help", "check"], ["check", "--help"]])
def test_the_program_s_help_shows_each_flag_s_help(tmp_path: Path, words: list[str]) -> None:
    """invoke pops a task's flag help as it builds the parser; the program builds it twice and keeps the help."""
    done = refenv(words, tmp_path)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "the driver branches to predict for" in text and "never ask the engine" in text, done.stdout


def test_parsing_a_command_line_leaves_every_task_s_help_in_place() -> None:
    """The command reference (refenv/reference.py) and a second parser read the help after a parse in one process."""
    from refenv.tasks import ns

    before = {name: dict(ns[name].help) for name in ns.task_names}
    program_reading(["check", "--json"])
    program_reading(["check"])
    assert {name: dict(ns[name].help) for name in ns.task_names} == before
    assert set(before["check"]) == {"path", "drivers", "json", "no_inspect"}
