"""Data-parallel sharding of the state ledgers: DDP, ZeRO stages 1-3 (as the paper counts them or as
DeepSpeed implements them), FSDP FULL_SHARD / SHARD_GRAD_OP as torch implements them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.memory.shape import MemoryInputError
from harness.memory.training import StateLedgers

NONE = "none"
DDP = "ddp"
ZERO1 = "zero1"
ZERO2 = "zero2"
ZERO3 = "zero3"
FSDP_FULL = "fsdp-full"
FSDP_GRAD_OP = "fsdp-grad-op"
SHARDINGS = (NONE, DDP, ZERO1, ZERO2, ZERO3, FSDP_FULL, FSDP_GRAD_OP)
ZERO = (ZERO1, ZERO2, ZERO3)

PAPER = "paper"
DEEPSPEED = "deepspeed"
TORCH = "torch"
IMPLS = (PAPER, DEEPSPEED)

DESCRIPTIONS = {
    NONE: "one GPU",
    DDP: "DDP: every GPU holds everything",
    ZERO1: "ZeRO-1: optimizer state (and master weights) sharded",
    ZERO2: "ZeRO-2: optimizer state and gradients sharded",
    ZERO3: "ZeRO-3: optimizer state, gradients and weights sharded, plus the gathered block and the one prefetched",
    FSDP_FULL: "FSDP FULL_SHARD (~ZeRO-3) plus the unsharded block being computed, the one prefetched, and the "
               "root unit (embeddings, final norm, head) kept gathered from forward through backward",
    FSDP_GRAD_OP: "FSDP SHARD_GRAD_OP (~ZeRO-2: every unit stays gathered from forward to backward, "
                  "beside its shard)",
}
IMPL_SOURCES = {
    PAPER: "as the ZeRO paper counts it (Rajbhandari et al. 2019, arXiv 1910.02054, fig. 1)",
    DEEPSPEED: "as DeepSpeed implements it: 16-bit weights and gradients plus an fp32 gradient partition "
               "(deepspeed.runtime.zero estimate_zero2/zero3_model_states_mem_needs, no offload)",
    TORCH: "as torch implements it (torch.distributed.fsdp; the root's reshard_after_forward is False)",
}


@dataclass(frozen=True)
class Units:
    """What sharding gathers whole, in bytes at the working precision (0 where the shape is unknown)."""

    block_bytes: int = 0            # one transformer block's weights
    root_bytes: int = 0             # FSDP's root unit: embeddings, final norm, head
    largest_module_weight_bytes: int = 0   # DeepSpeed ZeRO-3: the largest module's weights, gathered
    largest_module_grad_bytes: int = 0     # ... and its 16-bit gradient before the reduce-scatter


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
# DeepSpeed keeps the optimizer's gradient partition in fp32 whatever the training dtype
# (stage_1_and_2.py / stage3.py: fp32_partitioned_groups_flat and their .grad).
DEEPSPEED_GRAD_PARTITION_BYTES = 4


def check(sharding: str, gpus: int, impl: str = PAPER) -> str:
    """Validate the sharding name, GPU count and implementation; errors name the option."""
    if sharding not in SHARDINGS:
        raise MemoryInputError(f"--sharding {sharding!r} is unknown; expected one of {', '.join(SHARDINGS)}")
    if gpus < 1:
        raise MemoryInputError(f"--gpus must be >= 1, got {gpus}")
    if sharding == NONE and gpus > 1:
        raise MemoryInputError(f"--gpus {gpus} needs a --sharding (ddp, zero1-3, fsdp-full, fsdp-grad-op)")
    if impl not in IMPLS:
        raise MemoryInputError(f"--impl {impl!r} is unknown; expected one of {', '.join(IMPLS)}")
    if impl == DEEPSPEED and sharding not in ZERO:
        raise MemoryInputError(f"--impl deepspeed applies to --sharding zero1|zero2|zero3, not {sharding}")
    return sharding


def implementation(sharding: str, impl: str = PAPER) -> str:
    """Which implementation a figure models: paper or deepspeed for ZeRO, torch for FSDP, none otherwise."""
    if sharding in ZERO:
        return impl
    return TORCH if sharding in (FSDP_FULL, FSDP_GRAD_OP) else NONE


def _split(value: int, n: int) -> int:
    return -(-value // n)


def _deepspeed(ledgers: StateLedgers, sharding: str, gpus: int, units: Units) -> StateLedgers:
    """ZeRO-1/2: 4Ψ + 16Ψ/N; ZeRO-3: 4 x largest module + 18Ψ/N (mixed precision, AdamW, no offload).

    DeepSpeed publishes no stage-1 estimator; stages 1 and 2 share deepspeed/runtime/zero/stage_1_and_2.py,
    whose 16-bit gradients stay whole until reduced, so stage 1 is counted as stage 2.
    """
    fp32_grads = _split(DEEPSPEED_GRAD_PARTITION_BYTES * ledgers.trainable_params, gpus)
    if sharding == ZERO3:
        weights = _split(ledgers.weights, gpus) + units.largest_module_weight_bytes
        gradients = units.largest_module_grad_bytes + fp32_grads
    else:
        weights, gradients = ledgers.weights, ledgers.gradients + fp32_grads
    return replace(ledgers, weights=weights, gradients=gradients,
                   optimizer_state=_split(ledgers.optimizer_state, gpus),
                   master_weights=_split(ledgers.master_weights, gpus))


_BYTES = ("weights", "gradients", "optimizer_state", "master_weights")


def combine(a: StateLedgers, b: StateLedgers, sign: int = 1) -> StateLedgers:
    """Field by field a + b (or a - b): the routed experts' ledgers apart from the rest, and back together."""
    return replace(a, **{f: getattr(a, f) + sign * getattr(b, f) for f in
                         (*_BYTES, "params", "trainable_params", "tensors", "trainable_tensors")})


