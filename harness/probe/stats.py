"""Summaries of timed samples: the median the probes report, and the spread kept beside it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Summary:
    """The figures a record reports of its samples, rounded for the JSON: the median rate and the samples,
    the seconds behind them, and their spread."""

    median: float
    samples: tuple[float, ...]
    seconds_median: float
    seconds_samples: tuple[float, ...]
    spread_percent: float


def summarize(work: float, seconds: Sequence[float], to_rate: Callable[[float, float], float]) -> Summary:
    """The median rate of `work` done in each sample's seconds, with the samples and their spread."""
    per_sample = rates(work, seconds, to_rate)
    return Summary(_round_sig(median(per_sample), 5), tuple(rounded(per_sample)), _round_sig(median(seconds), 5),
                   tuple(rounded(seconds)), round(spread_percent(per_sample), 2))
