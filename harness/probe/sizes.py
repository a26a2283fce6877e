"""What each suite runs and how big: buffer sizes from the cache sizes, shapes, timing per mode.

Pure: sizes follow the probe facts (device buffers far larger than L2, ~1-2 GiB on Hopper; CPU
STREAM arrays at least 4x the last-level cache; compute probes long enough to see sustained clocks
in --full), and the CPU quick suite stays near a second because it runs in every matrix cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.probe.timing import TimingPlan

MODES = ("quick", "full")
MIB = 2**20
GIB = 2**30
# When the cache size cannot be read, assume one this large (a 2020s server's L3 slice).
ASSUMED_CACHE_BYTES = 32 * MIB


@dataclass(frozen=True)
class Plan:
    """Sizes, shapes and timing of one suite on one kind of device."""

    mode: str
    device: str
    cache_multiple: int        # buffers at least this many times the L2 (GPU) or LLC (CPU)
    buffer_floor_bytes: int
    buffer_cap_fraction: float  # of free device memory, per buffer
    memory: TimingPlan
    transfer_bytes: int
    transfer: TimingPlan
    gemm_n: int
    gemm: TimingPlan
    sweep_n: int
    sweep_ms: tuple[int, ...]
    sweep: TimingPlan
    fused_steps: tuple[int, ...]  # empty: no fused sweep in this suite
    fused_numel: int


def buffer_bytes(cache_bytes: int | None, multiple: int, floor: int, cap: int | None, align: int = MIB) -> int:
    """max(multiple x cache, floor), at most `cap`, rounded down to `align`."""
    want = max(multiple * (cache_bytes or ASSUMED_CACHE_BYTES), floor)
    if cap is not None:
        want = min(want, cap)
    return max(align, want // align * align)


def make_plan(mode: str, device: str) -> Plan:
    """The plan for `mode` ('quick' or 'full') on `device` ('cuda' or 'cpu')."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    full = mode == "full"
    if device == "cuda":
        return Plan(
            mode=mode, device=device,
            cache_multiple=32 if full else 16, buffer_floor_bytes=(2 if full else 1) * GIB,
            buffer_cap_fraction=0.125,
            memory=TimingPlan(samples=15 if full else 7, warmup_s=0.2 if full else 0.05, min_sample_s=0.01),
            transfer_bytes=(512 if full else 128) * MIB,
            transfer=TimingPlan(samples=7 if full else 3, warmup_s=0.1 if full else 0.02, min_sample_s=0.02),
            gemm_n=8192,
            # Compute probes run long enough to reach sustained clocks and the power cap (facts: 1-2 s).
            gemm=TimingPlan(samples=10 if full else 5, warmup_s=1.0 if full else 0.3,
                            min_sample_s=0.15 if full else 0.05),
            sweep_n=8192, sweep_ms=(8, 32, 128, 512, 2048, 8192),
            sweep=TimingPlan(samples=5 if full else 3, warmup_s=0.1 if full else 0.03, min_sample_s=0.02),
            # Four compiles (~1-3 s each with Triton) keep --full near a minute; 2k/8 FLOP/B spans the fp32 ridge.
            fused_steps=(1, 8, 64, 256) if full else (),
            fused_numel=2**28,
        )
    if device == "cpu":
        return Plan(
            mode=mode, device=device,
            cache_multiple=4, buffer_floor_bytes=64 * MIB, buffer_cap_fraction=1.0,
            memory=TimingPlan(samples=10 if full else 5, warmup_s=0.1 if full else 0.0, min_sample_s=0.0),
            transfer_bytes=0, transfer=TimingPlan(samples=0, warmup_s=0.0, min_sample_s=0.0),
            gemm_n=2048 if full else 1024,
            gemm=TimingPlan(samples=10 if full else 5, warmup_s=0.5 if full else 0.1,
                            min_sample_s=0.05 if full else 0.02),
            # n=4096 fp32 weights (64 MiB) outgrow the LLC, so the skinny points really are memory-bound.
            sweep_n=4096, sweep_ms=(1, 4, 16, 64, 256) if full else (1, 4, 16, 64),
            sweep=TimingPlan(samples=5 if full else 3, warmup_s=0.05 if full else 0.0, min_sample_s=0.01),
            fused_steps=(),
            fused_numel=0,
        )
    raise ValueError(f"unknown device {device!r}; expected 'cuda' or 'cpu'")
