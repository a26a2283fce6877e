"""The matrix's tasks: run it (`matrix`, one cell with `run`), read a comparison from a run (`compare`), build
its images (`build`) and lock their wheels (`lock`)."""

from __future__ import annotations

import functools
from pathlib import Path

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import guarded, load_matrix, say


@task(iterable=["env", "host", "scenario"], help={
    "matrix": "the matrix file (default: matrix.yaml)",
    "env": "environments to run (glob; repeat or comma-separate)",
    "host": "hosts to run (glob)",
    "scenario": "scenarios to run (glob)",
    "rerun": "run every cell again instead of reusing results whose inputs did not change",
    "parallel": "cells at once (default: run.parallel, else the number of cores)",
    "results": "where run folders go (default: results/)",
    "dry-run": "print each cell's expected verdict and stop (no Docker)",
    "relock": "re-resolve every environment's wheels before building",
    "probes": "quick | full | off (default: run.probes)",
    "verbose": "stream every build log line",
    "compare": "an environment to compare with: it runs too, and the summary says what changes on each host",
    "backend": "local | slurm | kubernetes: where the cells run (default: run.backend)",
    "max-cells": "confirm a run of more than 10,000 cells (refused without it): the number of cells it may have",
    "engine": "docker | podman: the local engine the cells run in (default: run.engine, else docker)",
    "low-disk": "build and judge one environment after another, removing each image it built once its cells are "
                "judged (a machine with little disk: `refenv disk` says when)",
})
@guarded
def matrix(c: Context, matrix: str = "matrix.yaml", env: list[str] | None = None, host: list[str] | None = None,
           scenario: list[str] | None = None, rerun: bool = False, parallel: int = 0, results: str = "results",
           dry_run: bool = False, relock: bool = False, probes: str | None = None, verbose: bool = False,
           compare: str | None = None, backend: str | None = None, max_cells: int = 0,
           engine: str | None = None, low_disk: bool = False) -> None:
    """Build every environment, run it on every host and scenario, and check predicted against observed."""
    from refenv.model.matrix import MODES
    from refenv.report.console import console_summary
    from refenv.report.ready import compare_lines
    from refenv.run.dryrun import predict, real_hosts
    from refenv.run.pipeline import Options, RunNotWritten, run_matrix
    from refenv.run.progress import ConsoleUI
    from refenv.run.stopping import stop_on_term

    if probes is not None and probes not in MODES:
        raise Exit(f"refenv: --probes {probes!r}: expected {', '.join(MODES)}", code=2)
    if not 0 <= parallel <= 1024:  # the bounds of run.parallel in matrix.yaml
        raise Exit(f"refenv: --parallel {parallel}: expected 0 (the number of cores) to 1024", code=2)
    if compare and env:
        env = [*env, compare]
    if engine is not None and engine not in ("docker", "podman"):
        raise Exit(f"refenv: --engine {engine!r}: expected docker or podman", code=2)
    if not 0 <= max_cells <= 100_000_000:
        raise Exit(f"refenv: --max-cells {max_cells}: expected a number of cells up to 100000000", code=2)
    from refenv.model.matrix import MAX_CELLS, check_size

    m = load_matrix(matrix, env, host, scenario)
    cells = check_size(m, max_cells or MAX_CELLS)
    where = backend or m.run.backend
    if dry_run:
        # A real host is read where its cells would run: this machine, a probe job, or a node's labels.
        for p in predict(m, real_hosts(m, where)):
            print(f"{p.spec.id:60s} {p.expected.verdict:18s} {p.expected.reason}" if p.expected
                  else f"{p.spec.id:60s} {'-':18s} {p.why_not}")
        return
    from refenv.engines.connect import engine_for, parallel_for

    ui = ConsoleUI(verbose=verbose)
    options = Options(results_root=Path(results).resolve(), parallel=parallel_for(where, cells, parallel),
                      use_cache=not rerun, relock=relock, probes=probes, one_at_a_time=low_disk,
                      selection={"env": env or [], "host": host or [], "scenario": scenario or []})
    try:
        with stop_on_term() as stopped:
            try:
                outcome = run_matrix(m, options, ui, engine_for(where, m, engine))
            finally:
                ui.close()
    except RunNotWritten as exc:  # the run ran, but its results have no room: what it found, then why
        if exc.document is not None:
            print(console_summary(exc.document, {}))
        raise Exit(f"refenv: {exc}", code=1) from None
    print(console_summary(outcome.document, outcome.written))
    if compare:
        for other in (e.name for e in m.environments if e.name != compare):
            print("\n".join(compare_lines(outcome.document, compare, other)) + "\n")
    if outcome.interrupted:
        raise Exit("interrupted: the partial report is written", code=stopped.exit_code)
    if not outcome.ok:
        raise Exit("some cells or measurements disagree or did not run as planned (see the report)", code=1)



