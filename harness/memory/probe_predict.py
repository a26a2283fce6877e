"""What the probe module must use, predicted without torch: its state ledgers and what it saves for backward.

The activation model is op-exact for `probe_model.ProbeLM`, storage by storage. Against Korthikanti et
al.'s 34·sbh + 5·as²b for a Megatron layer it differs because the probe (1) has no dropout — no 1-byte
masks after attention and MLP (2·sbh) and none on the attention probabilities (as²b mask + 2·as²b
output); (2) keeps LayerNorm's mean and rstd (2 per token), and with RMSNorm the rsqrt and the
normalised x; (3) with SwiGLU keeps 4 intermediates of width f instead of GeLU's 2; (4) with SDPA keeps the
attention output and an fp32 logsumexp instead of the s x s probabilities; (5) adds the model-level terms
the per-layer formula leaves out: the final norm, the head's input, the log-softmax (s·b·V) and the mask.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.lora import LoraSpec, lora_tensors
from harness.memory.model import ModelConfig
from harness.memory.optimizers import state_bytes
from harness.memory.params import param_tensors, targetable
from harness.memory.training import REGIMES, StateLedgers, adapter_bytes, state_ledgers

# Probe regimes: (precision regime, optimizer, LoRA on every Linear).
PROBE_REGIMES = {
    "fp32-adamw": ("fp32", "adamw", False),
    "bf16-adamw": ("bf16", "adamw", False),
    "sgd-momentum": ("fp32", "sgd", False),
    "mixed-adamw": ("mixed", "adamw", False),
    "lora": ("mixed", "adamw", True),
    "adafactor": ("fp32", "adafactor", False),
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


def activation_storages(case: ProbeCase, device: str) -> list[tuple[str, int]]:
    """Each storage the probe saves for backward, (what, bytes); inputs and parameters excluded."""
    cfg, p = case.cfg, case.act_bytes
    b, s = case.micro_batch, case.seq_len
    t, h, f, qd, a = b * s, cfg.hidden_size, cfg.intermediate_size, cfg.q_dim, cfg.num_heads
    lora = case.lora is not None
    ab = 4  # adapters are fp32
    # LayerNorm's mean and rstd: the input dtype on the CPU, fp32 (the accumulate type) on CUDA.
    stat = 4 if device == "cuda" else p
    out: list[tuple[str, int]] = []
    if cfg.max_position_embeddings and not lora:  # a frozen embedding records nothing
        out.append(("position ids (int64)", 8 * s))
    if case.attention == "eager":
        out.append(("causal mask (bool)", s * s))

    def norm(label: str, input_needs_grad: bool) -> None:
        if not input_needs_grad:
            return  # a frozen norm over a tensor that needs no grad records nothing
        out.append((f"{label} input", t * h * p))
        if cfg.norm == "layernorm":
            out.extend([(f"{label} mean", t * stat), (f"{label} rstd", t * stat)])
        else:
            out.append((f"{label} rsqrt", t * p))
            if not lora:
                out.append((f"{label} normalised x (kept for the weight's grad)", t * h * p))

    def linear_input(label: str, width: int, copies: int = 1) -> None:
        if lora:  # the frozen base keeps nothing; each adapter keeps an fp32 copy of x and A(x)
            out.extend([(f"{label} input cast for an adapter", t * width * ab)] * copies)
        else:
            out.append((f"{label} input", t * width * p))

    for i in range(cfg.num_layers):
        norm(f"layer {i} input_norm", i > 0 or not lora)
        linear_input(f"layer {i} q/k/v_proj", h, copies=3)
        out.extend([(f"layer {i} {x}", t * qd * p) for x in ("Q", "K", "V")])
        if case.attention == "eager":
            out.append((f"layer {i} softmax probabilities", b * a * s * s * p))
        else:
            lse_len = -(-s // 32) * 32 if device == "cuda" and p == 4 else s  # efficient attention pads to 32
            out.append((f"layer {i} attention output", t * qd * p))
            out.append((f"layer {i} logsumexp (fp32)", b * a * lse_len * 4))
        if case.attention == "eager" or lora:
            linear_input(f"layer {i} o_proj", qd)
        norm(f"layer {i} post_norm", True)
        if cfg.mlp == "gated":
            linear_input(f"layer {i} gate/up_proj", h, copies=2)
            out.extend([(f"layer {i} {x}", t * f * p) for x in ("gate output", "SiLU output", "up output")])
        else:
            linear_input(f"layer {i} up_proj", h)
            out.append((f"layer {i} GeLU input", t * f * p))
        linear_input(f"layer {i} down_proj", f)
        if lora:
            adapters = len(targetable(cfg))
            out.extend([(f"layer {i} adapter A(x) (fp32)", t * case.lora_rank * ab)] * adapters)
    norm("final_norm", True)
    if not lora:
        out.append(("head input", t * h * p))
    out.append(("log-softmax output", t * cfg.vocab_size * p))
    out.append(("cross-entropy total_weight", p))
    return out
