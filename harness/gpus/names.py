"""A GPU by the name something reports for it: NVML's exact name, or any name a person or tool wrote.

Both read the one table (harness/gpus/specs.py over data/gpu_specs.json): a simulated host shows the
NVML name and memory of a row, and the report reader and reproduce take a compute capability from a
row the name fits, else from its product line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.gpus import specs


@dataclass(frozen=True)
class NvmlModel:
    """One GPU as NVML reports it: its exact name, memory, capability and SMs, and the row it comes from."""

    name: str
    memory_mib: int
    compute_capability: str
    sm_count: int
    spec: specs.GpuSpec


def nvml_models() -> dict[str, NvmlModel]:
    """Every GPU the table names as NVML does, by lower-cased name."""
    models = {}
    for row in specs.load():
        for i, name in enumerate(row.nvml_names):  # validated: one memory figure per name
            models[name.lower()] = NvmlModel(name, row.cuda_memory_mib[i], row.compute_capability,
                                             row.sm_count or 0, row)
    return models


def nvml_model(name: str) -> NvmlModel | None:
    """The table's GPU that NVML calls exactly `name` (any case), or None."""
    return nvml_models().get(name.strip().lower())


def line_capability(name: str) -> str | None:
    """The compute capability of the product line `name` belongs to, or None."""
    return next((line.compute_capability for line in specs.product_lines() if line.pattern.search(name)), None)


def capability_of(name: str) -> str | None:
    """A GPU name's compute capability: its spec row when all rows it fits agree, else its product line."""
    rows = [s for s in specs.load() if re.search(s.family, specs.normalize_name(name))]
    if rows and len({s.compute_capability for s in rows}) == 1:
        return rows[0].compute_capability
    return line_capability(name)
