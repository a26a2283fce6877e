"""Display text for values that may be missing or of the wrong type: '—' rather than a crash."""

from __future__ import annotations

from typing import Any

from harness.schema.envelope import ErrorRecord

MISSING = "—"


def text(value: Any) -> str:
    """A value as display text; None and empty strings read "—", booleans "yes"/"no"."""
    if value is None or (isinstance(value, (str, list, tuple, dict)) and not value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def fmt_seconds(value: Any) -> str:
    """'0.8 s', '42 s', '3 min 05 s', '1 h 02 min'; '—' when not a number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return MISSING
    s = float(value)
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def fmt_bytes(value: Any) -> str:
    """Binary units, about three significant digits: '512 B', '1.5 KiB', '13.4 GiB', '1006 KiB'."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return MISSING
    n = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" or abs(n) >= 100 else f"{n:.3g} {unit}"
        n /= 1024
    return MISSING  # unreachable: the loop returns at TiB


def fmt_number(value: Any, unit: str = "") -> str:
    """A figure with up to four significant digits and its unit, or '—'."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return MISSING
    figure = f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return f"{figure} {unit}".strip()


def error_text(value: ErrorRecord | str | None) -> str | None:
    """A harness error as one line: its record (harness/document.py error_of) as 'Type: message', or a string."""
    if not value:
        return None
    if isinstance(value, ErrorRecord):
        return f"{value.type}: {value.message}" if value.type and value.message else value.message or value.type
    return value
