"""The memory verification document, `refenv.memory` version 1 of kind "verification", as typed records
(written by harness/memory/verify*.py): each case's ledgers and phase peaks predicted against measured,
the sections beyond the cases (KV cache, transformers' Llama, each architecture family's own class, a small
MoE's training step, sharding), and what was not measured.

Each record writes exactly the keys the document has always had (`optional_key` marks the ones only
some records carry), so saved documents and the cell cache read as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from harness.schema.jsondata import optional_key
from harness.schema.outcomes import FAIL

MEMORY_SCHEMA = "refenv.memory"
MEMORY_VERSION = 1


@dataclass(frozen=True)
class LedgerCheck:
    """One ledger of one case: predicted (the low end of a band) against measured, and the outcome."""

    predicted_bytes: int
    measured_bytes: int
    status: str
    tolerance: str
    ratio: Optional[float] = optional_key()                  # activations: measured / predicted
    predicted_rounded_bytes: Optional[int] = optional_key()  # on a GPU: the band's high end, 512 B blocks


@dataclass(frozen=True)
class PeakCheck:
    """What one phase of the step added at its high point, predicted (a band) against measured; or SKIP
    with why (not modelled, no profiler)."""

    status: str
    why: Optional[str] = optional_key()
    predicted_bytes: Optional[int] = optional_key()
    predicted_low_bytes: Optional[int] = optional_key()
    measured_bytes: Optional[int] = optional_key()
    tolerance: Optional[str] = optional_key()


@dataclass(frozen=True)
class MemoryCase:
    """One probe case judged, or the error that kept it from being measured."""

    name: str
    status: str
    ledgers: Dict[str, LedgerCheck] = field(default_factory=dict)
    error: Optional[str] = optional_key()
    model: Optional[str] = optional_key()
    regime: Optional[str] = optional_key()
    attention: Optional[str] = optional_key()
    micro_batch: Optional[int] = optional_key()
    seq_len: Optional[int] = optional_key()
    params: Optional[int] = optional_key()
    peaks: Optional[Dict[str, PeakCheck]] = optional_key()
    detail: Optional[Tuple[str, ...]] = optional_key()
    peak_bytes: Optional[int] = optional_key()                      # on a GPU: the step's peak
    phases: Optional[Dict[str, Dict[str, int]]] = optional_key()    # on a GPU: allocated and peak per phase


@dataclass(frozen=True)
class SizeCheck:
    """A measured size against its prediction (a KV cache, a model's activations, what a rank holds)."""

    name: str
    predicted_bytes: int
    measured_bytes: int
    tolerance: str
    status: str
    predicted_low_bytes: Optional[int] = optional_key()
    ratio: Optional[float] = optional_key()
    params: Optional[int] = optional_key()


@dataclass(frozen=True)
class ChecksSection:
    """A verification beyond the probe cases: its checks and their outcome."""

    status: str
    checks: Tuple[SizeCheck, ...] = ()
    error: Optional[str] = optional_key()  # why it could not run (an API or module this torch lacks)


@dataclass(frozen=True)
class RankCounts:
    """What one rank counted under one sharding mode: its storages after forward, backward and the step."""

    weights: int
    gathered_after_forward: int
    gathered_names: Tuple[str, ...]
    gradients: int
    optimizer_state: int


@dataclass(frozen=True)
class ShardingSection:
    """Sharding over gloo: each rank's counts against the CLI's per-GPU ledgers, and the modes not run."""

    status: str
    error: Optional[str] = None
    world_size: Optional[int] = optional_key()
    model: Optional[str] = optional_key()
    params: Optional[int] = optional_key()
    modes: Optional[Tuple[str, ...]] = optional_key()
    implementation: Optional[Dict[str, str]] = optional_key()
    checks: Tuple[SizeCheck, ...] = ()
    not_measured: Dict[str, str] = field(default_factory=dict)
    ranks: Optional[Tuple[Dict[str, RankCounts], ...]] = optional_key()


@dataclass(frozen=True)
class MemoryVerification:
    """`memory --verify` (and a cell's or measurement's memory section): the prediction against a real step."""

    schema: str = MEMORY_SCHEMA
    version: int = MEMORY_VERSION
    kind: str = "verification"
    device: str = ""
    quick: bool = True
    status: str = FAIL
    error: Optional[str] = None
    torch: Optional[str] = None
    device_name: Optional[str] = None
    activation_tolerance: Optional[float] = None
    activation_model: Optional[str] = None
    cases: Tuple[MemoryCase, ...] = ()
    alloc_conf: Optional[str] = optional_key()
    kv_cache: Optional[ChecksSection] = optional_key()
    transformers: Optional[ChecksSection] = optional_key()
    sharding: Optional[ShardingSection] = optional_key()
    families: Optional[ChecksSection] = optional_key()       # transformers' classes, family by family
    moe_training: Optional[ChecksSection] = optional_key()   # a small MoE's training step against its peak
    not_measured: Optional[Dict[str, str]] = optional_key()
    wall_s: Optional[float] = None

    def sections(self) -> tuple[tuple[str, ChecksSection | ShardingSection], ...]:
        """The verifications beyond the cases that ran, by name."""
        found = (("kv_cache", self.kv_cache), ("transformers", self.transformers), ("families", self.families),
                 ("moe_training", self.moe_training), ("sharding", self.sharding))
        return tuple((name, s) for name, s in found if s is not None)


@dataclass(frozen=True)
class StepMeasurement:
    """What one measured training step of a case reports (harness/memory/measure_step.py), or its error."""

    ledgers: Dict[str, int] = field(default_factory=dict)
    parameters: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()
    phase_deltas: Dict[str, Dict[str, int]] = field(default_factory=dict)
    saved_storages: Optional[int] = None
    peak_bytes: Optional[int] = None
    phases: Optional[Dict[str, Dict[str, int]]] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class CudaMeasurements:
    """What the GPU measurement's child process reports: its torch and device, and each case's step."""

    torch: str
    device_name: str
    alloc_conf: Optional[str]
    results: Dict[str, StepMeasurement] = field(default_factory=dict)
