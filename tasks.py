"""refenv's tasks. Each one parses its arguments, calls refenv, prints, and raises Exit on expected errors.

  invoke matrix             build every environment, run every cell, check expected against observed
  invoke matrix --env NEW --compare OLD      the same, and what moving from OLD to NEW changes on each host
  invoke compare OLD NEW    that comparison, read from the latest run
  invoke run --env E --host H --scenario S   one cell, with its full diagnosis
  invoke build [--env E]    build (or find) the environment images
  invoke lock [--env E]     re-resolve the wheels of an environment and rewrite its lock
  invoke reproduce REPORT    rebuild a user's stack from a pasted report (or `flags --torch ...`) on a simulated host
  invoke publish --registry HOST[:PORT]/NAMESPACE   push the environments a full matrix run proved (GPU somewhere)
  invoke fleet [--partition P]   per node of a Slurm (or Kubernetes) cluster: driver, GPUs, ready environments
  invoke clean              remove every container and image refenv made
  invoke zipapp             write dist/refenv-diagnose.pyz: the harness as one file for any Python 3.8+
  invoke web                write dist/web/: the paste page, diagnosing in the browser (Pyodide)
  invoke test               ruff, mypy, the docs site, then the test tiers (unit, docker, slurm, browser; gpu if any)
  invoke docs               write the command reference from the parsers, then build the documentation site

Exit codes, on every task: 0 done; 1 a result that is not good (cells that disagree, a failed build, a
reproduction that did not reproduce); 2 bad input (a malformed matrix.yaml, report or flag); 3 an internal
error (an exception no check foresaw: a bug in refenv, reported in one line).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit, UnexpectedExit
from invoke.tasks import task

ROOT = Path(__file__).resolve().parent


def _matrix(path: str, env: list[str] | None, host: list[str] | None, scenario: list[str] | None):  # type: ignore[no-untyped-def]
    from refenv.model.matrix import select
    from refenv.model.matrix_yaml import load

    return select(load(path), env or None, host or None, scenario or None)


def _say(prefix: str, line: str) -> None:
    print(f"{prefix}: {line}")


EXIT_INTERNAL = 3
P = ParamSpec("P")
R = TypeVar("R")


def _guarded(body: Callable[P, R]) -> Callable[P, R]:
    """A task whose unforeseen exceptions exit 3 in one line, never 1 with a traceback (1 is a verdict)."""
    @functools.wraps(body)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        from harness.inputs import InputError, shorten
        from refenv.errors import RefenvError

        try:
            return body(*args, **kwargs)
        except (Exit, KeyboardInterrupt, SystemExit):
            raise
        except UnexpectedExit as exc:  # a command the task ran (pytest, ruff) failed: its status, not a bug
            raise Exit(f"refenv: `{exc.result.command}` exited {exc.result.exited}",
                       code=exc.result.exited or 1) from None
        except (InputError, RefenvError) as exc:  # bad input, or an expected failure refenv explains
            raise Exit(f"refenv: {exc}", code=2) from None
        except Exception as exc:
            raise Exit(f"refenv: internal error: {type(exc).__name__}: {shorten(str(exc), 200)} (please report this)",
                       code=EXIT_INTERNAL) from None
    return guarded


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
})
@_guarded
def matrix(c: Context, matrix: str = "matrix.yaml", env: list[str] | None = None, host: list[str] | None = None,
           scenario: list[str] | None = None, rerun: bool = False, parallel: int = 0, results: str = "results",
           dry_run: bool = False, relock: bool = False, probes: str | None = None, verbose: bool = False,
           compare: str | None = None, backend: str | None = None, max_cells: int = 0,
           engine: str | None = None) -> None:
    """Build every environment, run it on every host and scenario, and check predicted against observed."""
    from refenv.model.matrix import MODES
    from refenv.report.console import console_summary
    from refenv.report.ready import compare_lines
    from refenv.run.dryrun import predict, real_hosts
    from refenv.run.pipeline import Options, RunNotWritten, run_matrix
    from refenv.run.progress import ConsoleUI

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

    m = _matrix(matrix, env, host, scenario)
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
                      use_cache=not rerun, relock=relock, probes=probes,
                      selection={"env": env or [], "host": host or [], "scenario": scenario or []})
    try:
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
        raise Exit("interrupted: the partial report is written", code=130)
    if not outcome.ok:
        raise Exit("some cells or measurements disagree or did not run as planned (see the report)", code=1)


@task(iterable=["env"], help={
    "partition": "the Slurm partition whose nodes to probe (default: every node)",
    "matrix": "the matrix whose environments are judged (default: matrix.yaml)",
    "env": "only these environments (repeat; default: all of the matrix)",
    "backend": "slurm (a probe job per node) or kubernetes (every GPU node, read from its GFD labels)",
    "results": "where the probes' documents go (default: results/fleet)",
})
@_guarded
def fleet(c: Context, partition: str | None = None, matrix: str = "matrix.yaml", env: list[str] | None = None,
          backend: str = "slurm", results: str = "results/fleet") -> None:
    """Per node of the cluster: driver, GPUs, and which environments can use them, or what the node needs."""
    from refenv import fleet as fleet_view
    from refenv.engines.slurm.probe import probe_nodes

    if backend not in ("slurm", "kubernetes"):
        raise Exit(f"refenv: invoke fleet reads Slurm or Kubernetes nodes, not {backend!r}", code=2)
    m = _matrix(matrix, env, None, None)
    if backend == "kubernetes":
        from refenv.engines.connect import kube_api
        from refenv.engines.kubernetes.nodes import node_probes

        probes = node_probes(kube_api())
    else:
        probes = probe_nodes(Path(results).resolve() / _stamp(), partition)
    if not probes:
        raise Exit(f"refenv: no node is up{f' in partition {partition}' if partition else ''}", code=1)
    reports = [fleet_view.report(p, m.environments) for p in probes]
    for r in reports:
        print("\n".join(fleet_view.lines(r)) + "\n")
    for e in m.environments:
        print(f"{e.name} needs: " + "; ".join(fleet_view.needs(reports, e.name)))


def _stamp() -> str:
    import datetime

    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


@task(positional=["old", "new"], help={
    "old": "the environment used now", "new": "the environment to move to",
    "run": "a run folder or its cells.json (default: results/latest)",
})
@_guarded
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
@_guarded
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

    m = _matrix(matrix, [env], [host], [scenario])
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
@_guarded
def build(c: Context, env: list[str] | None = None, matrix: str = "matrix.yaml", relock: bool = False,
          verbose: bool = False) -> None:
    """Build (or find) each environment's image; unchanged environments are not rebuilt."""
    from refenv.builder.environment import build_environment
    from refenv.builder.team import team_image
    from refenv.engines.docker.sdk import Engine
    from refenv.model.builds import FAILED
    from refenv.run.progress import ConsoleUI

    m = _matrix(matrix, env, None, None)
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
@_guarded
def lock(c: Context, env: list[str] | None = None, matrix: str = "matrix.yaml") -> None:
    """Re-resolve each environment's wheels on this host and rewrite locks/<environment>.json."""
    from refenv.builder.environment import get_lock

    m = _matrix(matrix, env, None, None)
    for e in m.environments:
        if e.team is not None:
            print(f"{e.name}: a team's {e.source}: nothing to lock (its image holds what it installs)")
            continue
        result = get_lock(m, e, functools.partial(_say, e.name), relock=True)
        print(f"{e.name}: {len(result.wheels)} wheels, lock {result.sha256[:16]}")


