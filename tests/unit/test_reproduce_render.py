"""What `invoke reproduce` prints and how it exits: reported beside reproduced, the fix, and clear errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from invoke.context import Context
from invoke.exceptions import Exit

from harness.intake import load_report
from harness.schema import Finding
from refenv import tasks
from refenv.model.matrix import Base
from refenv.model.records import CellResult, Expected, Observed
from refenv.reproduce import infer
from refenv.reproduce.account import (
    message_key,
    messages_agree,
    normalized,
    render,
    side_by_side,
    succeeded,
    verdicts_agree,
)
from refenv.reproduce.builds import Offer
from refenv.reproduce.choose import plan
from refenv.reproduce.execute import NO_REMEDY, NOT_RUN, CellRun, Outcome
from refenv.reproduce.fix import plan_fix

DATA = Path(__file__).resolve().parents[1] / "data"
TOO_OLD = ("CUDA initialization: The NVIDIA driver on your system is too old (found version 12080). Please update "
           "your GPU driver (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:119.)")
OFFLINE = Offer(False, frozenset(), ("3.9", "3.11", "3.13"))
REPORTED = infer(load_report(DATA / "reproduce" / "cu130-on-r570.txt")).reported
FIX = ("upgrade the driver: a driver >= 580.65.06 (R580) for the full CUDA 13.0 feature set",)


def cell(verdict: str, message: str | None, simulated: bool = True, status: str = "PASS") -> CellResult:
    findings = (Finding(verdict, "error", "", remediation=tuple(FIX)),) if verdict != "OK" else ()
    return CellResult("e/reported/reported", "e", "reported", "reported", status=status,
                      reason=f"{verdict} as expected", expected=Expected(verdict, (), None, ""),
                      observed=Observed(verdict, (verdict,), simulated, False, None, message, findings))


def outcome(observed: CellResult, fixed: CellResult | None = None) -> Outcome:
    inferred = infer(load_report(DATA / "reproduce" / "cu130-on-r570.txt"))
    r = plan(inferred, OFFLINE, (), Base())
    original = CellRun(r, observed, Path("/results/run-1"))
    if fixed is None:
        return Outcome("cu130-on-r570.txt", inferred, original)
    fix = plan_fix(r, "DRIVER_TOO_OLD", OFFLINE, (), Base())
    assert fix is not None
    return Outcome("cu130-on-r570.txt", inferred, original, fix, CellRun(fix.reproduction, fixed, Path("/r/2")))


def test_messages() -> None:
    assert normalized(TOO_OLD).endswith("Please update your GPU driver")
    assert message_key(TOO_OLD) == "found version 12080"
    assert message_key("Unexpected error from cudaGetDeviceCount(). ... Error 803: system has") == "Error 803"
    assert messages_agree(TOO_OLD, TOO_OLD.replace("/pytorch/", "/__w/pytorch/pytorch/")) == "identical"
    assert messages_agree(TOO_OLD, "The NVIDIA driver on your system is too old (found version 12080).") == \
        "same failure"
    assert messages_agree(TOO_OLD, TOO_OLD.replace("12080", "12020")) == "differs"
    assert messages_agree(None, TOO_OLD) == "not reported"


def test_verdicts_agree() -> None:
    assert verdicts_agree("DRIVER_TOO_OLD", "DRIVER_TOO_OLD", "simulated")
    assert verdicts_agree("NO_DRIVER", "NOT_VISIBLE", "none")
    assert not verdicts_agree("NO_DRIVER", "NOT_VISIBLE", "simulated")
    assert not verdicts_agree("OK", "DRIVER_TOO_OLD", "simulated")


def test_side_by_side_wraps_each_column() -> None:
    lines = side_by_side([("verdict", "A " * 40, "B")], ("left", "right"))
    assert lines[0].split() == ["left", "right"]
    assert lines[1].startswith("  verdict") and lines[1].rstrip().endswith("B")
    assert len(lines) == 3 and "B" not in lines[2]


def test_render_reported_beside_reproduced_then_the_fix() -> None:
    assert REPORTED is not None
    text = render(outcome(cell("DRIVER_TOO_OLD", REPORTED.torch_message)))
    assert text.startswith("refenv reproduce: cu130-on-r570.txt\n")
    assert "simulated driver 570.172.08 (R570, CUDA 12.8), 2 x NVIDIA H100 80GB HBM3 (9.0)" in text
    assert "Substitutions: none (the exact torch build and Python)" in text
    assert "reproduced (simulated host)" in text
    assert "=> reproduced: the same verdict, torch says the same words" in text
    assert "Fix\n  - upgrade the driver: a driver >= 580.65.06 (R580)" in text
    assert "Triggered internally" not in text
    other = render(outcome(cell("DRIVER_TOO_OLD", TOO_OLD)))
    assert "=> reproduced: the same verdict, torch names the same failure (found version 12080)" in other


def test_render_a_verified_fix() -> None:
    result = outcome(cell("DRIVER_TOO_OLD", TOO_OLD), cell("OK", "Error 801: operation not supported"))
    text = render(result)
    assert "Fix verified (--verify-fix, driver): upgrade the driver: R580" in text
    assert "simulated driver 580.95.05 (R580, CUDA 13.0)" in text
    assert "OK (simulated)" in text and "True on a real driver of" in text
    assert "=> the cell turns OK (simulated" in text
    assert succeeded(result)


def test_succeeded() -> None:
    assert succeeded(outcome(cell("DRIVER_TOO_OLD", TOO_OLD)))
    assert not succeeded(outcome(cell("OK", None)))  # the report said DRIVER_TOO_OLD
    assert not succeeded(outcome(cell("DRIVER_TOO_OLD", TOO_OLD), cell("DRIVER_TOO_OLD", TOO_OLD)))
    text = render(outcome(cell("OK", None)))
    assert "=> NOT reproduced: a different verdict (OK)" in text
    # --verify-fix that found no remedy fails, whatever its note says; another note does not.
    reproduced = outcome(cell("DRIVER_TOO_OLD", TOO_OLD))
    assert not succeeded(replace(reproduced, fix_status=NO_REMEDY, fix_note="any words"))
    assert succeeded(replace(reproduced, fix_status=NOT_RUN, fix_note="no remedy in these words"))


@pytest.mark.parametrize(("content", "words"), [
    (b"", "the report is empty"),
    (b"\x00\x01\x02binary", "binary"),
    (b"hello, my GPU does not work\n", "no fact about the torch / CUDA stack"),
    (b'{"foo": 1}\n', "without a 'schema' field"),
    (b'{"schema": "refenv.diagnosis", "version": 99, "facts": {}}\n', "field 'version' is 99"),
    (b"{not json\n", "does not parse"),
    (b"Collecting environment information...\nPyTorch version: N/A\nOS: Ubuntu 22.04\n", "does not say which torch"),
    (b"PyTorch version: 2.5.1+rocm6.2\nROCM used to build PyTorch: 6.2.41133\nOS: Ubuntu 22.04\n", "ROCm"),
])
def test_malformed_reports_give_one_line_and_exit_2(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "report.txt"
    path.write_bytes(content)
    with pytest.raises(Exit) as caught:
        tasks.reproduce(Context(), report=str(path))
    assert caught.value.code == 2
    message = str(caught.value.message)
    assert message.startswith("refenv reproduce: ") and "\n" not in message and words in message


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"report": str(DATA / "nope.txt")}, "no such file"),
    ({"report": "flags"}, "the word 'flags' with --torch"),
    ({"report": "flags", "torch": "2.1"}, "--torch '2.1'"),
    ({"report": str(DATA / "reproduce" / "cu130-on-r570.txt"), "torch": "2.1.0"}, "or the word 'flags'"),
    ({"report": "flags", "torch": "2.1.0", "fix": "magic"}, "--fix 'magic'"),
])
def test_bad_arguments_exit_2(kwargs: dict[str, str], words: str) -> None:
    with pytest.raises(Exit) as caught:
        tasks.reproduce(Context(), **kwargs)
    assert caught.value.code == 2 and words in str(caught.value.message)
