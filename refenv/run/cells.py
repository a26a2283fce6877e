"""Run planned cells through the executor, bounded by the cores; reuse a cached result when nothing changed.

A cell's harness document is cached under the digest of everything that decides it (image, driver
build, host profile, scenario, settings). Real-GPU cells are never cached: hardware changes. A cached
document is judged again against the current expectation, so only the measurement is reused. Within a
run, cells with the same digest are the same container (a scenario without GPU access mounts no driver,
so every simulated host gives it alike): the first runs, the others reuse its document, also on --rerun.
"""

from __future__ import annotations

from collections.abc import Callable

from refenv import paths
from refenv.engines.seam import CellEngine, RunOutcome
from refenv.model.records import CellResult
from refenv.model.status import FAIL, PASS
from refenv.run import executor
from refenv.run.judge import Answer, judge_cell
from refenv.run.plan import CellPlan


def _base(plan: CellPlan) -> CellResult:
    """The cell's identity and bookkeeping, before any judgement."""
    return CellResult(plan.id, plan.environment, plan.host, plan.scenario, expected=plan.expected,
                      cache_key=plan.cache_key, result_path=str(plan.out_dir / "result.json"))


def _judge(plan: CellPlan) -> executor.Judge[CellResult]:
    def judge(base: CellResult, doc: Answer, outcome: RunOutcome) -> CellResult:
        return judge_cell(base, plan.expected, doc, outcome.exit_code, outcome.timed_out, outcome.oom_killed,
                          outcome.logs)
    return judge


def write_files(plans: list[CellPlan]) -> None:
    """The files the plans name, each once, written beside and renamed (cells share a host's config)."""
    for path, content in {p: c for plan in plans for p, c in plan.files}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(content, encoding="utf-8")
        tmp.replace(path)
    for path, target in {p: t for plan in plans for p, t in plan.links}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        tmp.replace(path)


def run_one(engine: CellEngine, plan: CellPlan, use_cache: bool) -> CellResult:
    """One cell, start to finish; every failure becomes a status, never an exception."""
    cached = paths.cell_cache() / f"{plan.cache_key}.json" if plan.cache_key else None
    return executor.run_container(engine, plan, _base(plan), _judge(plan), cached, use_cache)


def share(plans: list[CellPlan]) -> tuple[list[CellPlan], dict[str, list[CellPlan]]]:
    """The plans to run, and by cache key the plans that are the same container as the first of that key."""
    first: list[CellPlan] = []
    same: dict[str, list[CellPlan]] = {}
    for plan in plans:
        key = plan.cache_key if plan.spec is not None else None
        if key is not None and any(p.cache_key == key for p in first):
            same.setdefault(key, []).append(plan)
        else:
            first.append(plan)
    return first, same


def _sharing(same: dict[str, list[CellPlan]]) -> executor.FollowUp[CellPlan, CellResult]:
    """After a cell: the cells that are the same container, answered from its document. A document the first
    one wrote (not one it timed out or crashed before writing) stands for the others; without one, each
    runs for itself."""
    def follow_up(plan: CellPlan, result: CellResult) -> tuple[list[CellResult], list[CellPlan]]:
        answered = result.observed is not None and result.status in (PASS, FAIL)
        done: list[CellResult] = []
        again: list[CellPlan] = []
        for other in same.pop(plan.cache_key or "", []):
            shared = executor.reuse(other, plan.out_dir / "result.json", _base(other), _judge(other)) \
                if answered else None
            if shared is not None:
                done.append(shared)
            else:
                again.append(other)
        return done, again
    return follow_up


def run_cells(engine: CellEngine, plans: list[CellPlan], run_id: str, parallel: int = 1, use_cache: bool = True,
              on_done: Callable[[CellResult], None] | None = None) -> executor.Finished[CellResult]:
    """Every cell, `parallel` at a time. Ctrl-C cancels the run's containers and returns what finished."""
    write_files(plans)
    first, same = share(list(plans))
    return executor.run_all(engine, first, run_id, parallel, lambda plan: run_one(engine, plan, use_cache), _base,
                            on_done, _sharing(same), order=plans)
