"""Progress when the output is not a terminal: a line per finished cell, not a bar that shows nothing (refenv.progress)."""

from __future__ import annotations

import io

from rich.console import Console

from refenv.progress import ConsoleUI
from refenv.results import CellResult


def test_a_log_gets_a_line_per_finished_cell() -> None:
    out = io.StringIO()
    ui = ConsoleUI(Console(file=out, force_terminal=False, width=200))
    ui.cells_start(2)
    ui.cell_done(CellResult("e/h/gpu", "e", "h", "gpu", "PASS", "OK as expected", cached=True))
    ui.cell_done(CellResult("e/h/no-gpu", "e", "h", "no-gpu", "FAIL", "expected NOT_VISIBLE,\nobserved OK"))
    ui.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "running 2 cells"
    assert lines[1].startswith("[1/2 ") and lines[1].endswith("] PASS e/h/gpu (cached)")
    assert lines[2].endswith("] FAIL e/h/no-gpu: expected NOT_VISIBLE, observed OK")


def test_a_terminal_gets_the_bar() -> None:
    out = io.StringIO()
    ui = ConsoleUI(Console(file=out, force_terminal=True, width=120))
    ui.cells_start(1)
    ui.cell_done(CellResult("e/h/s", "e", "h", "s", "PASS", "ok"))
    ui.close()
    assert "running 1 cell" not in out.getvalue() and "1/1" in out.getvalue()
