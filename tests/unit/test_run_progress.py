"""Progress when the output is not a terminal: a line per finished cell, not a bar that shows nothing (refenv.run.progress)."""

from __future__ import annotations

import io

from rich.console import Console

from refenv.model.records import CellResult
from refenv.run.progress import ConsoleUI


def test_a_log_gets_a_line_per_finished_cell() -> None:
    out = io.StringIO()
    ui = ConsoleUI(Console(file=out, force_terminal=False, width=200))
    ui.cells_start(2)
    ui.cell_done(CellResult("e/h/gpu", "e", "h", "gpu", status="PASS", reason="OK as expected", cached=True))
    ui.cell_done(CellResult("e/h/no-gpu", "e", "h", "no-gpu", status="FAIL", reason="expected NOT_VISIBLE,\nobserved OK"))
    ui.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "running 2 cells"
    assert lines[1].startswith("[1/2 ") and lines[1].endswith("] PASS e/h/gpu (cached)")
    assert lines[2].endswith("] FAIL e/h/no-gpu: expected NOT_VISIBLE, observed OK")


def test_a_terminal_gets_the_bar() -> None:
    out = io.StringIO()
    ui = ConsoleUI(Console(file=out, force_terminal=True, width=120))
    ui.cells_start(1)
    ui.cell_done(CellResult("e/h/s", "e", "h", "s", status="PASS", reason="ok"))
    ui.close()
    assert "running 1 cell" not in out.getvalue() and "1/1" in out.getvalue()


def test_a_log_gets_a_line_per_measurement_then_per_cell_with_the_time_left() -> None:
    from refenv.model.records import MeasurementRecord
    from refenv.run.progress import eta

    out = io.StringIO()
    ui = ConsoleUI(Console(file=out, force_terminal=False, width=200))
    ui.measurements_start(2)
    ui.measurement_done(MeasurementRecord("e/cpu", "e", status="PASS", reason="as predicted", cached=True))
    ui.measurement_done(MeasurementRecord("e/real", "e", "real", "cuda", status="FAIL", reason="GPU probes fell"))
    ui.cells_start(3)
    ui.cell_done(CellResult("e/h/gpu", "e", "h", "gpu", status="PASS", reason="OK as expected"))
    ui.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("measuring once per environment") and "2 measurements" in lines[0]
    assert lines[1].startswith("[1/2 ") and lines[1].endswith("PASS measured e (CPU) (cached): as predicted")
    assert "eta" in lines[1] and "eta" not in lines[2]  # the last one has nothing left
    assert lines[2].endswith("FAIL measured e on real (GPU): GPU probes fell")
    assert lines[3] == "running 3 cells" and lines[4].startswith("[1/3 ") and "eta" in lines[4]
    assert eta(1, 3, 10.0) == 20.0 and eta(0, 3, 10.0) is None and eta(3, 3, 10.0) == 0.0
