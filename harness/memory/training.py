"""The state ledgers of training — weights, gradients, optimizer state, master weights — per tensor, exact."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import optimizers
from harness.memory.lora import LoraSpec, lora_tensors, nf4_bytes
from harness.memory.params import LINEAR, ParamTensor, param_tensors
from harness.memory.shape import BareModel, MemoryInputError, Model


@dataclass(frozen=True)
class Regime:
    """Bytes per element of each ledger under a precision regime."""

    name: str
    weight_bytes: int
    grad_bytes: int
    master_bytes: int
    state_bytes: int
    activation_bytes: int
    title: str


# facts/memory.md (ZeRO paper sec. 3.1; EleutherAI "Transformer Math 101"; torch/optim/adam.py):
REGIMES = {
    "fp32": Regime("fp32", 4, 4, 0, 4, 4, "fp32 weights, gradients and optimizer state"),
    "amp": Regime("amp", 4, 4, 0, 4, 2, "torch AMP: fp32 parameters and gradients, fp32 optimizer state, "
                  "16-bit compute"),
    "mixed": Regime("mixed", 2, 2, 4, 4, 2, "mixed precision: bf16 weights and gradients, fp32 master "
                    "weights and optimizer state"),
    "bf16": Regime("bf16", 2, 2, 0, 2, 2, "pure bf16: bf16 weights, gradients and optimizer state"),
}


def regime(name: str) -> Regime:
    """The regime by name, or a clear error listing the known ones."""
    if name not in REGIMES:
        raise MemoryInputError(f"--regime {name!r} is unknown; expected one of {', '.join(REGIMES)}")
    return REGIMES[name]


def adapter_bytes(reg: Regime) -> int:
    """LoRA adapters are fp32 unless the whole run is pure bf16 (PEFT's autocast_adapter_dtype=True)."""
    return 2 if reg.name == "bf16" else 4


@dataclass(frozen=True)
class StateLedgers:
    """Bytes of the four state ledgers, and the parameter counts behind them."""

    weights: int
    gradients: int
    optimizer_state: int
    master_weights: int
    params: int
    trainable_params: int
    tensors: int
    trainable_tensors: int


def _frozen_weight_bytes(t: ParamTensor, reg: Regime, lora: LoraSpec) -> int:
    if lora.qlora:
        # QLoRA: only Linear weights are NF4; embeddings, norms, biases and the head stay 16-bit.
        return nf4_bytes(t.numel) if t.kind == LINEAR else 2 * t.numel
    return reg.weight_bytes * t.numel


def state_ledgers(model: Model, regime_name: str, optimizer: str, lora: LoraSpec | None = None, *,
                  block: int = optimizers.DEFAULT_8BIT_BLOCK, step_scalars: bool = False,
                  only: frozenset[str] | None = None) -> StateLedgers:
    """Exact state ledgers; `step_scalars` counts torch's per-tensor host `step` tensors (CPU accounting);
    `only` restricts them to the tensors of those parts (expert parallelism splits the routed experts apart)."""
    reg = regime(regime_name)
    optimizers.check(optimizer)
    if isinstance(model, BareModel):
        if lora is not None:
            raise MemoryInputError("LoRA/QLoRA needs the model's layers: use --model or --config, not --params")
        base: tuple[ParamTensor, ...] = (ParamTensor("params", (model.params,), LINEAR),)
        adapters: tuple[ParamTensor, ...] = ()
    else:
        base = param_tensors(model)
        adapters = lora_tensors(model, lora) if lora is not None else ()
        if only is not None:
            base = tuple(t for t in base if t.part in only)
            adapters = tuple(t for t in adapters if t.part in only)
    if lora is None:
        trainable, grad_b, master_b, state_b = base, reg.grad_bytes, reg.master_bytes, reg.state_bytes
        weights = sum(reg.weight_bytes * t.numel for t in base)
    else:
        ab = adapter_bytes(reg)
        # The frozen base carries no gradients or states; adapters train in their own dtype with no
        # separate master copy (they already are the precision the optimizer steps).
        trainable, grad_b, master_b, state_b = adapters, ab, 0, ab
        weights = sum(_frozen_weight_bytes(t, reg, lora) for t in base) + ab * sum(t.numel for t in adapters)
    state = sum(optimizers.state_bytes(t.shape, optimizer, state_b, block=block, step_scalars=step_scalars)
                for t in trainable) + (optimizers.shared_bytes(optimizer) if only is None else 0)
    n_trainable = sum(t.numel for t in trainable)
    return StateLedgers(
        weights=weights,
        gradients=grad_b * n_trainable,
        optimizer_state=state,
        master_weights=master_b * n_trainable,
        params=sum(t.numel for t in base) + sum(t.numel for t in adapters),
        trainable_params=n_trainable,
        tensors=len(base) + len(adapters),
        trainable_tensors=len(trainable),
    )


def bytes_per_param(regime_name: str, optimizer: str = optimizers.ADAMW) -> float:
    """The textbook figure for a large tensor: 16 for mixed + AdamW, 8 for pure bf16, ..."""
    reg = regime(regime_name)
    big = (4096, 4096)  # a square Linear weight: Adafactor factors it, 8-bit Adam quantizes it
    state = optimizers.state_bytes(big, optimizer, reg.state_bytes) / (big[0] * big[1])
    return reg.weight_bytes + reg.grad_bytes + reg.master_bytes + state