def expert_share(ledgers: StateLedgers, experts: int, ep: int) -> StateLedgers:
    """What one expert-parallel rank keeps of the routed experts' ledgers: ceil(E / ep) experts of E."""
    local = -(-experts // ep)
    return replace(ledgers, **{f: -(-getattr(ledgers, f) * local // experts) for f in _BYTES})


def shard(ledgers: StateLedgers, sharding: str, gpus: int, units: Units | None = None,
          impl: str = PAPER) -> StateLedgers:
    """Per-GPU state ledgers under `sharding` over `gpus`, as `impl` implements it."""
    check(sharding, gpus, impl)
    units = units or Units()
    if impl == DEEPSPEED and gpus > 1:
        return _deepspeed(ledgers, sharding, gpus, units)
    rule = _RULES[sharding]
    weights = _split(ledgers.weights, gpus) if rule.weights else ledgers.weights
    if sharding in (ZERO3, FSDP_FULL) and gpus > 1:
        # The block being computed and the next one (prefetched) are all-gathered whole, beside the shards.
        weights += 2 * units.block_bytes
    if sharding == FSDP_GRAD_OP and gpus > 1:
        # torch keeps the shard and, from forward to backward, the gathered whole beside it (measured with
        # fully_shard(reshard_after_forward=False): harness/memory/verify_dist.py).
        weights = _split(ledgers.weights, gpus) + ledgers.weights
    if sharding == FSDP_FULL and gpus > 1:
        # torch FSDP does not reshard the root after forward, as its parameters are all-gathered again at
        # once for backward (FSDP2 fully_shard: "the root ... reshard_after_forward ... set to False";
        # FSDP1 the same for the root handle): the root unit stays whole beside its shard.
        weights += units.root_bytes
    return replace(
        ledgers,
        weights=weights,
        gradients=_split(ledgers.gradients, gpus) if rule.gradients else ledgers.gradients,
        optimizer_state=_split(ledgers.optimizer_state, gpus) if rule.optimizer else ledgers.optimizer_state,
        master_weights=_split(ledgers.master_weights, gpus) if rule.optimizer else ledgers.master_weights,
    )
