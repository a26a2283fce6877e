"""What the probe module must use, predicted without torch: its state ledgers, and its activations set up
for the one activation model the CLI prints (harness/memory/activations.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.memory.activations import (
    CHECKPOINT_RNG_BYTES,
    ActivationSetup,
    logits_bytes,
    logits_grad_bytes,
    training_activations,
)
from harness.memory.lora import LoraSpec, lora_tensors
from harness.memory.optimizers import state_bytes
from harness.memory.params import param_tensors, targetable
from harness.memory.peak import optimizer_temp_bytes
from harness.memory.shape import ModelConfig
from harness.memory.torch_traits import TorchTraits
from harness.memory.training import REGIMES, StateLedgers, adapter_bytes, state_ledgers

# Probe regimes: (precision regime, optimizer, LoRA on every Linear).
PROBE_REGIMES = {
    "fp32-adamw": ("fp32", "adamw", False),
    "bf16-adamw": ("bf16", "adamw", False),
    "sgd-momentum": ("fp32", "sgd", False),
    "mixed-adamw": ("mixed", "adamw", False),
    "lora": ("mixed", "adamw", True),
    "adafactor": ("fp32", "adafactor", False),
    "amp-adamw": ("amp", "adamw", False),   # torch's own recipe: fp32 parameters, bf16 autocast
    "peft-lora": ("mixed", "adamw", True),  # the same LoRA, made by PEFT itself (when peft is installed)
}
LEDGERS = ("weights", "master_weights", "activations", "gradients", "optimizer_state")
BLOCK = 512  # the CUDA caching allocator rounds every block up to 512 B (CUDACachingAllocator.cpp, kMinBlockSize)


@dataclass(frozen=True)
class ProbeCase:
    """One verification case: a probe size, a regime, an attention kind and a batch shape."""

    name: str
    cfg: ModelConfig
    regime: str
    attention: str
    micro_batch: int
    seq_len: int
    lora_rank: int = 8
    checkpointing: str = "none"   # "full": every block under torch.utils.checkpoint
    traits: TorchTraits = field(default_factory=TorchTraits)  # what its torch does (harness/memory/torch_traits.py)

    @property
    def precision(self) -> str:
        return PROBE_REGIMES[self.regime][0]

    @property
    def optimizer(self) -> str:
        return PROBE_REGIMES[self.regime][1]

    @property
    def lora(self) -> LoraSpec | None:
        return LoraSpec(self.lora_rank, targetable(self.cfg)) if PROBE_REGIMES[self.regime][2] else None

    @property
    def act_bytes(self) -> int:
        return REGIMES[self.precision].activation_bytes if self.precision != "fp32" else 4


def rounded(n: int) -> int:
    """A block's size as the CUDA caching allocator accounts it."""
    return max(BLOCK, -(-n // BLOCK) * BLOCK)


def state_prediction(case: ProbeCase, *, step_scalars: bool) -> StateLedgers:
    """The CLI's own ledger arithmetic for this case (host `step` tensors counted on the CPU only)."""
    return state_ledgers(case.cfg, case.precision, case.optimizer, case.lora, step_scalars=step_scalars)


def state_allocations(case: ProbeCase) -> dict[str, list[int]]:
    """Every device tensor of the state ledgers, one size per allocation (for the 512 B rounding)."""
    reg = REGIMES[case.precision]
    lora = case.lora
    base = param_tensors(case.cfg)
    out: dict[str, list[int]] = {k: [] for k in ("weights", "master_weights", "gradients", "optimizer_state")}
    if lora is None:
        trainable = list(base)
        out["weights"] = [t.numel * reg.weight_bytes for t in base]
        out["master_weights"] = [t.numel * reg.master_bytes for t in base if reg.master_bytes]
        grad_b, state_b = reg.grad_bytes, reg.state_bytes
    else:
        ab = adapter_bytes(reg)
        trainable = list(lora_tensors(case.cfg, lora))
        out["weights"] = [t.numel * reg.weight_bytes for t in base] + [t.numel * ab for t in trainable]
        grad_b, state_b = ab, ab
    out["gradients"] = [t.numel * grad_b for t in trainable]
    for t in trainable:
        if case.optimizer == "adamw":
            out["optimizer_state"] += [t.numel * state_b] * 2
        elif case.optimizer == "adafactor" and len(t.shape) >= 2:
            rows = t.numel // t.shape[-1]
            out["optimizer_state"] += [rows * state_b, (t.numel // rows) * state_b]
        else:
            out["optimizer_state"].append(state_bytes(t.shape, case.optimizer, state_b))
    return out


def activation_setup(case: ProbeCase, device: str) -> ActivationSetup:
    """The CLI's activation model set up as the probe runs: its dtype, attention, adapters, device details."""
    lora = case.lora
    gqa = case.cfg.num_kv_heads < case.cfg.num_heads
    # CUDA's fp32 SDPA (the efficient kernel) takes no enable_gqa, so the probe repeats K/V itself there,
    # and that kernel pads its logsumexp to 32 positions.
    fp32_cuda_sdpa = device == "cuda" and case.act_bytes == 4 and case.attention == "sdpa"
    return ActivationSetup(
        micro_batch=case.micro_batch, seq_len=case.seq_len, checkpointing=case.checkpointing,
        attention="eager" if case.attention == "eager" else "flash", act_bytes=case.act_bytes,
        trainable=frozenset() if lora else None, adapted=frozenset(lora.targets) if lora else frozenset(),
        lora_rank=case.lora_rank if lora else 0, adapter_bytes=4, head_trainable=lora is None,
        stats_bytes=4 if device == "cuda" else case.act_bytes,
        # A torch whose SDPA takes no enable_gqa (before 2.5), or whose CPU kernel would take it on the math path
        # (2.8), gets K/V repeated by the probe as well.
        expand_kv=case.attention == "eager" or (gqa and (fp32_cuda_sdpa or not case.traits.sdpa_gqa or (
            device == "cpu" and not case.traits.sdpa_gqa_fused_cpu))),
        mean_keeps_input=case.traits.mean_keeps_input,
        checkpoint_state_bytes=CHECKPOINT_RNG_BYTES if device == "cpu" else 0,
        autocast=case.precision == "amp",
        lse_pad=32 if fp32_cuda_sdpa else 1)


def expand_kv(case: ProbeCase, device: str) -> bool:
    """Whether the probe repeats K/V itself before SDPA (see activation_setup)."""
    return case.attention == "sdpa" and bool(activation_setup(case, device).expand_kv)


def activation_prediction(case: ProbeCase, device: str) -> int:
    """Bytes the probe keeps for backward, by the one activation model the CLI uses."""
    return training_activations(case.cfg, activation_setup(case, device)).total


def phase_prediction(case: ProbeCase, device: str) -> dict[str, tuple[int, int] | None]:
    """(lowest, highest) bytes each phase of the probe's first step adds at its high point over its start.

    forward: the activations and the logits' transient; backward: d(logits), or the gradients less the
    activations they replace, or under full checkpointing a recomputed layer (1x to 2x: its backward makes
    gradients as large as what it recomputed); step: the fp32 gradient copies, the optimizer state it
    creates and foreach AdamW's temporary. Adafactor's temporaries are not modelled: None.
    """
    acts = training_activations(case.cfg, activation_setup(case, device))
    tokens = case.micro_batch * case.seq_len
    state = state_prediction(case, step_scalars=device == "cpu")
    device_state = state_prediction(case, step_scalars=False).optimizer_state
    ends = max(logits_grad_bytes(case.cfg, tokens), state.gradients - acts.total)
    step = (state.master_weights + state.optimizer_state
            + optimizer_temp_bytes(case.optimizer, device_state, case.traits.adamw_eps_out_of_place))
    forward = acts.total + logits_bytes(case.cfg, tokens, case.act_bytes, case.precision == "amp")
    backward = (max(ends, acts.recompute_bytes), max(ends, 2 * acts.recompute_bytes))
    return {"forward": (forward, forward), "backward": backward,
            "optimizer_step": None if case.optimizer == "adafactor" else (step, step)}
