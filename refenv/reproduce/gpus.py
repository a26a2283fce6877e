"""GPU names from a report as simulated GPUs, from the project's one GPU table (pure).

collect_env prints names only (`nvidia-smi -L`), so the compute capability, memory and SM count come
from `harness/data/gpu_specs.json`: a name as NVML reports it first (`harness.gpus.names`), then the spec
rows the name fits (`harness.gpus.specs`), then a capability torch named in a warning. A GPU found in
none of them is simulated with stated assumptions.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from harness.gpus import specs
from harness.gpus.names import nvml_model
from refenv.model.profiles import Gpu

_UUID_RE = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_GB_RE = re.compile(r"([0-9]{1,5})\s*GB\b", re.I)
# A made-up namespace for the UUIDs of reported GPUs that came without one (uuid5 of name and index).
_NAMESPACE = uuid.UUID("6f1d8a52-4a3e-5c1b-9d0e-7a2b3c4d5e6f")
# What an unknown GPU is simulated as: a capability every wheel refenv knows covers (sm_80), 16 GiB, 80 SMs.
UNKNOWN_CC, UNKNOWN_MEMORY_GIB, UNKNOWN_SMS = "8.0", 16, 80


@dataclass(frozen=True)
class GpuGuess:
    """One GPU as the report names it."""

    name: str
    compute_capability: str | None = None
    uuid: str | None = None


def _from_specs(name: str) -> tuple[str, int, int] | None:
    """(capability, SM count, memory GiB) from the spec sheets when every row the name fits agrees on them."""
    match = specs.match_spec(name, None, None)
    rows = [match.spec] if match.spec else [specs.find_spec(i) for i in match.candidates]
    found = [r for r in rows if r is not None]
    if not found or len({r.compute_capability for r in found}) != 1:
        return None
    sms = {r.sm_count for r in found if r.sm_count}
    memory = max(m for r in found for m in r.memory_gb)
    return found[0].compute_capability, (sms.pop() if len(sms) == 1 else UNKNOWN_SMS), int(memory)


def simulated_gpu(guess: GpuGuess, index: int) -> tuple[Gpu, str | None]:
    """The GPU the simulated driver shows for a reported one, and a note when something was assumed."""
    gib = _GB_RE.search(guess.name)
    named_gib = int(gib.group(1)) if gib else None
    model = nvml_model(guess.name)
    note = None
    if model is not None:
        cc, sms, memory = model.compute_capability, model.sm_count, model.memory_mib << 20
    elif (sheet := _from_specs(guess.name)) is not None:
        cc, sms, memory = sheet[0], sheet[1], (named_gib or sheet[2]) << 30
        note = f"{guess.name}: compute capability {cc} and {sms} SMs from the spec sheets (gpu_specs.json)"
    elif guess.compute_capability:
        cc, sms, memory = guess.compute_capability, UNKNOWN_SMS, (named_gib or UNKNOWN_MEMORY_GIB) << 30
        note = f"{guess.name}: compute capability {cc} from torch's warning; SM count and memory assumed"
    else:
        cc, sms, memory = UNKNOWN_CC, UNKNOWN_SMS, (named_gib or UNKNOWN_MEMORY_GIB) << 30
        note = (f"{guess.name}: not in refenv's GPU tables, so simulated with compute capability {cc} (assumed), "
                f"{sms} SMs and {memory >> 30} GiB")
    if guess.compute_capability and guess.compute_capability != cc:
        note = f"{guess.name}: torch's warning says compute capability {guess.compute_capability}, used over {cc}"
        cc = guess.compute_capability
    given = f"GPU-{guess.uuid[4:].lower()}" if guess.uuid and guess.uuid.upper().startswith("GPU-") else ""
    ident = given if _UUID_RE.fullmatch(given) else f"GPU-{uuid.uuid5(_NAMESPACE, f'{index}/{guess.name}')}"
    bus = f"00000000:{(index + 1) % 256:02X}:00.0"
    return Gpu(guess.name, memory, cc, sms, ident, bus, index), note
