"""Timing of probe kernels: warm-up first, then N samples, by CUDA events on a GPU and perf_counter on the CPU.

After nvbandwidth and triton.testing.do_bench: warm-up pays for lazy module loading, library handles
and allocator growth, and lets clocks ramp (an idle H200 sits at 345 MHz); each sample repeats the
kernel enough times to last `min_sample_s`, so event resolution and launch gaps do not dominate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.probe.devices import torch_module

_MAX_INNER = 10_000


@dataclass(frozen=True)
class TimingPlan:
    """How long to warm up, how many samples, how long each sample lasts at least."""

    samples: int
    warmup_s: float
    min_sample_s: float


def inner_repeats(one_call_s: float, min_sample_s: float) -> int:
    """Calls per sample so that a sample lasts at least `min_sample_s`."""
    if one_call_s <= 0:
        return _MAX_INNER
    return max(1, min(_MAX_INNER, math.ceil(min_sample_s / one_call_s)))


def _sync(cuda: bool) -> None:
    if cuda:
        torch = torch_module()
        torch.cuda.synchronize()


def _elapsed(fn: Callable[[], object], repeats: int, cuda: bool, host_timed: bool) -> float:
    """Seconds for `repeats` calls of fn, measured on the stream (events) or on the host clock."""
    if cuda and not host_timed:
        torch = torch_module()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0
    _sync(cuda)
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    _sync(cuda)
    return time.perf_counter() - t0


def time_samples(fn: Callable[[], object], plan: TimingPlan, cuda: bool, host_timed: bool = False) -> list[float]:
    """Seconds per call of `fn`, one figure per sample, after warm-up.

    `host_timed` times a GPU operation on the host clock with synchronisation around it, as pageable
    copies need (they are staged through a host bounce buffer the events do not see whole).
    """
    deadline = time.perf_counter() + plan.warmup_s
    while True:
        fn()
        _sync(cuda)
        if time.perf_counter() >= deadline:
            break
    one = _elapsed(fn, 1, cuda, host_timed)
    inner = inner_repeats(one, plan.min_sample_s)
    return [_elapsed(fn, inner, cuda, host_timed) / inner for _ in range(plan.samples)]
