"""tasks.py: 2 for bad input and 3 for an internal error, in one line; 1 stays a result, never a crash."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from invoke.context import Context
from invoke.exceptions import Exit

from refenv import reproduce, tasks

ROOT = Path(__file__).resolve().parents[2]


def exit_of(task: object, **kwargs: object) -> Exit:
    with pytest.raises(Exit) as info:
        task(Context(), **kwargs)  # type: ignore[operator]
    assert "\n" not in str(info.value.message or ""), info.value.message
    return info.value


@pytest.mark.parametrize("torch", ["２.1.0+cu121", "2.1.0\n"])
def test_a_bad_flag_exits_2(torch: str) -> None:
    assert exit_of(tasks.reproduce, report="flags", torch=torch).code == 2


def test_a_malformed_matrix_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("version: 1\nenvironments:\n  Torch-UPPER: {torch: '2.14.1'}\nhosts: {}\nscenarios: {}\n")
    err = exit_of(tasks.matrix, matrix=str(bad), dry_run=True)
    assert err.code == 2 and "m.yaml:3: environments" in str(err.message)


def test_an_unknown_probes_mode_exits_2_before_anything_runs() -> None:
    err = exit_of(tasks.matrix, probes="bogus", dry_run=True)
    assert err.code == 2 and "--probes 'bogus'" in str(err.message)


def test_an_unknown_engine_exits_2_before_anything_runs() -> None:
    err = exit_of(tasks.matrix, engine="lxc", dry_run=True)
    assert err.code == 2 and "--engine 'lxc': expected docker or podman" in str(err.message)


@pytest.mark.parametrize("parallel", [-3, 100_000])
def test_a_parallel_out_of_bounds_exits_2(parallel: int) -> None:
    err = exit_of(tasks.matrix, parallel=parallel, dry_run=True)
    assert err.code == 2 and f"--parallel {parallel}" in str(err.message)


def test_a_real_host_named_cpu_is_refused(tmp_path: Path) -> None:
    # Its GPU measurement would be ENV/cpu, the id (and folder) of the environment's CPU measurement.
    bad = tmp_path / "m.yaml"
    bad.write_text("version: 1\nenvironments:\n  e: {torch: '2.14.1', variant: cu130}\nhosts:\n  cpu: {kind: real}\n"
                   "scenarios:\n  gpu: {gpus: all}\n")
    err = exit_of(tasks.matrix, matrix=str(bad), dry_run=True)
    assert err.code == 2 and "m.yaml:5: hosts.cpu: a real host cannot be named cpu" in str(err.message)


def test_standard_input_is_read_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 16_000_001)))
    err = exit_of(tasks.reproduce, report="-")
    assert err.code == 2 and "standard input: longer than" in str(err.message)


def test_an_unforeseen_exception_exits_3_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise KeyError("gpus")
    monkeypatch.setattr(reproduce, "from_flags", broken)
    err = exit_of(tasks.reproduce, report="flags", torch="2.1.0+cu121")
    assert err.code == tasks.EXIT_INTERNAL == 3 and str(err.message).startswith("refenv: internal error: KeyError")


def test_fleet_too_exits_3_on_an_unforeseen_exception(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from refenv.engines.slurm import probe

    def broken(*_: object, **__: object) -> None:
        raise KeyError("nodes")
    monkeypatch.setattr(probe, "probe_nodes", broken)
    err = exit_of(tasks.fleet, matrix=str(ROOT / "matrix.yaml"), results=str(tmp_path))
    assert err.code == tasks.EXIT_INTERNAL and str(err.message).startswith("refenv: internal error: KeyError")


# ---- usage errors through the program itself (refenv/cli.py: what `./go invoke` and `refenv` run) ----------

def run_program(*words: str) -> subprocess.CompletedProcess[str]:
    """invoke's parser and program for real, in a subprocess over the checkout's tasks.py."""
    return subprocess.run([sys.executable, "-m", "refenv.cli", "--as", "invoke", *words], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize(("words", "task", "phrase"), [
    (["matrix", "--engine"], "matrix", "--engine needs a value"),
    (["matrix", "--engine", "docker", "--engine", "podman"], "matrix", "--engine is given twice"),
    (["matrix", "--engine=docker", "-n", "podman"], "matrix", "is given twice"),
    (["matrix", "--dry-run", "--dry-run"], "matrix", "--dry-run is given twice"),
    (["matrix", "--no-such-flag"], "matrix", "No idea what '--no-such-flag' is"),
    (["check", "--no-such-flag"], "check", "No idea what '--no-such-flag' is"),  # not read as the file to check
    (["check", "Dockerfile", "-x"], "check", "No idea what '-x' is"),
    (["compare", "old", "--nope=1", "new"], "compare", "No idea what '--nope=1' is"),
    (["run"], "run", "did not receive required positional arguments"),
    (["no-such-task"], None, "No idea what 'no-such-task' is"),
    (["--no-such-core-flag"], None, "No idea what '--no-such-core-flag' is"),
])
def test_a_usage_error_exits_2_with_the_usage_line(words: list[str], task: str | None, phrase: str) -> None:
    done = run_program(*words)
    assert done.returncode == 2, done.stderr
    assert phrase in done.stderr and "Traceback" not in done.stderr
    usage = f"Usage: invoke [--core-opts] {task or 'TASK'} [--options]"
    assert usage in done.stderr


def test_the_program_lists_the_tasks_and_exits_0() -> None:
    done = run_program("--list")
    assert done.returncode == 0 and "matrix" in done.stdout


def test_a_list_flag_may_repeat_and_a_value_may_look_like_a_task() -> None:
    from invoke.collection import Collection

    from refenv.program import repeated, task_contexts

    contexts = {c.name: c for c in task_contexts(Collection.from_module(tasks), None) if c.name}
    assert repeated(["matrix", "--env", "a", "--env", "b", "--host=r5*", "--host", "x"], contexts) is None
    assert repeated(["matrix", "--matrix", "run", "--engine", "docker"], contexts) is None  # 'run' is a value
    assert repeated(["matrix", "--dry-run", "run", "--rerun", "e", "h", "s", "--rerun"], contexts) == ("run", "--rerun")
    assert repeated(["matrix", "--", "--dry-run", "--dry-run"], contexts) is None
    assert repeated(["check", "compare", "--json", "-j"], contexts) == ("check", "-j")  # compare is check's file


@pytest.mark.parametrize("words", [["check", "--help"], ["check", "Dockerfile", "-h"], ["compare", "-h"],
                                   ["run", "--help"], ["matrix", "--help"]])
def test_help_after_a_task_shows_its_help_even_where_it_takes_a_positional_argument(words: list[str]) -> None:
    done = run_program(*words)
    assert done.returncode == 0, done.stderr
    assert f"Usage: invoke [--core-opts] {words[0]} " in done.stdout and "Docstring:" in done.stdout, done.stdout


def test_known_flags_joined_valued_or_after_double_dash_are_no_unknown_flag() -> None:
    from invoke.collection import Collection

    from refenv.program import task_contexts, unknown_flag

    contexts = {c.name: c for c in task_contexts(Collection.from_module(tasks), None) if c.name}
    for words in (["check", "-jn", "Dockerfile"], ["check", "--drivers", "-", "x"], ["check", "--drivers=5", "x"],
                  ["check", "--", "--anything"], ["matrix", "--no-such-flag"]):
        assert unknown_flag(words, contexts) is None, words
    assert unknown_flag(["check", "--drivers", "535", "--bogus"], contexts) == ("check", "--bogus")
    # a flag's value named like a task is the value, in a task without positional arguments too
    assert unknown_flag(["summary", "--run", "run", "--baseline", "nope"], contexts) is None
    # a file named like a task is the file: the flags after it are still check's
    assert unknown_flag(["check", "compare", "--json"], contexts) is None
    assert unknown_flag(["check", "compare", "--old"], contexts) == ("check", "--old")


def test_help_after_double_dash_is_the_task_s_own() -> None:
    from invoke.collection import Collection

    from refenv.program import help_asked, task_contexts

    contexts = {c.name: c for c in task_contexts(Collection.from_module(tasks), None) if c.name}
    assert help_asked(["check", "--help"], contexts) == "check"
    assert help_asked(["compare", "old", "-h"], contexts) == "compare"
    assert help_asked(["check", "--", "--help"], contexts) is None
    assert help_asked(["--help"], contexts) is None  # the program's own help, invoke's


def test_the_refenv_command_is_the_same_program() -> None:
    script = Path(sys.executable).parent / "refenv"
    assert script.is_file(), "the refenv console script (pyproject [project.scripts]) is installed with the project"
    done = subprocess.run([str(script), "matrix", "--engine"], cwd=ROOT, text=True, capture_output=True, timeout=120,
                          check=False)
    assert done.returncode == 2 and "Usage: refenv [--core-opts] matrix" in done.stderr


def test_the_refenv_command_works_in_a_folder_of_its_own(tmp_path: Path) -> None:
    """`refenv` carries its task collection: in a folder with no tasks.py it reads ./matrix.yaml (here a dry run,
    no engine) and writes nothing there but what it was asked to."""
    script = Path(sys.executable).parent / "refenv"
    (tmp_path / "matrix.yaml").write_text((ROOT / "matrix.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run([str(script), "matrix", "--dry-run", "--env", "torch-2.13.0-cpu", "--host", "none"],
                          cwd=tmp_path, text=True, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "torch-2.13.0-cpu/none/" in done.stdout and "CPU_WHEEL" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.yaml"]
    version = subprocess.run([str(script), "--version"], cwd=tmp_path, text=True, capture_output=True, timeout=60,
                             check=False)
    assert version.returncode == 0 and version.stdout.startswith("refenv ")


def test_the_checkout_collection_is_the_program_s_plus_its_test_and_docs_tasks() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("checkout_tasks", ROOT / "tasks.py")
    assert spec is not None and spec.loader is not None
    checkout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checkout)
    assert set(checkout.ns.task_names) == {*tasks.ns.task_names, "test", "docs"}
    assert all(checkout.ns.tasks[name] is tasks.ns.tasks[name] for name in tasks.ns.task_names)
