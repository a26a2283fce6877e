"""Judging a cell: the harness's document, or why there is none, against the expectation (refenv.run.judge)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from harness.classify import classify
from harness.facts import Facts
from harness.schema import CPU_WHEEL, DRIVER_TOO_OLD, NOT_VISIBLE, OK
from harness.schema.envelope import CellDocument
from refenv.model import codec
from refenv.model.records import ERROR, FAIL, OOM_KILLED, PASS, TIMEOUT, CellResult, Expected
from refenv.run.judge import judge_cell as judge
from refenv.run.judge import observed_of
from tests.unit.facts_builder import healthy, merge, no_driver

BASE = CellResult("e/h/s", "e", "h", "s")
TOO_OLD = ("The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver by "
           "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")


def cell_doc(facts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A harness cell document as `python -m harness cell` writes it, with the real classifier's diagnosis."""
    return {"schema": "refenv.cell", "diagnosis": {"facts": facts, "diagnosis": classify(cast(Facts, facts)).to_dict()},
            "probes": None, "memory": None, **extra}


def expected(verdict: str, torch_text: str | None = None) -> Expected:
    return Expected(verdict, (verdict,) if verdict != OK else (), torch_text, "because")


def too_old_facts() -> dict[str, Any]:
    return healthy(driver_version="570.172.08", torch={"is_available": False, "device_count": 0,
                                                       "init_warning": TOO_OLD})


def test_agreement_passes() -> None:
    result = judge(BASE, expected(OK), cell_doc(healthy()), 0, False, False, "")
    assert result.status == PASS and result.reason == "OK as expected"
    assert result.observed is not None and result.observed.verdict == OK and result.log_tail is None


def test_torchs_warning_is_the_message_and_must_hold_the_expected_phrase() -> None:
    doc = cell_doc(too_old_facts())
    good = judge(BASE, expected(DRIVER_TOO_OLD, "found version 12080"), doc, 1, False, False, "")
    assert good.status == PASS
    assert good.observed is not None and good.observed.torch_message == f"CUDA initialization: {TOO_OLD}"
    bad = judge(BASE, expected(DRIVER_TOO_OLD, "found version 11040"), doc, 1, False, False, "")
    assert bad.status == FAIL and "found version 11040" in bad.reason


def test_a_different_verdict_fails_and_says_both() -> None:
    result = judge(BASE, expected(OK), cell_doc(too_old_facts()), 1, False, False, "line 1\nline 2")
    assert result.status == FAIL
    assert result.reason == f"expected {OK}, observed {DRIVER_TOO_OLD}"
    assert result.log_tail == "line 1\nline 2"


def test_the_init_error_is_the_message_when_torch_did_not_warn() -> None:
    observed = observed_of(codec.decode(CellDocument, cell_doc(no_driver(visibility={"in_container": True}))))
    assert observed is not None and observed.verdict == NOT_VISIBLE
    assert observed.torch_message is not None and observed.torch_message.startswith("Found no NVIDIA driver")


def test_only_failing_errors_count_as_observed_verdicts() -> None:
    facts = merge(no_driver(), {"torch": {"cuda": None, "version": "2.13.0+cpu", "arch_list": None,
                                          "init_error": "Torch not compiled with CUDA enabled"}})
    observed = observed_of(codec.decode(CellDocument, cell_doc(facts)))
    assert observed is not None
    assert observed.verdicts[:2] == ("NO_DRIVER", CPU_WHEEL)
    assert len(set(observed.verdicts)) == len(observed.verdicts)
    assert all(f.severity == "error" for f in observed.findings if f.verdict in observed.verdicts)


def test_a_timeout_wins_over_a_document() -> None:
    result = judge(BASE, expected(OK), cell_doc(healthy()), None, True, False, "\n".join(map(str, range(40))))
    assert result.status == TIMEOUT
    assert result.log_tail is not None and result.log_tail.splitlines() == [str(i) for i in range(15, 40)]


def test_an_oom_kill_is_its_own_status() -> None:
    result = judge(BASE, expected(OK), cell_doc(healthy()), 137, False, True, "")
    assert result.status == OOM_KILLED and "run.memory" in result.reason


def test_no_document_is_an_error_with_the_exit_code() -> None:
    result = judge(BASE, expected(OK), None, 139, False, False, "Segmentation fault")
    assert result.status == ERROR and "exit 139" in result.reason and result.log_tail == "Segmentation fault"


def test_a_harness_error_is_reported_with_its_message() -> None:
    doc = {"schema": "refenv.cell", "error": {"type": "RuntimeError", "message": "boom"}}
    result = judge(BASE, expected(OK), doc, 2, False, False, "")
    assert result.status == ERROR and "boom" in result.reason


def test_a_failed_memory_check_fails_the_cell() -> None:
    memory = {"status": "FAIL", "cases": [{"name": "tiny-adam", "status": "FAIL"}, {"name": "x", "status": "PASS"}]}
    result = judge(BASE, expected(OK), cell_doc(healthy(), memory=memory), 0, False, False, "")
    assert result.status == FAIL and result.reason.endswith("(tiny-adam)")
    broken = judge(BASE, expected(OK), cell_doc(healthy(), memory={"error": {"message": "no torch"}}), 0, False,
                   False, "")
    assert broken.status == ERROR and "could not run" in broken.reason and "no torch" in broken.reason


def test_a_memory_case_that_could_not_be_measured_is_no_answer_and_a_disagreement_outranks_it() -> None:
    lost = {"status": "ERROR", "cases": [{"name": "tiny-adam", "status": "ERROR", "error": "RuntimeError: boom"},
                                         {"name": "x", "status": "PASS"}]}
    result = judge(BASE, expected(OK), cell_doc(healthy(), memory=lost), 0, False, False, "")
    assert result.status == ERROR and result.reason == "memory verification could not measure tiny-adam"
    both = judge(BASE, expected(DRIVER_TOO_OLD), cell_doc(healthy(), memory=lost), 0, False, False, "")
    assert both.status == FAIL and both.reason.startswith(f"expected {DRIVER_TOO_OLD}, observed {OK}; memory")


def test_gpu_probe_bands_are_judged_only_on_a_real_gpu() -> None:
    probes = {"gpu": {"status": "FAIL"}, "cpu": None}
    real = judge(BASE, expected(OK), cell_doc(healthy(), probes=probes), 0, False, False, "")
    assert real.status == FAIL and "bands" in real.reason
    simulated = healthy(driver={"simulated": {"libcuda": {"simulated": True}}})
    sim = judge(BASE, expected(OK), cell_doc(simulated, probes=probes), 0, False, False, "")
    assert sim.observed is not None and sim.observed.simulated
    assert "bands" not in sim.reason


def test_the_record_keeps_the_bookkeeping_it_was_given() -> None:
    base = replace(BASE, cache_key="k" * 64, result_path="/r/result.json")
    result = judge(base, expected(OK), cell_doc(healthy()), 0, False, False, "")
    assert (result.id, result.cache_key, result.result_path) == ("e/h/s", "k" * 64, "/r/result.json")
    assert result.expected is not None and result.expected.verdict == OK