@task(help={"cache": "also delete refenv's caches (wheelhouse, simulated driver, cell results)",
            "keep-images": "remove containers only",
            "stale": "remove only environment images superseded by a newer build of the same environment"})
@_guarded
def clean(c: Context, cache: bool = False, keep_images: bool = False, stale: bool = False) -> None:
    """Remove every container and image labelled by refenv (and, with --cache, its caches)."""
    from refenv import paths
    from refenv.engines.docker.sdk import Engine
    from refenv.engines.docker.sdk import stale as stale_ids
    from refenv.model.labels import MANAGED

    engine = Engine.connect()
    removed = engine.remove_containers({MANAGED: "true"})
    print(f"removed {removed} container(s)")
    if stale:
        old = [i for kind in ("environment", "deps")
               for i in stale_ids(engine.image_records({MANAGED: "true", "refenv.kind": kind}))]
        removed_ids = [image_id for image_id in old if engine.remove_unused_image(image_id)]
        kept = len(old) - len(removed_ids)
        print(f"removed {len(removed_ids)} superseded image(s)"
              + (f"; kept {kept} that a newer build still stands on" if kept else ""))
        return
    if not keep_images:
        # Environment images first, then the layers they stand on.
        ids = engine.images_labelled({MANAGED: "true"})
        for kind in ("environment", "release", "deps", "base"):
            for image_id in engine.images_labelled({MANAGED: "true", "refenv.kind": kind}):
                engine.remove_image(image_id)
        print(f"removed {len(ids)} image(s)")
    if shutil.which("podman"):
        # What runs with --engine podman left in Podman's storage: its containers, and the images copied there.
        from refenv.engines.podman.engine import remove_labelled

        containers, images = remove_labelled({MANAGED: "true"}, images=not keep_images)
        print(f"podman: removed {containers} container(s), {images} image(s)")
    if cache:
        # The wheelhouse and the build root too where REFENV_WHEELHOUSE / REFENV_BUILDROOT keep them elsewhere.
        for folder in dict.fromkeys((paths.cache_root(), paths.wheelhouse(), paths.build_root())):
            if folder.exists():
                shutil.rmtree(folder)
                print(f"removed {folder}")


