"""Bytes and FLOPs per probe kernel, unit conversions, medians and spreads over synthetic timings."""

from __future__ import annotations

import pytest

from harness.probe import accounting, stats


def test_copy_counts_read_and_write() -> None:
    # 1 GiB of fp32 copied once moves 2 GiB: read + write (nvbandwidth counts it once; we state ours).
    assert accounting.copy_bytes(2**28, 4) == 2 * 2**30


def test_triad_counts_three_arrays() -> None:
    # STREAM fp64 triad: 24 bytes per element.
    assert accounting.triad_bytes(1000, 8) == 24_000


def test_gemm_flops_are_two_mnk() -> None:
    assert accounting.gemm_flops(8192, 8192, 8192) == 2 * 8192**3
    assert accounting.gemm_flops(3, 5, 7) == 210


def test_square_bf16_gemm_intensity_is_n_over_three() -> None:
    # Facts: a bf16 n x n x n GEMM does 2n^3 FLOPs over 6n^2 bytes.
    assert accounting.gemm_intensity(4096, 4096, 4096, "bf16") == pytest.approx(4096 / 3)


def test_skinny_gemm_intensity_tracks_m() -> None:
    # One row against an n x n bf16 matrix: ~1 FLOP per byte, memory-bound everywhere.
    assert accounting.gemm_intensity(1, 8192, 8192, "bf16") == pytest.approx(1.0, rel=1e-3)


def test_fp8_gemm_writes_bf16() -> None:
    assert accounting.gemm_bytes(2, 3, 4, "fp8") == (2 * 4 + 4 * 3) * 1 + 2 * 3 * 2


def test_fused_fma_intensity_grows_with_steps() -> None:
    numel = 1000
    for steps in (1, 4, 64):
        intensity = accounting.fused_fma_flops(numel, steps) / accounting.fused_fma_bytes(numel, 4)
        assert intensity == pytest.approx(2 * steps / 8)


def test_rates() -> None:
    assert accounting.gbps(4.3e12, 1.0) == pytest.approx(4300.0)
    assert accounting.tflops(2 * 8192**3, 1.4e-3) == pytest.approx(785.4, rel=1e-3)
    with pytest.raises(ValueError, match="positive"):
        accounting.gbps(1.0, 0.0)


def test_ridge_points_match_the_facts() -> None:
    # Facts: A100-80 153, H100 SXM 295, H200 206, RTX 4090 164 FLOP per byte; measured H200 ~183.
    assert accounting.ridge_point(312, 2039) == pytest.approx(153, abs=1)
    assert accounting.ridge_point(989.4, 3350) == pytest.approx(295, abs=1)
    assert accounting.ridge_point(989.4, 4800) == pytest.approx(206, abs=1)
    assert accounting.ridge_point(165.2, 1008) == pytest.approx(164, abs=1)
    assert accounting.ridge_point(788, 4300) == pytest.approx(183, abs=1)


def test_percent_of_peak() -> None:
    assert accounting.percent_of(4.3, 4.8) == pytest.approx(89.58, abs=0.01)


def test_unknown_dtype_is_named() -> None:
    with pytest.raises(ValueError, match="int4"):
        accounting.element_bytes("int4")


def test_median_of_odd_and_even_samples() -> None:
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def test_summary_keeps_samples_beside_the_median() -> None:
    work = 2e9  # bytes per call
    seconds = [1e-3, 2e-3, 1.25e-3]  # 2000, 1000, 1600 GB/s
    summary = stats.summarize(work, seconds, accounting.gbps)
    assert summary.samples == (2000.0, 1000.0, 1600.0)
    assert summary.median == 1600.0
    assert summary.seconds_median == 1.25e-3
    assert summary.spread_percent == pytest.approx(62.5)


def test_median_rate_is_median_of_per_sample_rates() -> None:
    # With an even count the median of rates differs from work / median(seconds): the record uses rates.
    seconds = [1.0, 2.0, 4.0, 8.0]
    assert stats.median_rate(8.0, seconds, lambda w, s: w / s) == pytest.approx((4.0 + 2.0) / 2)
