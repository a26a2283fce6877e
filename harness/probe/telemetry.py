"""Clocks, power, temperature and throttle reasons through NVML, read before and after the probes.

Clocks and power move results (an H200 idled at 345 MHz SM and ran at 1980 MHz under load; power
caps throttle), so the document records them. nvidia-ml-py is optional: without it every reading is
null with the reason. Only reads: never change clocks or power limits.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from harness.schema.probe_document import Telemetry

LOG = logging.getLogger(__name__)

# Bits of nvmlClocksEventReasons (NVML API reference, "Clocks Event Reasons"; formerly
# "ClocksThrottleReasons").
THROTTLE_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
FIELDS = tuple(f.name for f in dataclasses.fields(Telemetry) if f.name not in ("available", "error"))


def decode_throttle(mask: int) -> list[str]:
    """Names of the reasons set in an NVML clocks-event mask; unknown bits as hex."""
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    if mask & ~known:
        names.append(hex(mask & ~known))
    return names


def unavailable(reason: str) -> Telemetry:
    """A reading where NVML could not be asked: every field null, and why."""
    return Telemetry(False, reason)


def _field(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception as exc:  # one unsupported query (e.g. power on some boards) must not lose the rest
        LOG.debug("NVML query failed: %s", exc)
        return None


def read_telemetry(uuid: str | None, index: int = 0) -> Telemetry:
    """One NVML reading of the device with this UUID (else NVML index `index`); never raises."""
    try:
        import pynvml
    except ImportError:
        return unavailable("nvidia-ml-py (pynvml) is not installed")
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return unavailable(f"nvmlInit failed: {exc}")
    try:
        handle = None
        if uuid:
            want = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            handle = _field(lambda: pynvml.nvmlDeviceGetHandleByUUID(want))
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        # nvidia-ml-py 12.535+ names it ClocksEventReasons; older releases only ClocksThrottleReasons.
        reasons_fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = _field(lambda: int(reasons_fn(handle)))
        power = _field(lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
        limit = _field(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
        return Telemetry(
            available=True,
            sm_clock_mhz=_field(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            sm_clock_max_mhz=_field(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            mem_clock_mhz=_field(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
            power_w=power,
            power_limit_w=limit,
            temperature_c=_field(lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)),
            pstate=_field(lambda: int(pynvml.nvmlDeviceGetPerformanceState(handle))),
            throttle_reasons_mask=mask,
            throttle_reasons=None if mask is None else tuple(decode_throttle(mask)),
        )
    except Exception as exc:
        return unavailable(f"NVML query failed: {exc}")
    finally:
        _field(pynvml.nvmlShutdown)
