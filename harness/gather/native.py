"""Child process: probe libcuda and NVML and print the facts as JSON.

Runs apart from the harness so that a driver library which crashes the process that loads it costs one
fact, not the whole diagnosis. A driver whose initialisation never returns (a GPU fallen off the bus, a hung
driver) costs neither: libcuda and NVML are probed side by side, each in a thread of its own, and after the
bound (`--bound S`, harness.gather.bounded) the facts say which call had not returned and for how long.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TypedDict, cast

from harness.facts import LibcudaFact, NvmlFact, SimulatedDriver, SimulatedLibrary
from harness.gather import libcuda, nvml
from harness.gather.bounded import INIT_TIMEOUT_S, Bounded, Step, bound_of


class NativeFacts(TypedDict):
    """What this child prints: the driver library facts, and the simulated driver's say, if it is one."""

    libcuda: LibcudaFact
    nvml: NvmlFact
    simulated: SimulatedDriver | None


def _nvml(step: Step) -> tuple[NvmlFact, str | None]:
    step.enter("NVML (nvmlInit and the device queries)")
    return nvml.probe()


def probe(bound: float = INIT_TIMEOUT_S) -> tuple[NativeFacts, bool]:
    """The facts, and whether every call returned (False: one is blocked, in a thread that cannot be joined)."""
    cuda = libcuda.Probe()
    cuda_call = Bounded(cuda.run, "refenv-libcuda")
    nvml_call = Bounded(_nvml, "refenv-nvml")
    deadline = time.monotonic() + bound
    cuda_done, nvml_done = cuda_call.wait(deadline), nvml_call.wait(deadline)
    if cuda_done:
        cuda_fact, sim = cast("tuple[LibcudaFact, SimulatedLibrary | None]", cuda_call.value)
    else:
        cuda_fact = cuda.fact
        cuda_fact["blocked_in"], cuda_fact["blocked_s"] = cuda_call.blocked()
        # The simulated driver answers for itself while its cuInit blocks (refenv/images/simdriver/libcuda.c).
        sim = libcuda.simulated_info(cuda.lib) if cuda.lib is not None else None
    nvml_fact: NvmlFact = {}
    nvml_sim: str | None = None
    if nvml_done:
        nvml_fact, nvml_sim = cast("tuple[NvmlFact, str | None]", nvml_call.value)
    else:
        nvml_fact["blocked_in"], nvml_fact["blocked_s"] = nvml_call.blocked()
    simulated: SimulatedDriver | None = None
    if sim is not None or nvml_sim is not None:
        simulated = {"libcuda": sim, "nvml": _parse(nvml_sim)}
    return {"libcuda": cuda_fact, "nvml": nvml_fact, "simulated": simulated}, cuda_done and nvml_done


def _parse(raw: str | None) -> SimulatedLibrary | None:
    if raw is None:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return {"unparsable": raw}
    return cast(SimulatedLibrary, info) if isinstance(info, dict) else {"unparsable": raw}


if __name__ == "__main__":
    facts, returned = probe(bound_of(sys.argv))
    json.dump(facts, sys.stdout)
    sys.stdout.flush()
    if not returned:
        os._exit(0)  # a thread blocked in the driver cannot be joined, and the interpreter would wait at exit
