"""Is an environment publishable? Its matrix runs judged as evidence (pure).

The rule: the evidence is the newest uninterrupted run of this very image (same content hash) that
covers every host and scenario the matrix defines for the environment. Slices and `invoke run` cells
never make an environment publishable on their own; a slice of the same image newer than that run is
still read, and a disagreement in it refuses. Every cell of the deciding run must agree with its
prediction (a NOT_RUN cell, such as `real` without an NVIDIA runtime, neither agrees nor disagrees),
and torch must get a GPU (observed OK, real or simulated) on at least one host; the environment's
measurements in that run (probes, memory, made once per environment) must not have gone wrong. "The prediction held"
proves refenv's rules, not the image: the labels say where torch gets a GPU and where it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from refenv import readiness
from refenv.model.records import CellResult
from refenv.publish.history import Run

SHOWN = 5  # cells or pairs named in a refusal; the rest are counted


@dataclass(frozen=True)
class Judgement:
    environment: str
    ok: bool
    reasons: tuple[str, ...]                 # why it is refused (empty when ok)
    run: Run | None = None             # the full-coverage run that decides
    readiness: readiness.Readiness | None = None
    runs_used: tuple[str, ...] = ()          # the deciding run, then newer slices of the same image
    pull_cell: tuple[str, str] | None = None  # (host, scenario) to re-run from the pulled image

    @property
    def run_id(self) -> str | None:
        return self.run.run_id if self.run else None


def _named(items: Sequence[str]) -> list[str]:
    return [*items[:SHOWN], *([f"and {len(items) - SHOWN} more"] if len(items) > SHOWN else [])]


def _bad(cells: Iterable[CellResult]) -> list[str]:
    return [f"{c.id}: {c.status} ({c.reason})" for c in cells if c.bad]


def covers(run: Run, environment: str, required: frozenset[tuple[str, str]]) -> bool:
    """Whether the run, uninterrupted, has a cell of the environment for every required (host, scenario)."""
    ran = {(c.host, c.scenario) for c in run.cells_of(environment)}
    return not run.interrupted and required <= ran


def pull_cell(r: readiness.Readiness) -> tuple[str, str] | None:
    """A cell where torch got the GPU: on a real GPU when there is one, else the first ready host."""
    chosen = next((h for h in r.ready if not h.simulated), r.ready[0] if r.ready else None)
    return (chosen.host, chosen.scenario) if chosen else None


def judge(runs: Sequence[Run], environment: str, content_hash: str,
          required: frozenset[tuple[str, str]]) -> Judgement:
    """Whether `runs` (newest first) make `environment` (the image with `content_hash`) publishable, and why."""
    def refuse(*reasons: str, run: Run | None = None) -> Judgement:
        return Judgement(environment, False, reasons, run)

    mine = [r for r in runs if r.environment(environment) is not None]
    tested = [r for r in mine if (e := r.environment(environment)) is not None and e.content_hash == content_hash]
    if not tested:
        if mine:
            other = mine[0].environment(environment)
            return refuse(f"the image's content hash {content_hash[:16]} differs from the one the newest run of "
                          f"{environment} tested ({str(other.content_hash if other else None)[:16]}, run "
                          f"{mine[0].run_id}): run `invoke matrix --env {environment}` first")
        return refuse(f"no matrix run tested {environment}: run `invoke matrix --env {environment}` first")
    full = next((r for r in tested if covers(r, environment, required)), None)
    if full is None:
        newest = tested[0]
        ran = {(c.host, c.scenario) for c in newest.cells_of(environment)}
        missing = sorted(f"{h}/{s}" for h, s in required - ran)
        what = ("was interrupted" if newest.interrupted and not missing else
                f"ran {len(ran & required)} of its {len(required)} cells (missing {', '.join(_named(missing))})")
        return refuse(f"no uninterrupted run of this image covers every host and scenario the matrix defines for "
                      f"{environment}: the newest, run {newest.run_id}, {what}; slices and `invoke run` cells "
                      f"count only beside such a run: run `invoke matrix --env {environment}`")
    newer = tested[:tested.index(full)]
    bad = _bad(full.cells_of(environment))
    if bad:
        n = len(full.cells_of(environment))
        return refuse(f"{len(bad)} of its {n} cells disagree or did not run as planned in run {full.run_id}",
                      *_named(bad), run=full)
    measured = [m for m in full.doc.measurements if m.environment == environment]
    wrong = [f"{m.id}: {m.status} ({m.reason})" for m in measured if m.bad]
    if wrong:  # measured once per environment (issue 16): a failure here no longer fails a cell
        return refuse(f"{len(wrong)} of its {len(measured)} measurements went wrong in run {full.run_id} "
                      "(probes, memory)", *_named(wrong), run=full)
    later = [f"run {r.run_id}: {line}" for r in newer for line in _bad(r.cells_of(environment))]
    if later:
        return refuse(f"a newer run of this image disagrees ({len(later)} cell(s))", *_named(later), run=full)
    # Every environment of the run is read, so a refused host can name another one that is ready there.
    facts = [f for f in full.facts() if (f.host, f.scenario) in required]
    ready = next(r for r in readiness.judge(facts) if r.environment == environment)
    if not ready.is_ready:
        return refuse(f"torch gets a GPU on no host in run {full.run_id}",
                      *(h.label for h in ready.refused), *(f"{h}: {why}" for h, why in ready.untested), run=full)
    return Judgement(environment, True, (), full, ready, (full.run_id, *(r.run_id for r in newer)),
                     pull_cell(ready))
