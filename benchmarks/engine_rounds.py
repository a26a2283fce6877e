"""Timing one small matrix through two engines, side by side: the loop podman_vs_docker.py and
slurm_vs_local.py share. Rounds alternate the order so load on the machine hits both engines alike; every
run is a whole `run_matrix` without the cache, as `invoke matrix --rerun` runs it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from refenv.engines.seam import CellEngine
from refenv.model.matrix import Matrix
from refenv.run.pipeline import Options, run_matrix
from tests.docker.support import RecordingUI


class RunFailed(Exception):
    """A timed run did not pass: its time says nothing about the engine."""


def alternating(matrix: Matrix, engines: Sequence[tuple[str, CellEngine, int]], rounds: int,
                folder: Path) -> dict[str, list[float]]:
    """Each engine's wall time per round; `engines` are (name, engine, parallel)."""
    times: dict[str, list[float]] = {name: [] for name, _, _ in engines}
    for i in range(rounds):
        order = list(engines) if i % 2 == 0 else list(reversed(engines))
        for name, engine, parallel in order:
            t0 = time.perf_counter()
            outcome = run_matrix(matrix, Options(folder / f"{name}-{i}", parallel=parallel, use_cache=False),
                                 RecordingUI(), engine)
            times[name].append(time.perf_counter() - t0)
            if not outcome.ok:
                raise RunFailed(f"{name}: the run did not pass: "
                                f"{[(c.id, c.status) for c in outcome.document.cells]}")
    return times


def ratio_lines(times: dict[str, list[float]], reference: str, candidate: str, target: float,
                labels: dict[str, str] | None = None) -> tuple[float, list[str]]:
    """The candidate's median over the reference's, and the lines that say it (samples, ratio, PASS/FAIL)."""
    names = labels or {}
    width = max(len(names.get(n, n)) for n in (reference, candidate)) + 1
    lines = [f"{(names.get(n, n) + ':'):<{width}} median {statistics.median(times[n]):.1f} s  "
             f"samples {[round(x, 1) for x in times[n]]}" for n in (reference, candidate)]
    ratio = statistics.median(times[candidate]) / statistics.median(times[reference])
    lines.append(f"ratio {ratio:.2f}x (target <= {target}x): {'PASS' if ratio <= target else 'FAIL'}")
    return ratio, lines
