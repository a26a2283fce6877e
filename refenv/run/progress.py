"""Progress on the console while a matrix runs: build steps as they stream, then the measurements made once
per environment (and real GPU host), then a bar over the cells, each with the time left."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from refenv.model.builds import BUILT, CACHED, FAILED, EnvBuild
from refenv.model.records import NOT_RUN, PASS, CellResult, MeasurementRecord
from refenv.model.status import look
from refenv.report.formats import fmt_seconds


class ConsoleUI:
    """A UI for refenv.run.pipeline: quiet lines for builds, then a progress bar over the cells on a terminal, or a
    line per finished cell when the output is a log."""

    def __init__(self, console: Console | None = None, verbose: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.verbose = verbose
        self._last_line = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._total = self._done = 0
        self._started = 0.0

    def stage(self, message: str) -> None:
        self.console.print(f"[bold]▸[/] {escape(message)}")

    def build_line(self, environment: str, line: str) -> None:
        # Build logs go to a file per environment; the console gets a line now and then to show life.
        now = time.monotonic()
        important = line.startswith(("resolving", "locked", "installing", "building", "bootstrapping", "pulling",
                                     "importing", "FAILED", "Step ", "python "))
        if self.verbose or (important and not line.startswith("Step ")) or now - self._last_line > 15:
            self._last_line = now
            self.console.print(f"  [dim]{escape(environment)}[/] {escape(line[:150])}")

    def build_done(self, build: EnvBuild) -> None:
        colour = {BUILT: "green", CACHED: "cyan", FAILED: "red"}[build.status]
        extra = f" — {escape(build.error)}" if build.error else ""
        self.console.print(f"  [{colour}]{build.status.lower()}[/] {build.tag or build.environment} "
                           f"in {build.wall_s:.0f} s{extra}")
        if build.log:
            self.console.print(f"  [dim]log: {build.log}[/]")

    def _start(self, what: str, total: int) -> None:
        self.close()
        self._total, self._done, self._started = total, 0, time.monotonic()
        if not self.console.is_terminal:
            # A log or CI: no bar to redraw, so a line per finished one instead (nothing would show until the end).
            return
        self._progress = Progress(TextColumn(f"[bold]{what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.description}"),
                                  console=self.console, transient=False)
        self._progress.start()
        self._task = self._progress.add_task("", total=total)

    def measurements_start(self, total: int) -> None:
        if total:
            self.console.print(f"measuring once per environment (probes, memory): {total} measurement"
                               f"{'' if total == 1 else 's'}, then the cells only diagnose")
            self._start("measure", total)

    def measurement_done(self, record: MeasurementRecord) -> None:
        self._done += 1
        if self._progress is None or self._task is None:
            self.console.print(measurement_line(record, self._done, self._total, time.monotonic() - self._started),
                               markup=False, highlight=False)
            return
        self._progress.console.print(f"  [{look(record.status).style}]{record.status}[/] {escape(record.label)}"
                                     f"{' (cached)' if record.cached else ''}: {escape(record.reason)}")
        self._progress.update(self._task, advance=1, description=escape(record.label))

    def cells_start(self, total: int) -> None:
        if not self.console.is_terminal:
            self.console.print(f"running {total} cell{'' if total == 1 else 's'}")
        self._start("cells", total)

    def cell_done(self, result: CellResult) -> None:
        self._done += 1
        if self._progress is None or self._task is None:
            self.console.print(cell_line(result, self._done, self._total, time.monotonic() - self._started),
                               markup=False, highlight=False)
            return
        if result.status not in (PASS, NOT_RUN):  # not-run cells are grouped in the summary
            self._progress.console.print(f"  [{look(result.status).style}]{result.status}[/] "
                                         f"{escape(result.id)}: {escape(result.reason)}")
        self._progress.update(self._task, advance=1,
                              description=escape(f"{result.id}{' (cached)' if result.cached else ''}"))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def eta(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left if the rest goes at the pace so far; None before the first one finished."""
    if done <= 0 or done > total:
        return None
    return elapsed / done * (total - done)


def _stamp(done: int, total: int, elapsed: float) -> str:
    left = eta(done, total, elapsed)
    return f"[{done}/{total} {fmt_seconds(elapsed)}{f', eta {fmt_seconds(left)}' if left else ''}]"


def cell_line(result: CellResult, done: int, total: int, elapsed: float) -> str:
    """'[12/126 3 min 05 s, eta 20 min] PASS env/host/scenario (cached)': one finished cell, for output that is
    not a terminal."""
    reason = "" if result.status == PASS else f": {' '.join(result.reason.split())[:160]}"
    return f"{_stamp(done, total, elapsed)} {result.status} {result.id}{' (cached)' if result.cached else ''}{reason}"


def measurement_line(record: MeasurementRecord, done: int, total: int, elapsed: float) -> str:
    """'[1/3 12 s, eta 24 s] PASS measured env (CPU): as predicted': one finished measurement."""
    return (f"{_stamp(done, total, elapsed)} {record.status} measured {record.label}"
            f"{' (cached)' if record.cached else ''}: {' '.join(record.reason.split())[:160]}")
