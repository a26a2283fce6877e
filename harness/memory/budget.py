"""The memory a run may use: a named GPU or a byte budget, less the CUDA context and a fragmentation margin."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.memory.model import MemoryInputError

LOGGER = logging.getLogger(__name__)
GIB = 1 << 30
GPU_SPECS_FILE = Path(__file__).resolve().parent.parent / "data" / "gpu_specs.json"

# Not counted by the allocator: the CUDA context and loaded kernels, ~300 MB with lazy module loading
# (CUDA_MODULE_LOADING=LAZY), more without (facts/memory.md, "What the allocator and the device add").
CUDA_CONTEXT_BYTES = 300 * (1 << 20)
# Fragmentation makes the usable budget ~10% less than the total (facts/memory.md).
FRAGMENTATION = 0.10

# Memory of each GPU as its datasheet states it (facts/gpu-specs.md, from NVIDIA datasheets as tabulated
# by stas00/ml-engineering). Used when harness/data/gpu_specs.json is absent. Datasheet "GB" of HBM and
# GDDR are binary: an A100 80GB reports 81920 MiB.
_FALLBACK_GIB = {
    "V100-SXM2-16GB": 16, "V100-SXM2-32GB": 32, "T4": 16, "A10": 24, "A100-40GB-SXM": 40, "A100-80GB-SXM": 80,
    "A100-40GB-PCIe": 40, "A100-80GB-PCIe": 80, "L4": 24, "L40S": 48, "H100-SXM": 80, "H100-PCIe": 80,
    "H200-SXM": 141, "B200": 180, "RTX-3090": 24, "RTX-4090": 24, "RTX-5090": 32,
}
_FALLBACK_SOURCE = "refenv memory's own table (facts/gpu-specs.md: NVIDIA datasheets)"
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_BUDGET_RE = re.compile(r"^\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Budget:
    """Device memory to plan against: a GPU's capacity or a given number of bytes."""

    name: str
    total_bytes: int
    source: str


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


def _entries_from_specs(doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """(display name, bytes) by every id/alias of gpu_specs.json; tolerant of memory_bytes or memory_gb."""
    out: dict[str, tuple[str, int]] = {}
    for row in doc.get("gpus", []):
        ident = str(row.get("id") or row.get("name"))
        names = [ident, str(row.get("name", ident)), *(str(a) for a in row.get("aliases", []))]
        if isinstance(row.get("memory_bytes"), int):
            sizes = [(ident, int(row["memory_bytes"]))]
        else:
            gbs = row.get("memory_gb")
            gbs = gbs if isinstance(gbs, list) else [gbs]
            gbs = [g for g in gbs if isinstance(g, (int, float))]
            if len(gbs) == 1:
                sizes = [(ident, round(gbs[0] * GIB))]
            else:  # several sizes: each needs its suffix (V100-SXM2-16GB, V100-SXM2-32GB)
                sizes = [(f"{ident}-{g:g}GB", round(g * GIB)) for g in gbs]
                names = []
        for display, size in sizes:
            out[_key(display)] = (display, size)
        for n in names:
            out.setdefault(_key(n), sizes[0])
    return out


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def gpu_table() -> tuple[dict[str, tuple[str, int]], str]:
    """Known GPUs by normalised name, and where the figures come from."""
    if GPU_SPECS_FILE.is_file():
        try:
            doc = json.loads(GPU_SPECS_FILE.read_text(encoding="utf-8"))
            table = _entries_from_specs(doc)
            if table:
                return table, f"{GPU_SPECS_FILE.name} (NVIDIA datasheets; GB read as GiB)"
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            LOGGER.warning("ignoring %s: %s", GPU_SPECS_FILE, exc)
    return {_key(k): (k, v * GIB) for k, v in _FALLBACK_GIB.items()}, _FALLBACK_SOURCE


def gpu_budget(name: str) -> Budget:
    """The memory of a named GPU (`--gpu H100-SXM`); an unknown name lists the known ones."""
    table, source = gpu_table()
    hit = table.get(_key(name))
    if hit is None:
        known = sorted({display for display, _ in table.values()})
        raise MemoryInputError(f"--gpu {name!r} is unknown; known GPUs: {', '.join(known)} (or use --budget 24GiB)")
    return Budget(name=hit[0], total_bytes=hit[1], source=source)


def parse_budget(text: str) -> Budget:
    """'24GiB', '80 GB', '2.5e10' -> bytes (GB = 1e9, GiB = 2^30)."""
    m = _BUDGET_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise MemoryInputError(f"--budget {text!r}: expected a size such as 24GiB, 80GB or 2.5e10 (bytes)")
    value = round(float(m.group(1)) * _UNITS[unit])
    if value < 1:
        raise MemoryInputError(f"--budget {text!r} must be positive")
    return Budget(name=text.strip(), total_bytes=value, source="--budget")


@dataclass(frozen=True)
class Fit:
    """Whether `required_bytes` fits in the budget after the context and the fragmentation margin."""

    budget: Budget
    required_bytes: int
    cuda_context_bytes: int
    fragmentation_margin_bytes: int
    usable_bytes: int
    headroom_bytes: int
    fits: bool


def judge(required_bytes: int, budget: Budget) -> Fit:
    """Usable = total - CUDA context - 10% margin; fits when the ledgers' sum is within it."""
    margin = round(budget.total_bytes * FRAGMENTATION)
    usable = budget.total_bytes - CUDA_CONTEXT_BYTES - margin
    headroom = usable - required_bytes
    return Fit(budget=budget, required_bytes=required_bytes, cuda_context_bytes=CUDA_CONTEXT_BYTES,
               fragmentation_margin_bytes=margin, usable_bytes=usable, headroom_bytes=headroom,
               fits=headroom >= 0)
