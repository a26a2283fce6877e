"""One prediction: every ledger of a training step or an inference server, per GPU, and the total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from harness.memory import inference, optimizers, sharding
from harness.memory.activations import ActivationSetup, logits_bytes, logits_grad_bytes, training_activations
from harness.memory.lora import LoraSpec
from harness.memory.params import count_params, largest_module_params, layer_tensors, root_tensors
from harness.memory.peak import PhasePeaks, optimizer_temp_bytes, training_peaks
from harness.memory.shape import BareModel, MemoryInputError, Model, ModelConfig
from harness.memory.training import REGIMES, adapter_bytes, regime, state_ledgers

DEFAULT_IMPL = sharding.PAPER


@dataclass(frozen=True)
class TrainSetup:
    """How a model is trained: precision, optimizer, adapters, sharding, batch shape, checkpointing."""

    regime: str = "mixed"
    optimizer: str = optimizers.ADAMW
    lora: LoraSpec | None = None
    sharding: str = sharding.NONE
    gpus: int = 1
    micro_batch: int = 1
    seq_len: int = 2048
    attention: str = "flash"
    checkpointing: str = "none"
    grad_accum: int = 1
    adam8bit_block: int = optimizers.DEFAULT_8BIT_BLOCK
    impl: str = DEFAULT_IMPL        # which ZeRO implementation the figure models (paper or deepspeed)

    @property
    def effective_batch(self) -> int:
        """Sequences per optimizer step: micro-batch x accumulation x data-parallel GPUs."""
        return self.micro_batch * self.grad_accum * self.gpus


@dataclass(frozen=True)
class InferSetup:
    """How a model is served: weight precision, KV-cache dtype, batch, context, tensor-parallel GPUs."""

    weights: str = "bf16"
    kv_dtype: str = "bf16"
    batch: int = 1
    context: int = 4096
    attention: str = "flash"
    gpus: int = 1


Setup = Union[TrainSetup, InferSetup]  # noqa: UP007  (a runtime alias: X | Y needs 3.10)


@dataclass(frozen=True)
class Ledgers:
    """Bytes per GPU of each ledger; activations None when the model's shape is unknown."""

    weights: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    master_weights: int = 0
    activations: int | None = 0
    kv_cache: int = 0

    @property
    def total(self) -> int:
        return (self.weights + self.gradients + self.optimizer_state + self.master_weights
                + (self.activations or 0) + self.kv_cache)


@dataclass(frozen=True)
class Estimate:
    """A prediction with the parameter counts behind it and notes on what it assumes."""

    model: Model
    setup: Setup
    ledgers: Ledgers
    params: int
    trainable_params: int
    notes: tuple[str, ...] = field(default=())
    phases: PhasePeaks | None = None

    @property
    def peak_bytes(self) -> int:
        """What must fit: the peak of a training step, or the ledgers' sum when serving."""
        return self.phases.peak if self.phases is not None else self.ledgers.total

    @property
    def mode(self) -> str:
        return "train" if isinstance(self.setup, TrainSetup) else "infer"


def _units(model: ModelConfig, setup: TrainSetup, weight_bytes: int, params: int) -> sharding.Units:
    """Bytes sharding gathers whole: a block, FSDP's root, DeepSpeed's largest module (and its gradient).

    Each is its share of the weights ledger, so frozen NF4 bases and adapters are priced as stored.
    """
    def share(n: int) -> int:
        return weight_bytes * n // params

    largest = largest_module_params(model)
    grad = regime(setup.regime).grad_bytes * largest if setup.lora is None else 0
    return sharding.Units(block_bytes=share(sum(t.numel for t in layer_tensors(model, 0))),
                          root_bytes=share(sum(t.numel for t in root_tensors(model))),
                          largest_module_weight_bytes=share(largest), largest_module_grad_bytes=grad)


