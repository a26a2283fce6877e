"""`invoke reproduce` on the collect_env dumps of tests/data/reproduce: each failure comes back, in torch's words.

The dumps were captured from real torch wheels on simulated hosts (their README says how); here each is
read like any pasted report, its stack rebuilt from the wheelhouse and run afresh on a simulated host
made from what the report says. The verdict must be the reported one, torch's message must name the same
failure, and `--verify-fix` must turn the cell OK.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.intake import load_report
from harness.schema import CPU_WHEEL, DRIVER_BROKEN, DRIVER_TOO_OLD, NOT_VISIBLE, OK
from refenv.reproduce import from_flags, infer
from refenv.reproduce.account import message_key, messages_agree, render, succeeded
from refenv.reproduce.execute import Outcome, Settings, reproduce
from tests.docker.support import CU128, DEFAULT_MATRIX, RecordingUI

pytestmark = pytest.mark.docker

DATA = Path(__file__).resolve().parents[1] / "data" / "reproduce"

# dump -> (verdict, the words of torch's message that name the failure)
CASES = {
    "cu130-on-r570": (DRIVER_TOO_OLD, "found version 12080"),
    "cu128-on-r470": (DRIVER_TOO_OLD, "found version 11040"),
    "cpu-wheel-on-r580": (CPU_WHEEL, "Torch not compiled with CUDA enabled"),
    "mismatch-r580": (DRIVER_BROKEN, "Error 803"),
    "cuinit-999-r580": (DRIVER_BROKEN, "CUDA unknown error"),
    "cvd-empty-r580": (NOT_VISIBLE, "No CUDA GPUs are available"),
    "no-gpu-access-r580": (NOT_VISIBLE, "Found no NVIDIA driver"),
}


def run(name: str, results: Path, verify_fix: bool = False, prefer: str = "auto") -> Outcome:
    inferred = infer(load_report(DATA / f"{name}.txt"))
    settings = Settings(DEFAULT_MATRIX, results, verify_fix, prefer, use_cache=False)
    return reproduce(inferred, name, settings, RecordingUI())


def test_every_dump_has_a_case() -> None:
    assert sorted(p.stem for p in DATA.glob("*.txt")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reproduces_the_reported_failure(name: str, tmp_path: Path) -> None:
    verdict, words = CASES[name]
    outcome = run(name, tmp_path)
    cell, reported = outcome.original.cell, outcome.inferred.reported
    assert reported is not None and reported.verdict == verdict, reported
    assert cell.observed is not None, f"{cell.status}: {cell.reason}\n{cell.log_tail}"
    assert cell.observed.verdict == verdict, cell.reason
    assert cell.status == "PASS", cell.reason  # the rules' prediction agrees too
    assert not cell.cached
    assert words in (cell.observed.torch_message or ""), cell.observed.torch_message
    assert message_key(reported.torch_message) == message_key(cell.observed.torch_message)
    assert messages_agree(reported.torch_message, cell.observed.torch_message) in ("identical", "same failure")
    assert outcome.original.reproduction.substitutions == ()  # every dump came from a build this machine has
    text = render(outcome)
    assert "=> reproduced: the same verdict" in text and succeeded(outcome)


@pytest.mark.parametrize(("name", "prefer", "kind", "environment", "driver"), [
    ("cu130-on-r570", "auto", "driver", "torch-2.14.1-cu130", "580.95.05"),
    ("cu130-on-r570", "wheel", "wheel", CU128, "570.172.08"),
    ("mismatch-r580", "auto", "driver", "torch-2.14.1-cu130", "580.95.05"),
    ("cvd-empty-r580", "auto", "scenario", "torch-2.14.1-cu130", "580.95.05"),
    ("no-gpu-access-r580", "auto", "scenario", "torch-2.14.1-cu130", "580.95.05"),
])
def test_verify_fix_turns_the_cell_ok(name: str, prefer: str, kind: str, environment: str, driver: str,
                                      tmp_path: Path) -> None:
    outcome = run(name, tmp_path, verify_fix=True, prefer=prefer)
    assert outcome.fix is not None and outcome.fixed is not None, outcome.fix_note
    assert outcome.fix.kind == kind and outcome.fix.predicted == OK
    fixed = outcome.fixed.reproduction
    assert fixed.environment.name == environment
    assert fixed.profile is not None and fixed.profile.driver_version == driver
    observed = outcome.fixed.cell.observed
    assert observed is not None and observed.verdict == OK and observed.simulated, outcome.fixed.cell.reason
    text = render(outcome)
    assert "=> the cell turns OK (simulated" in text and succeeded(outcome)
    if prefer == "wheel":  # torch 2.14.1+cu126 is on PyTorch's index only; the substitute keeps CUDA 12
        assert any("torch 2.10 from PyPI (cu128)" in s for s in fixed.substitutions) or \
            fixed.environment.variant == "cu126", fixed.substitutions


def test_flags_instead_of_a_report(tmp_path: Path) -> None:
    inferred = from_flags("2.10.0", driver="470.256.02", gpus=["2 x Tesla V100-SXM2-32GB"], python="3.11")
    outcome = reproduce(inferred, "flags", Settings(DEFAULT_MATRIX, tmp_path, use_cache=False), RecordingUI())
    observed = outcome.original.cell.observed
    assert observed is not None and observed.verdict == DRIVER_TOO_OLD
    assert "found version 11040" in (observed.torch_message or "")
    assert "(flags: nothing reported)" in render(outcome)


def test_a_report_quoting_only_the_found_version_is_reproduced_and_the_fix_for_its_driver_verified(tmp_path: Path) -> None:
    # The report names no torch and no driver: only torch's message 'found version 11040'. reproduce chooses
    # the newest release's default build (its runtime newer than the message says) and an R470 driver (the
    # branch CUDA 11.4 names), says so, gets the same message back, and the fix that keeps that driver (a
    # CUDA 11 build of torch) turns the cell OK.
    report = DATA.parent / "reports" / "found-version-only.txt"
    inferred = infer(load_report(report))
    assert inferred.torch_assumed
    settings = Settings(DEFAULT_MATRIX, tmp_path, True, "wheel", use_cache=False)
    outcome = reproduce(inferred, report.name, settings, RecordingUI())
    observed = outcome.original.cell.observed
    assert observed is not None and observed.verdict == DRIVER_TOO_OLD, outcome.original.cell.reason
    assert "found version 11040" in (observed.torch_message or "")
    text = render(outcome)
    assert "the report names no torch" in text and "=> reproduced: the same verdict" in text
    assert outcome.fix is not None and outcome.fix.kind == "wheel" and outcome.fixed is not None
    assert "cu11" in outcome.fix.summary, outcome.fix.summary
    fixed = outcome.fixed.cell.observed
    assert fixed is not None and fixed.verdict == OK and fixed.simulated, outcome.fixed.cell.reason
    assert succeeded(outcome)


def test_a_report_quoting_only_the_found_version_verifies_the_driver_update_when_preferred(tmp_path: Path) -> None:
    # The same report with --fix driver: the same torch (its CUDA 13 build) on a host of the branch that CUDA
    # needs (R580), keeping the GPUs the reproduction assumed (ones that build has kernels for).
    report = DATA.parent / "reports" / "found-version-only.txt"
    settings = Settings(DEFAULT_MATRIX, tmp_path, True, "driver", use_cache=False)
    outcome = reproduce(infer(load_report(report)), report.name, settings, RecordingUI())
    observed = outcome.original.cell.observed
    assert observed is not None and observed.verdict == DRIVER_TOO_OLD, outcome.original.cell.reason
    assert "found version 11040" in (observed.torch_message or "")
    assert outcome.fix is not None and outcome.fix.kind == "driver" and outcome.fixed is not None
    assert "R580" in outcome.fix.summary and "CUDA 13.0" in outcome.fix.summary, outcome.fix.summary
    assert outcome.fix.reproduction.environment == outcome.original.reproduction.environment
    fixed = outcome.fixed.cell.observed
    assert fixed is not None and fixed.verdict == OK and fixed.simulated, outcome.fixed.cell.reason
    assert "upgrade the driver" in render(outcome) and succeeded(outcome)
