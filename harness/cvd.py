"""CUDA_VISIBLE_DEVICES, parsed the way the CUDA driver parses it (pure).

The driver reads a comma-separated list. The first entry decides how it is read: as GPU UUIDs, each
any unique prefix of "GPU-..." (the prefix is case-sensitive), or as ordinals read like C's strtoul
(leading digits count, so "1gpu" is 1). The list is cut at the first invalid entry (negative, not a
number, an ordinal past the last device, a UUID prefix that matches no device or several, an entry of
the other kind); a repeated device hides everything. An empty value hides every device; an unset
variable shows all. NVML ignores the variable.
Sources: CUDA C Programming Guide, "CUDA Environment Variables"; torch/cuda/__init__.py
(`_parse_visible_devices`, `_device_count_nvml`), which mirrors the driver for the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_LEADING_INT = re.compile(r"^\s*([+-]?\d+)")


@dataclass(frozen=True)
class Visibility:
    """Which physical devices (by NVML index) a process sees, and why."""

    visible: tuple[int, ...]
    reason: str
    stopped_at: str | None = None  # the entry at which parsing stopped, if it did


def parse(value: str | None, uuids: Sequence[str]) -> Visibility:
    """Apply CUDA_VISIBLE_DEVICES `value` to the devices whose UUIDs are `uuids` (NVML order)."""
    count = len(uuids)
    if value is None:
        return Visibility(tuple(range(count)), "CUDA_VISIBLE_DEVICES is unset: every device is visible")
    if value.strip() == "":
        return Visibility((), "CUDA_VISIBLE_DEVICES is set and empty: it hides every device", "")
    # The first entry decides how the whole list is read: GPU- UUIDs (case-sensitive prefix) or ordinals.
    uuid_mode = value.strip().startswith("GPU-")
    chosen: list[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        index = _resolve(entry, uuids, uuid_mode)
        if index is None:
            why = _why_invalid(entry, uuids, uuid_mode)
            reason = (f"CUDA_VISIBLE_DEVICES={value!r}: parsing stops at {entry!r} ({why})"
                      + (f"; visible: {', '.join(map(str, chosen))}" if chosen else "; nothing is visible"))
            return Visibility(tuple(chosen), reason, entry)
        if index in chosen:
            return Visibility((), f"CUDA_VISIBLE_DEVICES={value!r} names device {index} twice: "
                                  "a repeated device hides every device", entry)
        chosen.append(index)
    return Visibility(tuple(chosen), f"CUDA_VISIBLE_DEVICES={value!r} selects {', '.join(map(str, chosen))}")


def _resolve(entry: str, uuids: Sequence[str], uuid_mode: bool) -> int | None:
    if uuid_mode:
        if not entry.startswith("GPU-"):
            return None  # an entry without the prefix ends a UUID list
        matches = [i for i, u in enumerate(uuids) if u.startswith(entry)]
        return matches[0] if len(matches) == 1 else None
    m = _LEADING_INT.match(entry)
    if not m:
        return None
    ordinal = int(m.group(1))
    return ordinal if 0 <= ordinal < len(uuids) else None


def _why_invalid(entry: str, uuids: Sequence[str], uuid_mode: bool) -> str:
    if uuid_mode:
        if not entry.startswith("GPU-"):
            return "the list began with UUIDs, and this entry is not one"
        n = sum(1 for u in uuids if u.startswith(entry))
        return "a UUID prefix that matches several devices" if n > 1 else "no device has this UUID"
    m = _LEADING_INT.match(entry)
    if not m:
        if entry.upper().startswith(("GPU-", "MIG-")):
            return "a UUID in a list that began with ordinals (or with a lower-case prefix): read as an ordinal"
        return "not a device ordinal or a GPU- UUID"
    ordinal = int(m.group(1))
    if ordinal < 0:
        return "a negative ordinal"
    return f"there is no device {ordinal}; this machine has {len(uuids)}"


def hides_all_devices(value: str | None) -> str | None:
    """Why `value` hides every device on any machine (empty, -1, junk first), or None if it may not."""
    if value is None:
        return None
    if value.strip() == "":
        return "CUDA_VISIBLE_DEVICES is set and empty: it hides every device"
    first = value.split(",")[0].strip()
    if first.startswith(("GPU-", "MIG-")):
        return None
    m = _LEADING_INT.match(first)
    if not m:
        return (f"CUDA_VISIBLE_DEVICES={value!r}: {first!r} is not a device ordinal or a GPU- UUID, "
                "so nothing is visible")
    if int(m.group(1)) < 0:
        return f"CUDA_VISIBLE_DEVICES={value!r}: a negative ordinal first hides every device"
    return None