def _has_gpu() -> bool:
    """Whether nvidia-smi lists a GPU here (the gpu tier needs a real one)."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU " in out.stdout


@task(help={"tier": "unit, docker, podman, slurm, browser, breadth, gpu, or all (default: unit, docker, podman, "
                    "slurm, browser and breadth, and gpu where a GPU is)",
            "k": "pytest -k expression", "x": "stop at the first failure",
            "lint": "run ruff check, mypy (strict, as pyproject.toml sets) and `mkdocs build --strict` first "
                    "(default: yes)"})
@_guarded
def test(c: Context, tier: str = "default", k: str = "", x: bool = False, lint: bool = True) -> None:
    """Lint and type-check, build the docs site strictly, then run the tests.

    With CI=true a missing Docker engine, Slurm cluster or Chromium fails its tier instead of skipping it."""
    if lint:
        # The guardrails first: a finding stops here, before minutes of containers (`--no-lint` skips them).
        c.run(f"{sys.executable} -m ruff check .", pty=False)
        c.run(f"{sys.executable} -m mypy", pty=False)
        _build_site(c, None)
    if tier == "default":
        tier = "all" if _has_gpu() else "nogpu"
        if tier == "nogpu":
            print("refenv test: unit, docker, podman, slurm and browser tiers; the gpu tier is not run here "
                  "(no GPU: nvidia-smi lists none)")
    markers = {"unit": "not docker and not gpu and not slurm and not browser and not podman and not breadth",
               "docker": "docker", "podman": "podman", "slurm": "slurm", "browser": "browser", "breadth": "breadth",
               "gpu": "gpu", "nogpu": "not gpu", "all": ""}.get(tier)
    if markers is None:
        raise Exit(f"unknown tier {tier!r}: unit, docker, podman, slurm, browser, breadth, gpu, default or all",
                   code=2)
    if tier in ("slurm", "nogpu", "all"):
        _slurm_up(c)
    args = [sys.executable, "-m", "pytest", "tests"]
    if markers:
        args += ["-m", markers]
    if k:
        args += ["-k", k]
    if x:
        args += ["-x"]
    c.run(" ".join(f"'{a}'" if " " in a else a for a in args), pty=False, env={"PYTHONPATH": str(ROOT)})


def _build_site(c: Context, out: str | None) -> None:
    """`mkdocs build --strict` (a broken link or page fails it) into `out`, or into a folder thrown away after."""
    import tempfile

    env = {"NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, on every build
    with tempfile.TemporaryDirectory(prefix="refenv-site-") as tmp:
        site = out or tmp
        c.run(f"{sys.executable} -m mkdocs build --strict --config-file {ROOT / 'mkdocs.yml'} "
              f"--site-dir {site}", pty=False, env=env)


def _slurm_up(c: Context) -> None:
    """The slurm tier's single-node cluster (.ci/slurm-up installs and starts it); under CI a failure stops
    here, elsewhere the tier then skips and says why."""
    done = c.run(str(ROOT / ".ci" / "slurm-up"), pty=False, warn=True)
    if done is not None and done.ok:
        return
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise Exit("refenv test: CI=true and the Slurm cluster did not come up (.ci/slurm-up)", code=1)
    print("refenv test: no Slurm cluster here (.ci/slurm-up failed); the slurm tier will skip")


@task(positional=["report"], iterable=["gpu"], help={
    "report": "a file holding what was pasted (`python -m torch.utils.collect_env`, torch's warnings and "
              "tracebacks, nvidia-smi, install commands, prose) or a saved `harness diagnose --json` document; '-' "
              "reads standard input; the word 'flags' describes the stack with --torch ...",
    "torch": "with REPORT 'flags': the torch build, e.g. 2.1.0+cu121 (or 2.1.0 for PyPI's default build)",
    "driver": "with --torch: the Linux driver version, e.g. 470.182.03 (none given: a host without a driver)",
    "gpu": "with --torch: a GPU name, e.g. 'Tesla T4' or '2 x NVIDIA A100-SXM4-80GB' (up to 16 of a name; repeat "
           "for more: at most 16 times, 64 GPUs in all)",
    "cuda-visible-devices": "with --torch: CUDA_VISIBLE_DEVICES as set on that machine (\"\" for empty)",
    "python": "with --torch: the Python, e.g. 3.10",
    "no-gpus": "with --torch: the container was started without GPU access",
    "fault": "with --torch: mismatch, not-loaded, stub, cuinit-3, cuinit-803, cuinit-804, cuinit-999 or cuinit-hang",
    "verify-fix": "apply the fix (wheel, driver or scenario) and show that the cell turns OK",
    "fix": "which fix of DRIVER_TOO_OLD to verify: auto (the driver), driver or wheel",
    "matrix": "the matrix whose environments and base a reproduction reuses (default: matrix.yaml)",
    "results": "where the runs' folders go (default: results/reproduce)",
    "rerun": "run the cells again instead of reusing results whose inputs did not change",
    "verbose": "stream every build log line",
})
@_guarded
def reproduce(c: Context, report: str, torch: str | None = None, driver: str | None = None,
              gpu: list[str] | None = None, cuda_visible_devices: str | None = None, python: str | None = None,
              no_gpus: bool = False, fault: str | None = None, verify_fix: bool = False, fix: str = "auto",
              matrix: str = "matrix.yaml", results: str = "results/reproduce", rerun: bool = False,
              verbose: bool = False) -> None:
    """Rebuild a user's stack from their report (or flags), run it on a simulated host, show reported vs reproduced."""
    from harness.inputs import read_stream
    from harness.intake import ReportError, load_report
    from harness.intake.clean import MAX_CHARS
    from refenv.reproduce import ReproduceError, from_flags, infer
    from refenv.reproduce.account import render, succeeded
    from refenv.reproduce.execute import Settings
    from refenv.reproduce.execute import reproduce as run_reproduction
    from refenv.run.progress import ConsoleUI

    report_cap = MAX_CHARS * 4  # the bound load_report puts on a report file
    flags = report == "flags"
    if flags != bool(torch):
        raise Exit("refenv reproduce: give a REPORT file, or the word 'flags' with --torch VERSION (and --driver, "
                   "--gpu, ...): `invoke reproduce flags --torch 2.1.0+cu121 --driver 470.182.03`", code=2)
    if fix not in ("auto", "driver", "wheel"):
        raise Exit(f"refenv: --fix {fix!r}: expected auto, driver or wheel", code=2)
    try:
        if torch:
            inferred = from_flags(torch, driver, gpu or [], cuda_visible_devices, python, no_gpus, fault)
            source = "flags"
        else:
            # Bounded: a pipe reports no size, and `yes | invoke reproduce -` must not fill the memory.
            data = read_stream(sys.stdin.buffer, "standard input", report_cap) if report == "-" \
                else Path(report)
            inferred, source = infer(load_report(data)), "<stdin>" if report == "-" else report
        ui = ConsoleUI(verbose=verbose)
        settings = Settings(Path(matrix), Path(results).resolve(), verify_fix, fix, use_cache=not rerun)
        try:
            outcome = run_reproduction(inferred, source, settings, ui)
        finally:
            ui.close()
    except (ReportError, ReproduceError) as exc:
        raise Exit(f"refenv reproduce: {str(exc).splitlines()[0]}", code=2) from None
    print(render(outcome), end="")
    if not succeeded(outcome):
        raise Exit(code=1)



