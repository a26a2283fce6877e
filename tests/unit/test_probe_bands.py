"""Pass / warn / fail bands, percent of peak, the fp32-above-peak flag and the worst status."""

from __future__ import annotations

import pytest

from harness.probe import bands


def test_every_band_names_its_source_and_orders_its_thresholds() -> None:
    for name, band in bands.BANDS.items():
        assert band.source.strip(), name
        assert 0 < band.warn_percent < band.pass_percent <= 100, name


@pytest.mark.parametrize(("measured", "status"), [(4300, "PASS"), (3600, "PASS"), (3000, "WARN"), (2000, "FAIL")])
def test_memory_band_on_an_h200(measured: float, status: str) -> None:
    judged = bands.judge(measured, 4800, bands.BANDS["memory"])
    assert judged.status == status
    assert judged.percent_of_peak == pytest.approx(100 * measured / 4800, abs=0.05)
    assert judged.band == bands.BANDS["memory"]


def test_band_edges_are_inclusive() -> None:
    band = bands.Band(80.0, 50.0, "test")
    assert bands.judge(80.0, 100.0, band).status == "PASS"
    assert bands.judge(79.9, 100.0, band).status == "WARN"
    assert bands.judge(50.0, 100.0, band).status == "WARN"
    assert bands.judge(49.9, 100.0, band).status == "FAIL"


def test_no_spec_is_measured_not_judged() -> None:
    judged = bands.judge(40.0, None, bands.BANDS["memory"])
    assert judged.status == "PASS"
    assert judged.percent_of_peak is None
    assert "not judged" in judged.reason


def test_no_band_gives_percent_but_no_verdict() -> None:
    judged = bands.judge(20.0, 63.0, None)
    assert judged.status == "PASS"
    assert judged.percent_of_peak == pytest.approx(31.7)
    assert "not judged" in judged.reason


def test_fp32_above_peak_is_flagged_as_tf32() -> None:
    # An H100 SXM fp32 GEMM at 400 TFLOP/s is TF32 (FP32 peak 66.9).
    judged, flagged = bands.judge_fp32(400.0, 66.9, tf32_override=True)
    assert flagged
    assert judged.status == "WARN"
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" in judged.reason
    judged, flagged = bands.judge_fp32(400.0, 66.9, tf32_override=False)
    assert flagged and "TF32 was on" in judged.reason


def test_fp32_below_peak_is_judged_by_its_band() -> None:
    judged, flagged = bands.judge_fp32(50.0, 66.9, tf32_override=False)
    assert not flagged
    assert judged.status == "PASS"
    assert not bands.fp32_above_peak(68.0, 66.9)  # within the overclock slack
    assert not bands.fp32_above_peak(1000.0, None)


def test_worst_status() -> None:
    assert bands.worst_status([]) == "SKIP"
    assert bands.worst_status(["SKIP", "PASS"]) == "PASS"
    assert bands.worst_status(["PASS", "WARN", "SKIP"]) == "WARN"
    assert bands.worst_status(["WARN", "FAIL", "PASS"]) == "FAIL"
    with pytest.raises(ValueError, match="BOGUS"):
        bands.worst_status(["BOGUS"])