@task(positional=["old", "new"], help={
    "old": "the environment used now", "new": "the environment to move to",
    "run": "a run folder or its cells.json (default: results/latest)",
})
@guarded
def compare(c: Context, old: str, new: str, run: str = "results/latest") -> None:
    """What moving from OLD to NEW changes on each host, read from a matrix run that ran both."""
    from refenv.model.rundoc import load_run
    from refenv.report.ready import compare_lines

    doc = load_run(Path(run))
    missing = [e for e in (old, new) if doc.environment(e) is None]
    if missing:
        known = ", ".join(e.name for e in doc.environments) or "none"
        raise Exit(f"refenv: run {doc.run.id} did not run {', '.join(missing)} (it ran: {known}); "
                   f"run `invoke matrix --env {new} --compare {old}`", code=2)
    print("\n".join(compare_lines(doc, old, new)))


@task(help={"env": "the environment", "host": "the host", "scenario": "the scenario",
            "matrix": "the matrix file", "rerun": "do not reuse a cached result",
            "engine": "docker | podman: the local engine (default: run.engine, else docker)"})
@guarded
def run(c: Context, env: str, host: str, scenario: str, matrix: str = "matrix.yaml", rerun: bool = False,
        engine: str | None = None) -> None:
    """Run one cell and print its diagnosis in full."""
    from harness.answer.text import public_text
    from harness.schema.envelope import CellDocument
    from refenv.report import measures
    from refenv.run.executor import read_document
    from refenv.run.judge import read_answer
    from refenv.run.pipeline import Options, run_matrix
    from refenv.run.progress import ConsoleUI

    m = load_matrix(matrix, [env], [host], [scenario])
    if len(m.environments) * len(m.hosts) * len(m.scenarios) != 1:
        raise Exit("name exactly one environment, host and scenario (no globs matching several)", code=2)
    from refenv.engines.connect import engine_for

    if engine is not None and engine not in ("docker", "podman"):
        raise Exit(f"refenv: --engine {engine!r}: expected docker or podman", code=2)
    ui = ConsoleUI()
    try:
        # Where matrix.yaml says cells run (run.backend), as `invoke matrix` does: a real host of a cluster
        # is a node there, not this machine.
        outcome = run_matrix(m, Options(results_root=Path("results").resolve(), use_cache=not rerun), ui,
                             engine_for(m.run.backend, m, engine))
    finally:
        ui.close()
    cell = outcome.document.cells[0]
    # The cell's own document: None when it is missing, not JSON, or not a document this refenv reads.
    doc = read_answer(CellDocument, read_document(Path(cell.result_path))) if cell.result_path else None
    if isinstance(doc, CellDocument) and doc.diagnosis is not None:
        print(public_text(doc.diagnosis))
    expected = cell.expected.verdict if cell.expected else None
    print(f"{cell.id}: {cell.status} (expected {expected}) — {cell.reason}")
    for line in measures.lines(outcome.document):  # the environment's, measured once for this cell too
        print(f"measured once: {line}")
    if cell.status != "PASS" or not outcome.ok:
        raise Exit(code=1)


@task(iterable=["env"], help={"env": "environments to build (glob)", "matrix": "the matrix file",
                              "relock": "re-resolve the wheels first", "verbose": "stream every log line"})
@guarded
def build(c: Context, env: list[str] | None = None, matrix: str = "matrix.yaml", relock: bool = False,
          verbose: bool = False) -> None:
    """Build (or find) each environment's image; unchanged environments are not rebuilt."""
    from refenv.builder.environment import build_environment
    from refenv.builder.team import team_image
    from refenv.engines.docker.sdk import Engine
    from refenv.model.builds import FAILED
    from refenv.run.progress import ConsoleUI

    m = load_matrix(matrix, env, None, None)
    engine = Engine.connect()
    ui, failed = ConsoleUI(verbose=verbose), []
    for e in m.environments:
        ui.stage(f"environment {e.name}")
        result = team_image(engine, e, ui.build_line) if e.team is not None else \
            build_environment(engine, m, e, ui.build_line, relock=relock)
        ui.build_done(result)
        if result.status == FAILED:
            failed.append(f"{e.name}: {result.error}")
    if failed:
        raise Exit("builds failed:\n  " + "\n  ".join(failed), code=1)


@task(iterable=["env"], help={"env": "environments to re-lock (glob)", "matrix": "the matrix file"})
@guarded
def lock(c: Context, env: list[str] | None = None, matrix: str = "matrix.yaml") -> None:
    """Re-resolve each environment's wheels on this host and rewrite locks/<environment>.json."""
    from refenv.builder.environment import get_lock

    m = load_matrix(matrix, env, None, None)
    for e in m.environments:
        if e.team is not None:
            print(f"{e.name}: a team's {e.source}: nothing to lock (its image holds what it installs)")
            continue
        result = get_lock(m, e, functools.partial(say, e.name), relock=True)
        print(f"{e.name}: {len(result.wheels)} wheels, lock {result.sha256[:16]}")

