"""One prediction: every ledger of a training step or an inference server, per GPU, and the total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from harness.memory import inference, optimizers, sharding
from harness.memory import weight_formats as wf
from harness.memory.activations import ActivationSetup, logits_bytes, logits_grad_bytes, training_activations
from harness.memory.inference import KvPart
from harness.memory.layers import MOE
from harness.memory.lora import LoraSpec
from harness.memory.params import count_params, largest_module_params, param_tensors, root_tensors, tensors_of
from harness.memory.peak import PhasePeaks, optimizer_temp_bytes, training_peaks
from harness.memory.shape import BareModel, MemoryInputError, Model, ModelConfig, layer_groups
from harness.memory.training import REGIMES, StateLedgers, adapter_bytes, regime, state_ledgers

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
    ep: int = 1                     # expert parallelism: the routed experts split over this many of the GPUs

    @property
    def effective_batch(self) -> int:
        """Sequences per optimizer step: micro-batch x accumulation x data-parallel GPUs."""
        return self.micro_batch * self.grad_accum * self.gpus


@dataclass(frozen=True)
class InferSetup:
    """How a model is served: weight format (None: the checkpoint's own), KV-cache dtype, batch, context,
    tensor-parallel GPUs, expert-parallel ranks, and how MLA's cache is held."""

    weights: str | None = "bf16"
    kv_dtype: str = "bf16"
    batch: int = 1
    context: int = 4096
    attention: str = "flash"
    gpus: int = 1
    ep: int = 1
    mla_cache: str = inference.LATENT


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
    kv_parts: tuple[KvPart, ...] = ()       # the KV cache by kind of layer (serving)
    weight_format: str = ""                 # the weights' format title (serving)

    @property
    def peak_bytes(self) -> int:
        """What must fit: the peak of a training step, or the ledgers' sum when serving."""
        return self.phases.peak if self.phases is not None else self.ledgers.total

    @property
    def mode(self) -> str:
        return "train" if isinstance(self.setup, TrainSetup) else "infer"


def _units(model: ModelConfig, setup: TrainSetup, weight_bytes: int, params: int) -> sharding.Units:
    """Bytes sharding gathers whole: a block, FSDP's root, DeepSpeed's largest module (and its gradient).

    Each is its share of the weights ledger, so frozen NF4 bases and adapters are priced as stored; under
    expert parallelism a block holds its rank's experts only.
    """
    def share(n: int) -> int:
        return weight_bytes * n // params

    block = 0
    for layer, _ in layer_groups(model):
        tensors = tensors_of(model, layer, 0)
        experts = sum(t.numel for t in tensors if t.part == wf.EXPERTS)
        local = experts * -(-layer.mlp.experts // setup.ep) // layer.mlp.experts if layer.mlp.kind == MOE else 0
        block = max(block, sum(t.numel for t in tensors) - experts + local)
    largest = largest_module_params(model)
    grad = regime(setup.regime).grad_bytes * largest if setup.lora is None else 0
    return sharding.Units(block_bytes=share(block), root_bytes=share(sum(t.numel for t in root_tensors(model))),
                          largest_module_weight_bytes=share(largest), largest_module_grad_bytes=grad)


def routed_experts(model: Model) -> int:
    """The routed experts of the model's MoE layers (0: a dense model, or only a bare count)."""
    if isinstance(model, BareModel):
        return 0
    return max((layer.mlp.experts for layer, _ in layer_groups(model) if layer.mlp.kind == MOE), default=0)


def check_ep(model: Model, ep: int, gpus: int, training: bool) -> int:
    """--ep N: a MoE model, no more ranks than experts, and (training) N dividing the data-parallel GPUs."""
    if ep < 1:
        raise MemoryInputError(f"--ep must be >= 1, got {ep}")
    if ep == 1:
        return 0
    experts = routed_experts(model)
    if not experts:
        raise MemoryInputError(f"--ep {ep}: expert parallelism needs a MoE model (--model or --config with experts)")
    if ep > experts:
        raise MemoryInputError(f"--ep {ep}: more expert-parallel ranks than the {experts} routed experts")
    if training and gpus % ep:
        raise MemoryInputError(f"--ep {ep} must divide --gpus {gpus}: each group of {ep} GPUs holds every expert once")
    return experts


def _per_gpu_state(model: Model, setup: TrainSetup, state: StateLedgers, units: sharding.Units) -> StateLedgers:
    """Per-GPU state: the routed experts split over --ep ranks and sharded over the GPUs left (gpus / ep) as
    DeepSpeed-MoE's expert data-parallel groups do; the rest sharded over every GPU."""
    experts = check_ep(model, setup.ep, setup.gpus, training=True)
    if not experts:
        return sharding.shard(state, setup.sharding, setup.gpus, units, setup.impl)
    mine = state_ledgers(model, setup.regime, setup.optimizer, setup.lora, block=setup.adam8bit_block,
                         only=frozenset({wf.EXPERTS}))
    rest = sharding.combine(state, mine, -1)
    local = sharding.expert_share(mine, experts, setup.ep)
    return sharding.combine(sharding.shard(rest, setup.sharding, setup.gpus, units, setup.impl),
                            sharding.shard(local, setup.sharding, setup.gpus // setup.ep, sharding.Units(), setup.impl))


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
        if model.quantization is not None and setup.lora is None:
            notes.append(f"the checkpoint is stored as {model.quantization.name} (quantization_config); training "
                         f"holds its weights at the regime's precision ({setup.regime})")
        notes += [f"config: {n}" for n in model.notes]
    per_gpu = _per_gpu_state(model, setup, state, units)
    if setup.ep > 1:
        notes.append(f"expert parallelism over {setup.ep} GPUs: each holds {-(-routed_experts(model) // setup.ep)} of "
                     f"{routed_experts(model)} routed experts per MoE layer, sharded over the {setup.gpus // setup.ep} "
                     "GPU(s) holding the same experts; the rest as --sharding says")
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


def _serving_weights(model: Model, setup: InferSetup, fmt: wf.WeightFormat) -> int:
    """Weights per GPU: split over the tensor-parallel ranks, the routed experts over the expert-parallel ones."""
    total = inference.inference_weight_bytes(model, fmt)
    experts = check_ep(model, setup.ep, setup.gpus, training=False)
    if not experts or isinstance(model, BareModel):
        return -(-total // setup.gpus)
    expert_bytes = sum(inference.tensor_bytes(t, fmt, inference.kept_fp32(model, fmt))
                       for layer, n in layer_groups(model) for t in tensors_of(model, layer, 0)
                       for _ in range(n) if t.part == wf.EXPERTS)
    local = -(-expert_bytes * -(-experts // setup.ep) // experts)
    return -(-(total - expert_bytes) // setup.gpus) + local


def estimate_inference(model: Model, setup: InferSetup) -> Estimate:
    """Predict weights, KV cache and the prefill working set per GPU (tensor parallel over `gpus`, experts over
    `ep`)."""
    if setup.gpus < 1 or setup.batch < 1 or setup.context < 1:
        raise MemoryInputError("--gpus, --batch and --context must be >= 1")
    fmt = inference.weight_format(model, setup.weights)
    weights = _serving_weights(model, setup, fmt)
    kv_bytes = inference.kv_dtype_bytes(setup.kv_dtype)
    notes = ["a common rule of thumb for small batches: ~1.2x the weights in all"]
    parts: tuple[KvPart, ...] = ()
    if isinstance(model, BareModel):
        params = model.params
        ledgers = Ledgers(weights=weights, activations=None)
        notes.append("the KV cache and activations need the model's shape: pass --model or --config")
    else:
        params = count_params(model).total
        parts = inference.kv_parts(model, setup.batch, setup.context, kv_bytes, setup.gpus, setup.mla_cache)
        act = -(-inference.prefill_bytes(model, setup.batch, setup.context, 2, setup.attention) // setup.gpus)
        ledgers = Ledgers(weights=weights, activations=act, kv_cache=sum(p.bytes for p in parts))
        notes.append("activations: the prefill working set of one layer and the last position's logits (an estimate)")
        notes += _model_notes(model, setup, kv_bytes, fmt)
    if setup.gpus > 1:
        mla = isinstance(model, ModelConfig) and any(layer.attention.kind == "mla" for layer, _ in layer_groups(model))
        but = " but the routed experts" if setup.ep > 1 else ""
        notes.append(f"tensor parallel over {setup.gpus} GPUs: weights{but} split evenly, KV cache by KV head"
                     + (" (MLA: the latent whole on each)" if mla else ""))
    if setup.ep > 1:
        notes.append(f"expert parallelism over {setup.ep} GPUs: each holds {-(-routed_experts(model) // setup.ep)} of "
                     f"the {routed_experts(model)} routed experts of every MoE layer")
    return Estimate(model=model, setup=setup, ledgers=ledgers, params=params, trainable_params=0,
                    notes=tuple(notes), kv_parts=parts, weight_format=fmt.title)


def _model_notes(model: ModelConfig, setup: InferSetup, kv_bytes: int, fmt: wf.WeightFormat) -> list[str]:
    """What the serving estimate assumed about this model: heads over ranks, context, MLA, the format's reach."""
    notes = []
    if setup.gpus > model.num_heads:
        raise MemoryInputError(f"--gpus {setup.gpus}: tensor parallelism cannot split {model.name}'s "
                               f"{model.num_heads} attention heads over more ranks than heads")
    if model.max_context and setup.context > model.max_context:
        notes.append(f"WARNING: --context {setup.context} is beyond {model.name}'s maximum of "
                     f"{model.max_context} tokens (max_position_embeddings)")
    mla = any(layer.attention.kind == "mla" for layer, _ in layer_groups(model))
    if setup.gpus > model.num_kv_heads and not mla:
        notes.append(f"tensor parallel over {setup.gpus} GPUs: more ranks than the {model.num_kv_heads} KV "
                     "heads, so each rank caches one whole KV head (replicated), not a fraction of one")
    if mla:
        other = inference.DECOMPRESSED if setup.mla_cache == inference.LATENT else inference.LATENT
        alt = inference.kv_cache_bytes_per_gpu(model, setup.batch, setup.context, kv_bytes, setup.gpus, other)
        if setup.mla_cache == inference.LATENT:
            notes.append("MLA: the cache holds one latent and one rotary key per token and layer, as vLLM, SGLang and "
                         "transformers 5 keep it, whole on every tensor-parallel rank; an engine that caches the "
                         f"decompressed keys and values (transformers 4's eager path) would hold {alt:,d} B per GPU")
        else:
            notes.append(f"MLA: decompressed keys and values, as transformers 4 cached them; vLLM and SGLang keep "
                         f"the latent instead: {alt:,d} B per GPU")
    if any(layer.attention.kind == "sliding" for layer, _ in layer_groups(model)):
        notes.append("sliding-window layers hold at most their window of tokens per sequence")
    if fmt.quantized:
        present = {t.part for t in param_tensors(model)}
        unquantized = [part for part in (wf.EMBEDDING, wf.HEAD, wf.ROUTER, wf.ATTENTION, wf.MLP, wf.EXPERTS,
                                         wf.VISION) if part in present and not fmt.quantizes(part)]
        notes.append(f"weights {fmt.name}; 16-bit: {', '.join([*unquantized, 'norms and biases'])}"
                     + (f" ({fmt.source})" if fmt.source else ""))
    fp32 = inference.kept_fp32(model, fmt)
    if fp32 and fmt.bits == 16:
        notes.append(f"{', '.join(sorted(fp32))} weights kept in fp32, as {model.family}'s transformers class loads "
                     f"them in {fmt.name} (_keep_in_fp32_modules)")
    return notes + [f"config: {n}" for n in model.notes]


def describe_regime(name: str) -> str:
    """One line on what a regime stores."""
    return REGIMES[name].title if name in REGIMES else name
