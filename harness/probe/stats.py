"""Summaries of timed samples: the median the probes report, and the spread kept beside it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any


def median(samples: Sequence[float]) -> float:
    """The median of the samples (the figure every probe reports, after nvbandwidth)."""
    if not samples:
        raise ValueError("no samples to summarize")
    return float(statistics.median(samples))


def spread_percent(samples: Sequence[float]) -> float:
    """(max - min) / median, in percent: how much the runs disagreed."""
    mid = median(samples)
    return 0.0 if mid == 0 else 100.0 * (max(samples) - min(samples)) / mid


def rates(work: float, seconds: Sequence[float], to_rate: Callable[[float, float], float]) -> list[float]:
    """Per-sample rates (GB/s, TFLOP/s) of `work` done in each sample's seconds."""
    return [to_rate(work, s) for s in seconds]


def median_rate(work: float, seconds: Sequence[float], to_rate: Callable[[float, float], float]) -> float:
    """The median of the per-sample rates: the figure a record reports and is judged by."""
    return median(rates(work, seconds, to_rate))


def rounded(values: Sequence[float], digits: int = 4) -> list[float]:
    """Samples rounded to significant digits, so the JSON stays readable."""
    return [_round_sig(v, digits) for v in values]


def _round_sig(value: float, digits: int) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def summarize(unit: str, work: float, seconds: Sequence[float],
              to_rate: Callable[[float, float], float]) -> dict[str, Any]:
    """`{unit}_median`, `{unit}_samples`, the seconds behind them and their spread, as JSON-ready numbers."""
    per_sample = rates(work, seconds, to_rate)
    return {
        f"{unit}_median": _round_sig(median(per_sample), 5),
        f"{unit}_samples": rounded(per_sample),
        "seconds_median": _round_sig(median(seconds), 5),
        "seconds_samples": rounded(seconds),
        "spread_percent": round(spread_percent(per_sample), 2),
    }