@task(iterable=["env"], help={
    "registry": "where to push: HOST[:PORT]/NAMESPACE, e.g. registry.example.com/ml (127.0.0.0/8 needs no TLS)",
    "env": "environments to publish (glob; default: every one the matrix defines)",
    "dry-run": "judge each environment and show what would be pushed, with its labels; push nothing",
    "repository": "one repository name for every environment (default: each environment's own name)",
    "no-pull-check": "skip pulling the release back by digest and re-running a ready cell from it",
    "matrix": "the matrix file (default: matrix.yaml)",
    "results": "where the matrix runs are, and where results/publish/<time>.json goes (default: results/)",
})
@_guarded
def publish(c: Context, registry: str, env: list[str] | None = None, dry_run: bool = False,
            repository: str | None = None, no_pull_check: bool = False, matrix: str = "matrix.yaml",
            results: str = "results") -> None:
    """Push the environments a full matrix run proved, labelled with where torch gets a GPU.

    Credentials: REFENV_REGISTRY_USERNAME / REFENV_REGISTRY_PASSWORD, else the Docker config."""
    import os

    from refenv.publish import release
    from refenv.publish.run import Settings
    from refenv.publish.run import publish as run_publish

    settings = Settings(release.parse_registry(registry), _matrix(matrix, env, None, None),
                        Path(results).resolve(), dry_run, not no_pull_check,
                        release.repository_name(repository) if repository else None)
    outcome = run_publish(settings, print, os.environ)
    if outcome.manifest:
        print(f"manifest: {outcome.manifest}")
    if not outcome.ok:
        raise Exit(f"{len(outcome.refused)} refused, {len(outcome.failed)} failed, "
                   f"{sum(not p.pull_check.held for p in outcome.published)} pull-back check(s) failed",
                   code=1)


