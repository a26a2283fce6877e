"""Suite plans: buffers far larger than the caches, GEMM/sweep shapes, the quick CPU suite kept short."""

from __future__ import annotations

import pytest

from harness.probe import sizes

MIB = 2**20


def test_buffers_are_a_multiple_of_the_cache() -> None:
    # H200: 60 MB L2 x 16 = 960 MiB, under the 1 GiB floor -> 1 GiB; x 32 -> 1920 MiB, under 2 GiB.
    assert sizes.buffer_bytes(60 * MIB, 16, 2**30, None) == 2**30
    assert sizes.buffer_bytes(60 * MIB, 32, 2**30, None) == 1920 * MIB
    # CPU: 4 x a 32 MiB LLC.
    assert sizes.buffer_bytes(32 * MIB, 4, 64 * MIB, None) == 128 * MIB


def test_buffers_respect_the_cap_and_assume_a_cache_when_unknown() -> None:
    assert sizes.buffer_bytes(60 * MIB, 16, 2**30, cap=300 * MIB) == 300 * MIB
    assert sizes.buffer_bytes(None, 4, 0, None) == 4 * sizes.ASSUMED_CACHE_BYTES


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_full_does_at_least_what_quick_does(device: str) -> None:
    quick, full = sizes.make_plan("quick", device), sizes.make_plan("full", device)
    assert full.gemm.samples >= quick.gemm.samples
    assert full.gemm.warmup_s >= quick.gemm.warmup_s
    assert set(quick.sweep_ms) <= set(full.sweep_ms)


def test_gpu_sweep_spans_the_ridge() -> None:
    # bf16 (m, 8192, 8192) intensities run from ~8 to ~2731 FLOP/B, around an H200 ridge of ~183-206.
    p = sizes.make_plan("quick", "cuda")
    lo, hi = min(p.sweep_ms), max(p.sweep_ms)
    assert lo * p.sweep_n / (p.sweep_n + 2 * lo) < 50
    assert hi * p.sweep_n / (p.sweep_n + 2 * hi) > 1000
    assert sizes.make_plan("full", "cuda").fused_steps and not p.fused_steps


def test_unknown_mode_or_device_is_named() -> None:
    with pytest.raises(ValueError, match="slow"):
        sizes.make_plan("slow", "cpu")
    with pytest.raises(ValueError, match="tpu"):
        sizes.make_plan("quick", "tpu")
