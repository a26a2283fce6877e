"""Data-parallel sharding of the state ledgers: DDP, ZeRO stages 1-3, FSDP FULL_SHARD / SHARD_GRAD_OP."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.memory.model import MemoryInputError
from harness.memory.training import StateLedgers

NONE = "none"
DDP = "ddp"
ZERO1 = "zero1"
ZERO2 = "zero2"
ZERO3 = "zero3"
FSDP_FULL = "fsdp-full"
FSDP_GRAD_OP = "fsdp-grad-op"
SHARDINGS = (NONE, DDP, ZERO1, ZERO2, ZERO3, FSDP_FULL, FSDP_GRAD_OP)

DESCRIPTIONS = {
    NONE: "one GPU",
    DDP: "DDP: every GPU holds everything",
    ZERO1: "ZeRO-1: optimizer state (and master weights) sharded",
    ZERO2: "ZeRO-2: optimizer state and gradients sharded",
    ZERO3: "ZeRO-3: optimizer state, gradients and weights sharded",
    FSDP_FULL: "FSDP FULL_SHARD (~ZeRO-3) plus the unsharded unit being computed and the one prefetched",
    FSDP_GRAD_OP: "FSDP SHARD_GRAD_OP (~ZeRO-2: weights stay unsharded from forward to backward)",
}


@dataclass(frozen=True)
class Sharded:
    """Which ledgers are divided over the N data-parallel GPUs."""

    optimizer: bool
    gradients: bool
    weights: bool


# ZeRO paper (Rajbhandari et al. 2019, arXiv 1910.02054, fig. 1): P_os, P_os+g, P_os+g+p.
# The master weights are part of the K = 12 optimizer bytes, so they shard with the optimizer.
_RULES = {
    NONE: Sharded(False, False, False),
    DDP: Sharded(False, False, False),
    ZERO1: Sharded(True, False, False),
    ZERO2: Sharded(True, True, False),
    FSDP_GRAD_OP: Sharded(True, True, False),
    ZERO3: Sharded(True, True, True),
    FSDP_FULL: Sharded(True, True, True),
}


def check(sharding: str, gpus: int) -> str:
    """Validate the sharding name and GPU count; errors name the option."""
    if sharding not in SHARDINGS:
        raise MemoryInputError(f"--sharding {sharding!r} is unknown; expected one of {', '.join(SHARDINGS)}")
    if gpus < 1:
        raise MemoryInputError(f"--gpus must be >= 1, got {gpus}")
    if sharding == NONE and gpus > 1:
        raise MemoryInputError(f"--gpus {gpus} needs a --sharding (ddp, zero1-3, fsdp-full, fsdp-grad-op)")
    return sharding


def _split(value: int, n: int) -> int:
    return -(-value // n)


def shard(ledgers: StateLedgers, sharding: str, gpus: int, unit_weight_bytes: int = 0) -> StateLedgers:
    """Per-GPU state ledgers; `unit_weight_bytes` is one FSDP unit (a block) gathered whole."""
    check(sharding, gpus)
    rule = _RULES[sharding]
    weights = _split(ledgers.weights, gpus) if rule.weights else ledgers.weights
    if sharding == FSDP_FULL and gpus > 1:
        # The unit being computed and the next one (backward prefetch) are all-gathered whole.
        weights += 2 * unit_weight_bytes
    return replace(
        ledgers,
        weights=weights,
        gradients=_split(ledgers.gradients, gpus) if rule.gradients else ledgers.gradients,
        optimizer_state=_split(ledgers.optimizer_state, gpus) if rule.optimizer else ledgers.optimizer_state,
        master_weights=_split(ledgers.master_weights, gpus) if rule.optimizer else ledgers.master_weights,
    )
