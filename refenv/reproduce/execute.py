"""`invoke reproduce`: plan the cell, build its image, run it on the simulated host, and the fix after it.

The cell goes through the runner's own steps (`prepare`, `plan_cell`, `run_cells`) on the engine it is
given. The locks of reproduced environments are kept under refenv's cache, never in the project's
`locks/`. An environment the project's matrix also defines starts from that matrix's lock (same inputs,
same lock, same image), so reproducing never re-downloads what a matrix run fetched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from harness.schema import OK
from refenv import paths
from refenv.builder import wheelhouse
from refenv.engines.seam import CellEngine, ImageRequest
from refenv.errors import LockError
from refenv.model.matrix import Base, Environment, RunSettings
from refenv.model.matrix_yaml import load
from refenv.model.records import CellResult
from refenv.reproduce.choose import plan
from refenv.reproduce.fix import chosen_remedy, plan_fix
from refenv.reproduce.offer import probe_offer
from refenv.reproduce.values import FixPlan, Inferred, Reproduction
from refenv.run import cells
from refenv.run.pipeline import UI, Begun, conclude, connect, stack_of
from refenv.run.plan import Scope, plan_cell
from refenv.run.prepare import prepare

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    matrix: Path                   # the project's matrix.yaml: its environments and base are reused
    results_root: Path             # where the runs' folders go
    verify_fix: bool = False
    prefer: str = "auto"           # "auto", "driver" or "wheel": which fix of DRIVER_TOO_OLD to verify
    relock: bool = False
    use_cache: bool = True         # reuse a cell's result when nothing that decides it changed


@dataclass(frozen=True)
class CellRun:
    reproduction: Reproduction
    cell: CellResult
    folder: Path


# What became of --verify-fix (the exit status reads this, never the note's words).
NOT_ASKED, NOT_RUN, NOTHING_TO_FIX = "not_asked", "not_run", "nothing_to_fix"
NO_REMEDY, VERIFIED = "no_remedy", "verified"


@dataclass(frozen=True)
class Outcome:
    source: str
    inferred: Inferred
    original: CellRun
    fix: FixPlan | None = None
    fixed: CellRun | None = None
    fix_note: str | None = None    # why no fix was run, in words
    fix_status: str = NOT_ASKED    # one of the statuses above


def cache_lock(env: Environment) -> Path:
    """Where a reproduced environment's lock is kept: under refenv's cache."""
    return paths.cache_root() / "reproduce" / "locks" / f"{env.name}.json"


def seed_lock(env: Environment, project_matrix: Path) -> bool:
    """Copy the project's lock of the same environment into the cache when its inputs are the same."""
    try:
        if wheelhouse.is_current(wheelhouse.read_lock(cache_lock(env)), env):
            return False
        lock = wheelhouse.read_lock(wheelhouse.lock_path(project_matrix, env.name))
    except LockError as exc:
        LOG.info("not reusing a lock: %s", exc)
        return False
    if lock is None or lock.environment != env.name or not wheelhouse.is_current(lock, env):
        return False
    wheelhouse.write_lock(lock, cache_lock(env))
    return True


def project_context(matrix: Path) -> tuple[tuple[Environment, ...], Base, RunSettings]:
    """The project's environments, base and run settings; defaults when there is no matrix file."""
    if not matrix.is_file():
        return (), Base(), RunSettings()
    m = load(matrix)
    base = m.environments[0].base if m.environments else Base()
    return m.environments, base, m.run


def run_cell(engine: CellEngine, r: Reproduction, settings: Settings, run: RunSettings, ui: UI) -> CellRun:
    """Build the environment and run the one cell; the diagnosis only (probes and memory check off)."""
    if seed_lock(r.environment, settings.matrix.resolve()):
        ui.stage(f"reusing the project's lock of {r.environment.name}")
    quick = replace(run, probes="off", memory_check="off", parallel=1)
    begun = Begun.now(settings.results_root)
    begun.folder.mkdir(parents=True, exist_ok=True)
    scope = Scope((r.environment,), (r.host,), (r.scenario,))
    prepared = prepare(engine, [ImageRequest(r.environment, cache_lock(r.environment), settings.relock)],
                       (r.host,), begun.run_id, ui)
    plan = plan_cell(scope.cells()[0], prepared, begun.run_id, begun.folder, quick)
    ui.cells_start(1)
    done = cells.run_cells(engine, [plan], begun.run_id, use_cache=settings.use_cache, on_done=ui.cell_done)
    # The reproduced image's stack beside torch, judged on the reproduced host, as a matrix cell's is.
    results = tuple(replace(c, stack=stack_of(scope, prepared, c)) for c in done.records)
    conclude(begun, scope, engine.inventory(), prepared.builds, results, done.interrupted, prepared.real,
             use_cache=settings.use_cache, facts=prepared.facts)
    return CellRun(r, results[0], begun.folder)


def reproduce(inferred: Inferred, source: str, settings: Settings, ui: UI, engine: CellEngine | None = None) -> Outcome:
    """Reproduce the reported stack, and with `verify_fix` the remediation after it."""
    engine = engine or connect()
    known, base, run = project_context(settings.matrix)
    offer = probe_offer()
    reproduction = plan(inferred, offer, known, base)
    original = run_cell(engine, reproduction, settings, run, ui)
    if not settings.verify_fix:
        return Outcome(source, inferred, original)
    observed = original.cell.observed
    if observed is None:
        return Outcome(source, inferred, original, fix_note=f"nothing to fix: the cell did not run "
                       f"({original.cell.status}: {original.cell.reason})", fix_status=NOT_RUN)
    remedy = chosen_remedy(observed.verdict, observed.findings)
    fix = plan_fix(reproduction, observed.verdict, offer, known, base, settings.prefer, remedy)
    if fix is None:
        if observed.verdict == OK:
            return Outcome(source, inferred, original, fix_note="nothing to fix: the reproduced verdict is OK",
                           fix_status=NOTHING_TO_FIX)
        what = f"the remedy ({remedy.kind})" if remedy else f"no remedy for {observed.verdict}"
        return Outcome(source, inferred, original, fix_status=NO_REMEDY,
                       fix_note=f"{what} cannot be built and run here so that the rules predict OK")
    ui.stage(f"verifying the fix: {fix.summary}")
    return Outcome(source, inferred, original, fix, run_cell(engine, fix.reproduction, settings, run, ui),
                   fix_status=VERIFIED)
