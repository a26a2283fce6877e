"""Activation memory of training (Korthikanti et al. 2022, arXiv 2205.05198), per layer and per model.

`korthikanti_layer_bytes` is the paper's Table 2 as printed (16-bit, GPT layer with dropout, MLP 4h).
`training_activations` is the same accounting generalised to the architectures refenv counts — GQA,
gated (SwiGLU) MLPs, no dropout, flash attention, frozen Linears under LoRA — and reduces exactly to the
paper's sbh(34 + 5as/h) for a GPT layer with dropout and 16-bit activations.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.model import MemoryInputError, ModelConfig

ATTENTIONS = ("eager", "flash")
CHECKPOINTING = ("none", "selective", "full")


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, *, t: int = 1, sequence_parallel: bool = False,
                            recompute: str = "none") -> float:
    """Bytes of activations one transformer layer keeps, by the paper's Table 2 (t = tensor parallel)."""
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    core = 0.0 if recompute == "selective" else 5 * a * s * s * b / t  # 5as/h x sbh: the s^2 attention terms
    if sequence_parallel:
        return 34 * sbh / t + core
    return sbh * (10 + 24 / t) + core


@dataclass(frozen=True)
class ActivationSetup:
    """What shapes the activations: micro-batch, sequence, attention kind, checkpointing, element size."""

    micro_batch: int
    seq_len: int
    attention: str = "flash"
    checkpointing: str = "none"
    act_bytes: int = 2
    trainable: frozenset[str] | None = None   # Linear modules whose weights train; None = all
    adapted: frozenset[str] = frozenset()      # Linear modules carrying LoRA adapters
    lora_rank: int = 0
    adapter_bytes: int = 4
    head_trainable: bool = True


@dataclass(frozen=True)
class ActivationEstimate:
    """Per-token bytes of one layer, and the whole model's activations for the micro-batch."""

    layer_bytes_per_token: int
    core_bytes_per_token: int   # the s-dependent attention terms (softmax, dropout) that flash/selective drop
    head_bytes_per_token: int
    tokens: int
    layers: int
    total: int


def _saves(setup: ActivationSetup, module: str) -> bool:
    """A Linear keeps its input for backward only if its weight trains or it carries an adapter."""
    trains = setup.trainable is None or module in setup.trainable
    return trains or module in setup.adapted


def layer_bytes_per_token(cfg: ModelConfig, setup: ActivationSetup) -> tuple[int, int]:
    """(bytes one layer keeps per token, of which the attention core) — Korthikanti sec. 4.1 term by term."""
    p, h, s = setup.act_bytes, cfg.hidden_size, setup.seq_len
    a, f = cfg.num_heads, cfg.intermediate_size
    drop_h = h if cfg.hidden_dropout else 0           # 1-byte dropout mask after attention and after MLP
    norms = 2 * h * p                                 # each norm keeps its input
    attn = (h * p if any(_saves(setup, m) for m in ("q_proj", "k_proj", "v_proj")) else 0)
    attn += (cfg.q_dim + cfg.kv_dim) * p + cfg.kv_dim * p     # Q and K for QK^T, V for the weighted sum
    if setup.attention == "flash":
        core = 0
        attn += cfg.q_dim * p + 4 * a                 # flash keeps its output and an fp32 logsumexp per head
    else:
        core = a * s * p                              # softmax output
        if cfg.attention_dropout:
            core += a * s * (1 + p)                   # dropout mask (1 byte) and dropout output
        attn += cfg.q_dim * p if _saves(setup, "o_proj") else 0
    attn += drop_h
    if cfg.mlp == "gated":
        mlp = h * p if _saves(setup, "gate_proj") or _saves(setup, "up_proj") else 0
        mlp += 3 * f * p                              # gate output, SiLU output, up output
        mlp += f * p if _saves(setup, "down_proj") else 0
    else:
        mlp = h * p if _saves(setup, "up_proj") else 0
        mlp += f * p                                  # GeLU input
        mlp += f * p if _saves(setup, "down_proj") else 0
    if cfg.num_experts:
        mlp = mlp * cfg.experts_per_token + 4 * cfg.num_experts  # top-k experts per token + fp32 router
    mlp += drop_h
    lora = 0
    for module in setup.adapted:
        n_in = cfg.intermediate_size if module == "down_proj" else (cfg.q_dim if module == "o_proj" else h)
        # PEFT casts the input to the adapter dtype (a copy when they differ) and A's output is kept.
        cast = n_in * setup.adapter_bytes if setup.adapter_bytes != p else 0
        lora += cast + setup.lora_rank * setup.adapter_bytes
    return norms + attn + core + mlp + lora, core


def training_activations(cfg: ModelConfig, setup: ActivationSetup) -> ActivationEstimate:
    """Activations of one micro-batch through the whole model, with the chosen checkpointing."""
    if setup.attention not in ATTENTIONS:
        raise MemoryInputError(f"--attention {setup.attention!r} is unknown; expected one of {', '.join(ATTENTIONS)}")
    if setup.checkpointing not in CHECKPOINTING:
        raise MemoryInputError(
            f"--checkpointing {setup.checkpointing!r} is unknown; expected one of {', '.join(CHECKPOINTING)}")
    if setup.micro_batch < 1 or setup.seq_len < 1:
        raise MemoryInputError("--micro-batch and --seq must be >= 1")
    layer, core = layer_bytes_per_token(cfg, setup)
    p, h = setup.act_bytes, cfg.hidden_size
    # Korthikanti sec. 4.3: the final norm's input, the output projection's input, and the logits the
    # cross-entropy keeps in fp32 (4 sbv); plus the embedding dropout mask when dropout is on.
    head = h * p + (h * p if setup.head_trainable else 0) + 4 * cfg.vocab_size
    head += h if cfg.hidden_dropout else 0
    tokens = setup.micro_batch * setup.seq_len
    if setup.checkpointing == "full":
        # Only each layer's input is kept; during backward one layer is recomputed and held whole.
        per_token = cfg.num_layers * h * p + layer + head
    elif setup.checkpointing == "selective":
        per_token = cfg.num_layers * (layer - core) + head
    else:
        per_token = cfg.num_layers * layer + head
    return ActivationEstimate(layer_bytes_per_token=layer, core_bytes_per_token=core,
                              head_bytes_per_token=head, tokens=tokens, layers=cfg.num_layers,
                              total=per_token * tokens)


def logits_grad_bytes(cfg: ModelConfig, tokens: int, act_bytes: int) -> int:
    """Backward's first transient: the gradient of the log-probabilities and of the logits, s x b x V each."""
    return 2 * tokens * cfg.vocab_size * act_bytes
