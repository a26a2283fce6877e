"""tasks.py: 2 for bad input and 3 for an internal error, in one line; 1 stays a result, never a crash."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from invoke.context import Context
from invoke.exceptions import Exit

import tasks
from refenv import reproduce


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
    err = exit_of(tasks.fleet, matrix=str(tasks.ROOT / "matrix.yaml"), results=str(tmp_path))
    assert err.code == tasks.EXIT_INTERNAL and str(err.message).startswith("refenv: internal error: KeyError")
