"""Progress on the console while a matrix runs: build steps as they stream, then a bar over the cells."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from refenv.build import EnvBuild
from refenv.report.formats import fmt_seconds
from refenv.results import NOT_RUN, PASS, CellResult
from refenv.status import look


class ConsoleUI:
    """A UI for refenv.runner: quiet lines for builds, then a progress bar over the cells on a terminal, or a
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
        colour = {"BUILT": "green", "CACHED": "cyan", "FAILED": "red"}[build.status]
        extra = f" — {escape(build.error)}" if build.error else ""
        self.console.print(f"  [{colour}]{build.status.lower()}[/] {build.tag or build.environment} "
                           f"in {build.wall_s:.0f} s{extra}")
        if build.log:
            self.console.print(f"  [dim]log: {build.log}[/]")

    def cells_start(self, total: int) -> None:
        self._total, self._done, self._started = total, 0, time.monotonic()
        if not self.console.is_terminal:
            # A log or CI: no bar to redraw, so a line per finished cell instead (nothing would show until the end).
            self.console.print(f"running {total} cell{'' if total == 1 else 's'}")
            return
        self._progress = Progress(TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.description}"), console=self.console, transient=False)
        self._progress.start()
        self._task = self._progress.add_task("", total=total)

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


def cell_line(result: CellResult, done: int, total: int, elapsed: float) -> str:
    """'[12/126 3 min 05 s] PASS env/host/scenario (cached)': one finished cell, for output that is not a terminal."""
    reason = "" if result.status == PASS else f": {' '.join(result.reason.split())[:160]}"
    return (f"[{done}/{total} {fmt_seconds(elapsed)}] {result.status} {result.id}"
            f"{' (cached)' if result.cached else ''}{reason}")
