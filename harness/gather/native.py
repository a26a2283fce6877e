"""Child process: probe libcuda and NVML and print the facts as JSON.

Runs apart from the harness so that a driver library which crashes or hangs the process that
loads it costs one fact, not the whole diagnosis.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from harness.gather import libcuda, nvml


def probe() -> dict[str, Any]:
    cuda_fact, sim = libcuda.probe()
    nvml_fact, nvml_sim = nvml.probe()
    simulated: dict[str, Any] | None = None
    if sim is not None or nvml_sim is not None:
        simulated = {"libcuda": sim, "nvml": _parse(nvml_sim)}
    return {"libcuda": cuda_fact, "nvml": nvml_fact, "simulated": simulated}


def _parse(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"unparsable": raw}


if __name__ == "__main__":
    json.dump(probe(), sys.stdout)
