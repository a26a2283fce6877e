"""The verdict table: one row per verdict, and every reader of a verdict's knowledge reads it there.

Each consumer is asked about every row, so a verdict added to the table is worded, asked for, labelled, fixed
and ordered everywhere without another edit; what only a row says is checked against the consumer's output.
"""

from __future__ import annotations

import json

import pytest

from harness.answer.reply import label_for
from harness.catalogue.entries import REMEDY_FIX, REMEDY_KINDS
from harness.intake.assess import COMMON_ASK, FULL, _asked
from harness.schema import (
    ANSWERS,
    BY_CODE,
    CANNOT_TELL,
    CONFIDENCES,
    DRIVER_TOO_OLD,
    FAILING,
    FIX_ACCESS,
    FIX_DRIVER,
    FIX_REPAIR,
    FIX_WHEEL,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    OTHER,
    TABLE,
    VERDICTS,
    Assessment,
    Diagnosis,
    Remedy,
    Verdict,
    decode,
    encode,
    verdict_of,
)
from harness.schema.verdicts import FAMILY_WORDS, FIX_KINDS
from refenv import readiness
from refenv.readiness import CellFacts
from refenv.reproduce.fix import fix_order


def test_the_table_orders_the_verdicts_as_the_stack_is_examined() -> None:
    assert VERDICTS == ("OK", "NO_DRIVER", "DRIVER_BROKEN", "CPU_WHEEL", "DRIVER_TOO_OLD", "NOT_VISIBLE",
                        "ARCH_UNSUPPORTED")
    assert VERDICTS[1:] == FAILING
    assert (*VERDICTS, OTHER, CANNOT_TELL) == ANSWERS
    assert [row.code for row in TABLE] == list(ANSWERS)
    assert CONFIDENCES == ("high", "medium", "low")


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.code)
def test_every_row_is_whole(row: Verdict) -> None:
    v = verdict_of(row.code)
    assert v is row and v.words and v.label == v.code.lower().replace("_", "-")
    assert set(v.fixes) <= set(FIX_KINDS)
    if v.failing:
        assert v.fixes and v.ask and v.family in FAMILY_WORDS


def test_an_unknown_code_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown verdict 'NOPE'; expected one of OK, NO_DRIVER"):
        verdict_of("NOPE")


@pytest.mark.parametrize("code", FAILING)
def test_the_reader_asks_for_each_failing_verdicts_own_commands(code: str) -> None:
    asked = _asked(code)
    assert asked[:1 + len(COMMON_ASK)] == (FULL, *COMMON_ASK)
    assert set(BY_CODE[code].ask) <= set(asked)


@pytest.mark.parametrize("code", ANSWERS)
def test_the_bot_labels_each_verdict_by_the_table(code: str) -> None:
    assert label_for(code, "cuda: ") == f"cuda: {BY_CODE[code].label}"


def cell(verdict: str, driver: str | None = "535.247.01", cuda: str | None = "13.0") -> CellFacts:
    return CellFacts("env", "host", "gpu", "PASS", verdict, verdict, True, True, driver, "2.14.1", cuda,
                     capability="9.0", remedy="reboot")


@pytest.mark.parametrize("code", FAILING)
def test_readiness_words_and_fixes_each_failing_verdict(code: str) -> None:
    """A refused host's line names the verdict in the table's words and a fix of the verdict's first kind."""
    fix = readiness.fix_for(cell(code), {})
    assert not fix.text.startswith("see the cell's findings"), fix
    assert readiness.words_of(code) == BY_CODE[code].words
    first = BY_CODE[code].fixes[0]
    if first == FIX_DRIVER:
        assert fix.min_driver and fix.text.startswith("install R")
    elif first == FIX_REPAIR:
        assert fix.text == "reboot"
    elif first == FIX_WHEEL:
        assert "build" in fix.text


def test_readiness_offers_the_second_kind_of_fix_beside_the_first() -> None:
    """DRIVER_TOO_OLD is fixed by a driver or by a wheel: the build this driver runs is named beside the driver."""
    assert BY_CODE[DRIVER_TOO_OLD].fixes == (FIX_DRIVER, FIX_WHEEL)
    fix = readiness.fix_for(cell(DRIVER_TOO_OLD), {})
    assert fix.build and " or use the cu12" in fix.text
    assert readiness.fix_for(cell(NO_DRIVER, driver=None), {}).build is None


def test_without_a_driver_a_hidden_gpu_needs_the_driver_and_the_toolkit() -> None:
    assert readiness.fix_for(cell(NOT_VISIBLE, driver=None), {}).text.endswith("and the NVIDIA container toolkit")
    assert "--gpus" in readiness.fix_for(cell(NOT_VISIBLE), {}).text


@pytest.mark.parametrize("code", FAILING)
def test_reproduce_tries_the_verdicts_kinds_of_fix_in_the_tables_order(code: str) -> None:
    assert fix_order(code, None, "auto", True) == BY_CODE[code].fixes
    assert FIX_ACCESS not in fix_order(code, None, "auto", False)


def test_reproduce_follows_a_remedy_of_another_kind_and_a_preference_between_driver_and_wheel() -> None:
    assert fix_order(DRIVER_TOO_OLD, None, "wheel", True) == (FIX_WHEEL, FIX_DRIVER)
    assert fix_order(DRIVER_TOO_OLD, Remedy("install_driver"), "wheel", True) == (FIX_WHEEL, FIX_DRIVER)
    assert fix_order(DRIVER_TOO_OLD, Remedy("install_wheel"), "auto", True) == (FIX_WHEEL,)
    assert fix_order(NOT_VISIBLE, None, "driver", True) == (FIX_ACCESS, FIX_DRIVER)  # no wheel: no choice
    assert fix_order(NO_DRIVER, Remedy("enable_gpu_access"), "auto", True) == (FIX_ACCESS, FIX_DRIVER)
    assert fix_order(NO_DRIVER, Remedy("enable_gpu_access"), "auto", False) == (FIX_DRIVER,)
    assert fix_order(NOT_VISIBLE, Remedy("reboot"), "auto", True) == (FIX_REPAIR,)
    assert fix_order(OTHER, None, "auto", True) == ()


def test_every_remedy_kind_is_a_kind_of_fix() -> None:
    assert set(REMEDY_FIX.values()) <= set(FIX_KINDS) and tuple(REMEDY_FIX) == REMEDY_KINDS


def test_a_diagnosis_carries_its_assessment_as_a_record_in_the_documents_shape() -> None:
    a = Assessment(OTHER, "medium", ("the machine is a Mac (macOS)",), (NO_DRIVER,), ("nvidia-smi",), "outside")
    d = Diagnosis(OTHER, assessment=a)
    data = json.loads(json.dumps(encode(d)))
    assert data["assessment"] == {"verdict": "OTHER", "confidence": "medium",
                                  "rests_on": ["the machine is a Mac (macOS)"], "competing": ["NO_DRIVER"],
                                  "ask": ["nvidia-smi"], "why": "outside"}
    assert decode(Diagnosis, data) == d
    assert "assessment" not in encode(Diagnosis(OK))


@pytest.mark.parametrize(("field", "value"), [("verdict", "MAYBE"), ("confidence", "certain")])
def test_an_assessment_outside_the_vocabulary_is_refused(field: str, value: str) -> None:
    good = {"verdict": OK, "confidence": "high", "rests_on": [], "competing": [], "ask": []}
    with pytest.raises(ValueError, match=f"unknown {field} {value!r}"):
        decode(Assessment, {**good, field: value})
