"""Child process: probe libcuda and NVML and print the facts as JSON.

Runs apart from the harness so that a driver library which crashes or hangs the process that
loads it costs one fact, not the whole diagnosis.
"""

from __future__ import annotations

import json
import sys
from typing import TypedDict, cast

from harness.facts import LibcudaFact, NvmlFact, SimulatedDriver, SimulatedLibrary
from harness.gather import libcuda, nvml


class NativeFacts(TypedDict):
    """What this child prints: the driver library facts, and the simulated driver's say, if it is one."""

    libcuda: LibcudaFact
    nvml: NvmlFact
    simulated: SimulatedDriver | None


def probe() -> NativeFacts:
    cuda_fact, sim = libcuda.probe()
    nvml_fact, nvml_sim = nvml.probe()
    simulated: SimulatedDriver | None = None
    if sim is not None or nvml_sim is not None:
        simulated = {"libcuda": sim, "nvml": _parse(nvml_sim)}
    return {"libcuda": cuda_fact, "nvml": nvml_fact, "simulated": simulated}


def _parse(raw: str | None) -> SimulatedLibrary | None:
    if raw is None:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return {"unparsable": raw}
    return cast(SimulatedLibrary, info) if isinstance(info, dict) else {"unparsable": raw}


if __name__ == "__main__":
    json.dump(probe(), sys.stdout)
