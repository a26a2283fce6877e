"""The memory a run may use: a named GPU or a byte budget, less the CUDA context and a fragmentation margin."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from harness.gpus import specs
from harness.inputs import InputError, parse_float, shorten
from harness.memory.shape import MemoryInputError

GIB = 1 << 30

# Not counted by the allocator: the CUDA context and loaded kernels, ~300 MB with lazy module loading
# (CUDA_MODULE_LOADING=LAZY), more without (facts/memory.md, "What the allocator and the device add").
CUDA_CONTEXT_BYTES = 300 * (1 << 20)
# Fragmentation makes the usable budget ~10% less than the total (facts/memory.md).
FRAGMENTATION = 0.10

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
# ASCII only, matched whole: the number is then read by the input discipline (finite, bounded).
_BUDGET_RE = re.compile(r"[ \t]*([0-9.eE+-]{1,40})[ \t]*([A-Za-z]{0,3})[ \t]*")
MAX_BUDGET = 1e18  # far beyond any device, small enough that the arithmetic stays finite


@dataclass(frozen=True)
class Budget:
    """Device memory to plan against: a GPU's capacity or a given number of bytes."""

    name: str
    total_bytes: int
    source: str


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def gpu_table() -> dict[str, tuple[str, int, str]]:
    """Known GPUs by normalised id or alias: (display name, bytes CUDA reports, the figure's source).

    The rows are the project's one GPU table (harness/data/gpu_specs.json via harness.gpus.specs); a
    part sold in several sizes is named with its size (V100-SXM2-16GB, V100-SXM2-32GB).
    """
    out: dict[str, tuple[str, int, str]] = {}
    for spec in specs.load():
        sizes = spec.cuda_memory_bytes()
        source = spec.cuda_memory_source or f"{spec.source} (datasheet GB)"
        if len(sizes) == 1:
            entries = [(spec.id, sizes[0])]
        else:
            entries = [(f"{spec.id}-{g:g}GB", size) for g, size in zip(spec.memory_gb, sizes)]  # noqa: B905
        for display, size in entries:
            out[_key(display)] = (display, size, source)
        for n in (spec.id, *spec.aliases):
            out.setdefault(_key(n), (entries[0][0], entries[0][1], source))
    return out


def gpu_budget(name: str) -> Budget:
    """The memory CUDA reports for a named GPU (`--gpu H100-SXM`); an unknown name lists the known ones."""
    table = gpu_table()
    hit = table.get(_key(name))
    if hit is None:
        known = sorted({display for display, _, _ in table.values()})
        raise MemoryInputError(f"--gpu {name!r} is unknown; known GPUs: {', '.join(known)} (or use --budget 24GiB)")
    return Budget(name=hit[0], total_bytes=hit[1], source=hit[2])


def parse_budget(text: str) -> Budget:
    """'24GiB', '80 GB', '2.5e10' -> bytes (GB = 1e9, GiB = 2^30)."""
    m = _BUDGET_RE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise MemoryInputError(f"--budget {shorten(text)}: expected a size such as 24GiB, 80GB or 2.5e10 (bytes)")
    try:
        number = parse_float(m.group(1), "--budget", 0, MAX_BUDGET)
    except InputError as exc:
        raise MemoryInputError(str(exc)) from None
    value = round(number * _UNITS[unit])
    if value < 1:
        raise MemoryInputError(f"--budget {shorten(text)} must be positive")
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
