"""The OOM ladder: plans in the lesson's order, each with its ledgers and its cost, up to the first that fits.

facts/memory.md, "The OOM ladder": (1) halve the micro-batch and accumulate gradients, (2) activation
checkpointing, (3) shrink or shard the optimizer ledger — 8-bit Adam, LoRA/QLoRA, FSDP across GPUs.
Each rung keeps what the rungs before it changed and takes the largest micro-batch that fits.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from harness.memory import inference, optimizers, sharding
from harness.memory.budget import Budget, Fit, judge
from harness.memory.estimate import Estimate, InferSetup, TrainSetup, estimate_inference, estimate_training
from harness.memory.lora import DEFAULT_TARGETS, LoraSpec, resolve_targets
from harness.memory.shape import BareModel, MemoryInputError, Model

MAX_GPUS = 1024
LORA_RANK = 16


@dataclass(frozen=True)
class Plan:
    """One rung of the ladder: what changes, what it costs, and the predicted ledgers."""

    rung: int
    title: str
    change: str
    cost: str
    estimate: Estimate
    fit: Fit


def _halvings(b: int) -> Iterator[int]:
    while True:
        yield b
        if b == 1:
            return
        b = max(1, b // 2)


def _best(model: Model, start: TrainSetup, budget: Budget, target: int) -> tuple[TrainSetup, Estimate, Fit]:
    """The largest micro-batch (halving from the start) that fits, accumulating to `target`; else 1."""
    found = None
    for b in _halvings(start.micro_batch):
        accum = max(1, -(-target // (b * start.gpus)))
        setup = replace(start, micro_batch=b, grad_accum=accum)
        est = estimate_training(model, setup)
        fit = judge(est.peak_bytes, budget)
        found = (setup, est, fit)
        if fit.fits:
            break
    assert found is not None
    return found


def _batch_cost(s: TrainSetup, original: TrainSetup) -> str:
    if s.micro_batch == original.micro_batch and s.effective_batch == original.effective_batch:
        return ""
    text = (f"; micro-batch {s.micro_batch} x {s.grad_accum} accumulation step(s) x {s.gpus} GPU(s) = "
            f"effective batch {s.effective_batch} (was {original.effective_batch})")
    if s.micro_batch < original.micro_batch:
        text += "; smaller GEMMs use the GPU less well"
    return text


def training_ladder(model: Model, setup: TrainSetup, budget: Budget) -> tuple[Plan, ...]:
    """The plans for a training run that does not fit, stopping at the first that does."""
    if judge(estimate_training(model, setup).peak_bytes, budget).fits:
        return ()
    plans: list[Plan] = []

    def attempt(rung: int, title: str, change: str, cost: str, start: TrainSetup) -> bool:
        s, est, fit = _best(model, start, budget, setup.effective_batch)
        plans.append(Plan(rung, title, change, cost + _batch_cost(s, setup), est, fit))
        return fit.fits

    if setup.micro_batch > 1 and attempt(
            1, "halve the micro-batch, accumulate gradients", "micro-batch halved until it fits",
            "exact: gradient accumulation keeps the effective batch",
            replace(setup, micro_batch=setup.micro_batch // 2)):
        return tuple(plans)
    ckpt = replace(setup, checkpointing="full")
    if not isinstance(model, BareModel) and attempt(
            2, "activation checkpointing", "keep only each layer's input; recompute the rest in backward",
            "~30% more compute (one extra forward per step)", ckpt):
        return tuple(plans)
    base, on = ckpt, ""
    if setup.gpus > 1:
        # Shard over the GPUs the user already has before changing the optimizer or the task.
        base = replace(ckpt, sharding=sharding.FSDP_FULL, impl=sharding.PAPER)
        on = f" with FSDP across your {setup.gpus} GPUs"
        if setup.sharding != sharding.FSDP_FULL and attempt(
                3, f"FSDP FULL_SHARD across your {setup.gpus} GPUs",
                "shard weights, gradients and optimizer state; gather one block at a time",
                f"~1.5x DDP's communication (ZeRO-3, arXiv 1910.02054); no more GPUs than the {setup.gpus} "
                "you have", base):
            return tuple(plans)
    if setup.optimizer == optimizers.ADAMW and setup.lora is None and attempt(
            3, "8-bit AdamW" + on, "optimizer state in 8 bits with blockwise fp32 scales (bitsandbytes)",
            "needs bitsandbytes; matches 32-bit Adam in the 8-bit optimizers paper (arXiv 2110.02861)",
            replace(base, optimizer=optimizers.ADAMW_8BIT)):
        return tuple(plans)
    if not isinstance(model, BareModel) and setup.lora is None:
        targets = resolve_targets(model, DEFAULT_TARGETS)
        lora = replace(base, lora=LoraSpec(LORA_RANK, targets), optimizer=optimizers.ADAMW)
        if attempt(3, f"LoRA r={LORA_RANK}" + on, f"freeze the base; train adapters on {', '.join(targets)}",
                   "a fine-tune of a pretrained model, not pretraining; adapters carry the grads and Adam", lora):
            return tuple(plans)
        qlora = replace(lora, lora=LoraSpec(LORA_RANK, targets, qlora=True))
        if attempt(3, f"QLoRA r={LORA_RANK}" + on, "base Linear weights in NF4 with double quantization",
                   "fine-tune only; dequantizing NF4 on the fly costs compute", qlora):
            return tuple(plans)
    # Last, more GPUs than the user has: full training as asked, FSDP doubling from their count.
    gpus = max(2, 2 * setup.gpus)
    while gpus <= MAX_GPUS:
        fsdp = replace(ckpt, sharding=sharding.FSDP_FULL, impl=sharding.PAPER, gpus=gpus)
        s, est, fit = _best(model, fsdp, budget, setup.effective_batch)
        if fit.fits or gpus >= MAX_GPUS:
            plans.append(Plan(3, f"FSDP FULL_SHARD across {gpus} GPUs",
                              "shard weights, gradients and optimizer state; gather one block at a time",
                              f"{gpus} GPUs" + (f" ({gpus - setup.gpus} more than you have)" if setup.gpus > 1
                                                else "") + "; ~1.5x DDP's communication (ZeRO-3, arXiv 1910.02054)"
                              + _batch_cost(s, setup), est, fit))
            break
        gpus *= 2
    return tuple(plans)


def inference_ladder(model: Model, setup: InferSetup, budget: Budget) -> tuple[Plan, ...]:
    """For serving: (1) a smaller batch, (2) int8 then int4 weights, (3) tensor parallel over N GPUs."""
    if judge(estimate_inference(model, setup).peak_bytes, budget).fits:
        return ()
    plans: list[Plan] = []
    steps: list[tuple[int, str, str, str, InferSetup]] = []
    b = setup.batch
    while b > 1:
        b //= 2
        steps.append((1, f"batch {b}", "fewer sequences at once: the KV cache shrinks in proportion",
                      "lower throughput", replace(setup, batch=b)))
    low = replace(setup, batch=1)
    current = inference.weight_format(model, setup.weights).name
    for precision, cost in (("int8", "quantization error; int8 kernels"), ("int4", "more quantization error")):
        if current in ("fp32", "bf16", "fp16") or (precision == "int4" and current == "int8"):
            steps.append((2, f"{precision} weights", f"quantize the Linear weights to {precision}", cost,
                          replace(low, weights=precision)))
    last = steps[-1][4] if steps else setup
    gpus = max(2, setup.gpus * 2)
    # Tensor parallelism splits attention heads: never more ranks than the model has heads.
    most = MAX_GPUS if isinstance(model, BareModel) else min(MAX_GPUS, model.num_heads)
    while gpus <= most:
        steps.append((3, f"tensor parallel over {gpus} GPUs", "split weights and KV cache",
                      f"{gpus} GPUs and an all-reduce per layer", replace(last, gpus=gpus)))
        gpus *= 2
    for rung, title, change, cost, s in steps:
        est = estimate_inference(model, s)
        fit = judge(est.peak_bytes, budget)
        plans.append(Plan(rung, title, change, cost, est, fit))
        if fit.fits:
            break
    return tuple(plans)


def ladder(model: Model, setup: TrainSetup | InferSetup, budget: Budget | None) -> tuple[Plan, ...]:
    """The OOM ladder for either kind of run; it needs a budget to aim at."""
    if budget is None:
        raise MemoryInputError("--fit needs a --gpu or a --budget to fit into")
    if isinstance(setup, TrainSetup):
        return training_ladder(model, setup, budget)
    return inference_ladder(model, setup, budget)