@task(help={"out": "where to write the archive (default: dist/refenv-diagnose.pyz)"})
@_guarded
def zipapp(c: Context, out: str = "dist/refenv-diagnose.pyz") -> None:
    """Write the single-file diagnoser: the harness as one zipapp that any Python 3.8+ runs.

    On the broken machine: python3 refenv-diagnose.pyz [--json] [--from FILE] (a version line comes first)."""
    from refenv.ship import pyz

    made = pyz.build(ROOT, Path(out))
    print(f"wrote {made.path} ({made.path.stat().st_size // 1024} KiB, {made.files} files): refenv-diagnose "
          f"{made.version} ({made.commit})")
    print(f"on the broken machine: python3 {made.path.name}   (--json to paste back, --from FILE for a report)")


@task(help={"out": "the folder to write (default: dist/web)",
            "pyodide": "the tarball of `npm pack pyodide@VERSION` to use instead of fetching it with npm"})
@_guarded
def web(c: Context, out: str = "dist/web", pyodide: str | None = None) -> None:
    """Build the paste page: a folder any static server can host, where a report pasted is diagnosed in the
    browser (Pyodide runs the harness; nothing leaves the page)."""
    from refenv.ship import page

    site = page.build(ROOT, Path(out), Path(pyodide) if pyodide else None)
    print(f"wrote {site.folder} ({len(site.files)} files, {site.bytes / 1e6:.1f} MB; harness {site.archive.version} "
          f"({site.archive.commit}))")
    print(f"try it: python3 -m http.server --bind 127.0.0.1 --directory {site.folder} 8000   # then open "
          "http://127.0.0.1:8000/")


@task(help={"out": "the folder to build the site into (default: site)"})
@_guarded
def docs(c: Context, out: str = "site") -> None:
    """Write the command reference from the parsers (docs/reference.md), then build the documentation site.

    The site is MkDocs with the Material theme over docs/, built strictly: a broken link fails it."""
    from refenv import reference

    page = reference.write(ROOT)
    print(f"wrote {page.relative_to(ROOT)} (from `python -m harness`'s parser and these tasks)")
    _build_site(c, out)
    print(f"built {out}/ (open {out}/index.html)")


ns = Collection(matrix, compare, run, build, lock, clean, test, reproduce, publish, fleet, zipapp, web, docs)
