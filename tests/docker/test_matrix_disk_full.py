"""`invoke matrix` when the disk fills: during a build (refenv's cache on a full disk) and while results are
written (the run folder's disk fills after the first cell). The cells say so in the disk's own words, the run
document on disk stays whole JSON, nothing is left running, and the run after, with room again, resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.engines.docker.sdk import Engine
from refenv.model import codec
from refenv.model.builds import EnvBuild
from refenv.model.records import CellResult
from refenv.model.rundoc import load_run
from refenv.run.pipeline import Options, RunNotWritten, run_matrix
from tests.docker.fault_support import fill, own_cache, small_disk
from tests.docker.support import CPU, DIAGNOSIS_ONLY, GPU, RecordingUI, cell, describe, leftovers, small_matrix

FULL = "No space left on device"
SCENARIOS = {**GPU, "cvd-empty": {"env": {"CUDA_VISIBLE_DEVICES": ""}}}


def test_a_full_disk_during_the_build_fails_it_in_the_disks_words(
        engine: Engine, env_builds: dict[str, EnvBuild], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with small_disk(tmp_path / "cache") as disk:
        own_cache(disk, monkeypatch)
        filler = fill(disk)
        matrix = small_matrix([CPU], ["r580"], GPU, {**DIAGNOSIS_ONLY, "parallel": 1})
        outcome = run_matrix(matrix, Options(results_root=tmp_path / "results", use_cache=False), RecordingUI())
        c = cell(outcome, CPU, "r580", "gpu")
        assert c["status"] == "BUILD_FAILED" and FULL in c["reason"], describe(c)
        build = outcome.document.environment(CPU)
        assert build is not None and build.build.status == "FAILED" and FULL in (build.build.error or "")
        assert load_run(outcome.folder) == outcome.document and not outcome.ok
        assert leftovers(engine, outcome.document.run.id) == []
        filler.unlink()  # room again: the same run builds (finds) its image and runs its cell
        again = run_matrix(matrix, Options(results_root=tmp_path / "results"), RecordingUI())
        c = cell(again, CPU, "r580", "gpu")
        assert c["status"] == "PASS" and again.ok, describe(c)
        assert [e.build.status for e in again.document.environments] == ["CACHED"]


class FillsAfterFirst(RecordingUI):
    """The run folder's disk fills once the first cell has finished (and the run document has been written)."""

    def __init__(self, disk: Path) -> None:
        super().__init__()
        self.disk = disk
        self.filler: Path | None = None

    def cell_done(self, result: CellResult) -> None:
        super().cell_done(result)
        if self.filler is None:
            self.filler = fill(self.disk)


def test_a_full_disk_while_results_are_written(engine: Engine, env_builds: dict[str, EnvBuild], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    own_cache(tmp_path / "cache", monkeypatch)
    matrix = small_matrix([CPU], ["r535", "r580"], SCENARIOS, {**DIAGNOSIS_ONLY, "parallel": 1})
    with small_disk(tmp_path / "results", "64m") as disk:
        ui = FillsAfterFirst(disk)
        with pytest.raises(RunNotWritten) as info:
            run_matrix(matrix, Options(results_root=disk, use_cache=False), ui)
        assert FULL in info.value.message and "stands" in info.value.message
        first, rest = ui.cells[0], ui.cells[1:]
        assert first.status == "PASS" and rest, [(c.id, c.status) for c in ui.cells]
        for c in rest:  # each cell after the disk filled: the harness's (or refenv's) words for it
            assert c.status == "ERROR" and FULL in c.reason, describe(codec.encode(c))
        folder = next(p for p in disk.iterdir() if p.is_dir())
        stood = load_run(folder)  # what was written before the disk filled: whole, and marked partial
        assert stood.run.interrupted and stood.cell(first.id) is not None
        assert stood.cell(first.id).status == "PASS"  # type: ignore[union-attr]
        assert not list(folder.glob("*.tmp")) and leftovers(engine, stood.run.id or "") == []
        assert ui.filler is not None
        ui.filler.unlink()
        again = run_matrix(matrix, Options(results_root=disk), RecordingUI())
    statuses = {c.id: (c.status, c.cached) for c in again.document.cells}
    assert statuses[first.id] == ("PASS", True), statuses  # the cell that finished is reused
    assert all(status == "PASS" for status, _ in statuses.values()) and again.ok, statuses