def estimate_training(model: Model, setup: TrainSetup) -> Estimate:
    """Predict every ledger of one training step per GPU."""
    reg = regime(setup.regime)
    sharding.check(setup.sharding, setup.gpus, setup.impl)
    if setup.micro_batch < 1 or setup.grad_accum < 1 or setup.seq_len < 1:
        raise MemoryInputError("--micro-batch, --grad-accum and --seq must be >= 1")
    state = state_ledgers(model, setup.regime, setup.optimizer, setup.lora, block=setup.adam8bit_block)
    notes = ["torch.optim's per-tensor `step` counters live on the host and are not counted"]
    units = sharding.Units()
    activations: int | None = None
    recompute = 0
    if isinstance(model, BareModel):
        notes.append("activations need the model's shape: pass --model or --config")
        if setup.sharding in (sharding.FSDP_FULL, sharding.ZERO3):
            notes.append("the blocks sharding gathers whole need the model's shape: not counted")
    else:
        units = _units(model, setup, state.weights, state.params)
        lora = setup.lora
        act = ActivationSetup(
            micro_batch=setup.micro_batch, seq_len=setup.seq_len, attention=setup.attention,
            checkpointing=setup.checkpointing, act_bytes=reg.activation_bytes,
            trainable=frozenset() if lora else None, adapted=frozenset(lora.targets) if lora else frozenset(),
            lora_rank=lora.rank if lora else 0, adapter_bytes=adapter_bytes(reg), head_trainable=lora is None,
            autocast=setup.regime == "amp",
        )
        acts = training_activations(model, act)
        activations, recompute = acts.total, acts.recompute_bytes
        if model.max_context and setup.seq_len > model.max_context:
            notes.append(f"WARNING: --seq {setup.seq_len} is beyond {model.name}'s maximum of "
                         f"{model.max_context} tokens (max_position_embeddings)")
        if setup.regime == "amp":
            notes.append("AMP: the 16-bit weight copies autocast keeps for backward are counted in activations")
    per_gpu = sharding.shard(state, setup.sharding, setup.gpus, units, setup.impl)
    ledgers = Ledgers(weights=per_gpu.weights, gradients=per_gpu.gradients,
                      optimizer_state=per_gpu.optimizer_state, master_weights=per_gpu.master_weights,
                      activations=activations)
    deepspeed = sharding.implementation(setup.sharding, setup.impl) == sharding.DEEPSPEED
    tokens = setup.micro_batch * setup.seq_len
    phases = training_peaks(
        weights=per_gpu.weights, gradients=per_gpu.gradients, optimizer_state=per_gpu.optimizer_state,
        master_weights=per_gpu.master_weights, activations=activations or 0,
        logits_bytes=0 if isinstance(model, BareModel) else logits_bytes(model, tokens, reg.activation_bytes,
                                                                          setup.regime == "amp"),
        logits_grad_bytes=0 if isinstance(model, BareModel) else logits_grad_bytes(model, tokens),
        recompute_bytes=recompute,
        # DeepSpeed's fp32 gradient partition is already a ledger; elsewhere the copies match the masters.
        fp32_grad_copy_bytes=0 if deepspeed else per_gpu.master_weights,
        optimizer_temp_bytes=optimizer_temp_bytes(setup.optimizer, per_gpu.optimizer_state),
        grads_persist=setup.grad_accum > 1)
    return Estimate(model=model, setup=setup, ledgers=ledgers, params=state.params,
                    trainable_params=state.trainable_params, notes=tuple(notes), phases=phases)


def estimate_inference(model: Model, setup: InferSetup) -> Estimate:
    """Predict weights, KV cache and the prefill working set per GPU (tensor parallel over `gpus`)."""
    if setup.gpus < 1 or setup.batch < 1 or setup.context < 1:
        raise MemoryInputError("--gpus, --batch and --context must be >= 1")
    weights = -(-inference.inference_weight_bytes(model, setup.weights) // setup.gpus)
    kv_bytes = inference.kv_dtype_bytes(setup.kv_dtype)
    notes = ["a common rule of thumb for small batches: ~1.2x the weights in all"]
    if isinstance(model, BareModel):
        params = model.params
        ledgers = Ledgers(weights=weights, activations=None)
        notes.append("the KV cache and activations need the model's shape: pass --model or --config")
    else:
        params = count_params(model).total
        kv = inference.kv_cache_bytes_per_gpu(model, setup.batch, setup.context, kv_bytes, setup.gpus)
        act = -(-inference.prefill_bytes(model, setup.batch, setup.context, 2, setup.attention) // setup.gpus)
        ledgers = Ledgers(weights=weights, activations=act, kv_cache=kv)
        notes.append("activations: the prefill working set of one layer and the last position's logits (an estimate)")
        if setup.gpus > model.num_heads:
            raise MemoryInputError(f"--gpus {setup.gpus}: tensor parallelism cannot split {model.name}'s "
                                   f"{model.num_heads} attention heads over more ranks than heads")
        if model.max_context and setup.context > model.max_context:
            notes.append(f"WARNING: --context {setup.context} is beyond {model.name}'s maximum of "
                         f"{model.max_context} tokens (max_position_embeddings)")
        if setup.gpus > model.num_kv_heads:
            notes.append(f"tensor parallel over {setup.gpus} GPUs: more ranks than the {model.num_kv_heads} KV "
                         "heads, so each rank caches one whole KV head (replicated), not a fraction of one")
    if setup.gpus > 1:
        notes.append(f"tensor parallel over {setup.gpus} GPUs: weights split evenly, KV cache by KV head")
    return Estimate(model=model, setup=setup, ledgers=ledgers, params=params, trainable_params=0,
                    notes=tuple(notes))


def describe_regime(name: str) -> str:
    """One line on what a regime stores."""
    return REGIMES[name].title if name in REGIMES else name
