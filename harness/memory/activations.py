"""Activation memory of training: one model, the one the CLI prints, `--fit` uses and `--verify` measures.

Per layer it is Korthikanti et al. 2022 (arXiv 2205.05198, sec. 4.1) term by term — `korthikanti_layer_bytes`
is their Table 2 as printed — generalised to the blocks refenv counts and checked against a real torch
step (harness/memory/verify.py): RMSNorm as HF Llama computes it (fp32 upcast, rsqrt, normalised x),
LayerNorm's mean and rstd, SwiGLU/GeGLU's three intermediates, rotary (the rotated Q and K replace the
projections' outputs; cos and sin are kept once per model), GQA (K and V at kv_heads, or expanded where
the attention repeats them), MoE routing (fp32 router probabilities, top-k indices and weights, each
expert's gathered input and output), eager attention (the s x s probabilities in fp32 and their 16-bit
copy as HF computes them, or one 16-bit tensor as Megatron's fused softmax keeps) or flash/SDPA (output and
an fp32 logsumexp), dropout masks, frozen Linears under LoRA, autocast, and selective or full checkpointing.
Checked against transformers' own LlamaForCausalLM too (harness/memory/verify_hf.py). Layers that differ
are summed one by one: Qwen3's and Gemma-3's q/k norms (each an RMSNorm over head_dim, as above), sandwich
norms, a sliding window (which changes only which scores are masked, not what is kept), transformers 5's MoE
blocks (experts as 3-D tensors, every route run at once: measured against Qwen3-MoE in `memory --verify`),
shared experts (a dense MLP beside the routed ones), and MLA's projections (its latent, the decompressed K
and V, Q through its bottleneck: term by term, not measured).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.layers import MLA, MOE, Layer
from harness.memory.params import LINEAR, ROUTER, tensors_of
from harness.memory.shape import MemoryInputError, ModelConfig, layer_groups

ATTENTIONS = ("eager", "flash")
CHECKPOINTING = ("none", "selective", "full")
INDEX_BYTES = 8   # int64 indices (top-k, gathers) that autograd keeps for backward
# torch.utils.checkpoint (preserve_rng_state=True) keeps torch.get_rng_state(), a 5056-byte CPU generator
# state, per checkpointed block (measured here: `memory --verify`); on a GPU run it is host memory.
CHECKPOINT_RNG_BYTES = 5056


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
    """What shapes the activations: micro-batch, sequence, attention kind, checkpointing, element sizes."""

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
    stats_bytes: int = 4          # LayerNorm's mean and rstd: fp32 on CUDA, the input dtype on the CPU
    expand_kv: bool | None = None  # K/V repeated to every query head before attention (None: eager only)
    lse_pad: int = 1              # the logsumexp's length is padded to this (32: CUDA's efficient kernel in fp32)
    rotary: bool = True           # rotary position embeddings where the model has no learned positions
    checkpoint_state_bytes: int = 0  # full checkpointing: what each block keeps besides its inputs, on device
    autocast: bool = False        # torch.autocast over fp32 parameters (the "amp" regime): see autocast_terms
    softmax_fp32: bool = True     # eager attention's softmax in fp32 as HF computes it (False: Megatron's)
    mean_keeps_input: bool = False  # torch's `mean` saves its input for backward (torch 2.1; see torch_traits)


@dataclass(frozen=True)
class ActivationEstimate:
    """Per-token bytes of one layer, and the whole model's activations for the micro-batch."""

    layer_bytes_per_token: int
    core_bytes_per_token: int   # the s-dependent attention terms (softmax, dropout) that flash/selective drop
    head_bytes_per_token: int
    tokens: int
    layers: int
    total: int                  # what the forward leaves for backward
    recompute_bytes: int = 0    # full checkpointing: one layer recomputed and held whole during backward


def _trains(setup: ActivationSetup, module: str) -> bool:
    return setup.trainable is None or module in setup.trainable


def _keeps_input(setup: ActivationSetup, module: str) -> bool:
    """A Linear keeps its input if its weight trains, or if an adapter reads it without a dtype cast."""
    return _trains(setup, module) or (module in setup.adapted and setup.adapter_bytes == setup.act_bytes)


def norm_bytes_per_token(cfg: ModelConfig, setup: ActivationSetup, *, weight_trains: bool) -> int:
    """LayerNorm: its input, mean and rstd. RMSNorm (HF Llama): the fp32 input, rsqrt, the normalised x.

    Under autocast the residual stream stays fp32 (fp32 embeddings plus 16-bit outputs promote) and
    layer_norm runs in fp32, so a norm keeps 4-byte tensors.
    """
    h, p = cfg.hidden_size, 4 if setup.autocast else setup.act_bytes
    if cfg.norm == "layernorm":
        return h * p + 2 * setup.stats_bytes
    # x.to(fp32); x * rsqrt(x.pow(2).mean(-1) + eps); weight * x.to(dtype): pow and mul keep the fp32 x and the
    # rsqrt; the weight's product keeps the normalised x only if the weight trains (modeling_llama.py). Where
    # `mean` keeps its input (torch 2.1), the fp32 x.pow(2) stays too.
    return h * 4 + 4 + (h * p if weight_trains else 0) + (h * 4 if setup.mean_keeps_input else 0)


def _inputs_kept(setup: ActivationSetup, readers: tuple[str, ...]) -> int:
    """How many copies of a shared input its Linears keep: one, or under autocast one cast copy each."""
    keeping = sum(1 for m in readers if _keeps_input(setup, m))
    return keeping if setup.autocast else min(1, keeping)


def _moe_bytes_per_token(cfg: ModelConfig, setup: ActivationSetup, layer: Layer, expert: int, expert_in: int) -> int:
    """A top-k MoE block per token: router probabilities (fp32), top-k indices and weights, and for each of the k
    experts a token reaches: its gathered input, the expert's own activations, its output, weight and indices.

    Mixtral's sparse block as the probe runs it (one Linear per expert, out-of-place index_add) also keeps the
    weighted output; transformers 5's fused experts (all routes at once, then an in-place scatter-add) keep a
    third index per route instead (measured: `memory --verify`, Qwen3-MoE)."""
    h, p, k, e = cfg.hidden_size, setup.act_bytes, layer.mlp.top_k, layer.mlp.experts
    router = 4 * e + k * INDEX_BYTES + 4 * k + 4          # softmax(fp32), topk indices, weights and their sum
    # x[tok] as the expert keeps it; the expert; its output and routing weight (their product, which
    # index_add keeps: derivatives.yaml expand_as(source)); the token and slot indices. Under autocast the
    # weights and the product are in the fp32 residual's dtype.
    r = 4 if setup.autocast else p
    if cfg.fused_experts:
        per_route = expert_in + expert + h * p + r + 3 * INDEX_BYTES
    else:
        per_route = expert_in + expert + h * p + r + h * r + 2 * INDEX_BYTES
    return router + k * per_route


def _head_norms(cfg: ModelConfig, setup: ActivationSetup, layer: Layer) -> int:
    """Qwen3's and Gemma-3's q_norm and k_norm: an RMSNorm over each head of Q and of K, as the layer norm."""
    a = layer.attention
    if not a.qk_norm:
        return 0
    p = 4 if setup.autocast else setup.act_bytes
    width = a.q_dim + a.kv_dim
    return width * 4 + 4 * (a.num_heads + a.num_kv_heads) + (width * p if setup.trainable is None else 0) \
        + (width * 4 if setup.mean_keeps_input else 0)


def _mla_bytes_per_token(cfg: ModelConfig, setup: ActivationSetup, layer: Layer) -> int:
    """MLA's projections (DeepseekV3Attention): the input its Linears keep, Q's bottleneck and its norm, the
    latent and its norm, the decompressed K (nope + rope per head) and V, and the attention's output."""
    a, h, p = layer.attention, cfg.hidden_size, setup.act_bytes
    out = h * p                                              # the norm's output, read by q_a and kv_a
    if a.q_lora_rank:
        out += 2 * a.q_lora_rank * p + a.q_lora_rank * 4 + 4  # q_a's output, its norm's fp32 input and rsqrt
    out += (a.kv_lora_rank + a.rope_head_dim) * p            # kv_a's output
    out += a.kv_lora_rank * 4 + 4 + a.kv_lora_rank * p       # kv_a_layernorm: fp32 input, rsqrt, normalised
    out += a.q_dim * p                                       # Q (nope and rotated rope parts)
    out += a.num_heads * (a.head_dim + a.v_head_dim) * p     # the decompressed K and V
    return out


def layer_bytes_per_token(cfg: ModelConfig, setup: ActivationSetup, layer: Layer | None = None) -> tuple[int, int]:
    """(bytes one layer keeps per token, of which the s-dependent attention core); the first layer by default."""
    layer = layer or cfg.layer(0)
    att, m = layer.attention, layer.mlp
    p, h, s = setup.act_bytes, cfg.hidden_size, setup.seq_len
    a, f = att.num_heads, m.intermediate_size
    drop_h = h if cfg.hidden_dropout else 0           # 1-byte dropout mask after attention and after MLP
    norms = layer.norms * norm_bytes_per_token(cfg, setup, weight_trains=setup.trainable is None)
    eager = setup.attention == "eager"
    expand = eager if setup.expand_kv is None else setup.expand_kv
    if att.kind == MLA:
        attn = _mla_bytes_per_token(cfg, setup, layer)
    else:
        kv_width = att.q_dim if expand else att.kv_dim
        attn = _inputs_kept(setup, ("q_proj", "k_proj", "v_proj")) * h * p
        attn += (att.q_dim + 2 * kv_width) * p            # Q and K for QK^T, V for the weighted sum
        attn += _head_norms(cfg, setup, layer)
    out_width = a * att.v_head_dim
    if eager:
        # The probabilities: HF's eager softmax runs in fp32 and keeps them, then their 16-bit copy for @V
        # (modeling_llama.py eager_attention_forward); Megatron's fused softmax keeps one 16-bit tensor.
        core = a * s * (4 + (p if p != 4 else 0) if setup.softmax_fp32 else p)
        if cfg.attention_dropout:
            core += a * s * (1 + p)                   # dropout mask (1 byte) and dropout output
        attn += out_width * p if _keeps_input(setup, "o_proj") else 0  # the heads' output, made contiguous
    else:
        core = 0
        lse = -(-s // setup.lse_pad) * setup.lse_pad
        attn += out_width * p + 4 * a * lse // s      # its output (o_proj's input too) and an fp32 logsumexp
    attn += drop_h
    readers = ("gate_proj", "up_proj") if cfg.mlp == "gated" else ("up_proj",)
    mlp_in = _inputs_kept(setup, readers) * h * p       # the norm's output, as the MLP's Linears keep it
    # SwiGLU keeps the gate output, the activation's output and the up output; GeLU its input.
    per_width = (3 if cfg.mlp == "gated" else 1) * p + (p if _keeps_input(setup, "down_proj") else 0)
    if m.kind == MOE:
        # The router reads the norm's output; each expert reads its own gathered copy of it; a shared expert
        # runs as a dense MLP on the same norm output.
        router_in = (h * p if setup.trainable is None else 0) if setup.autocast else mlp_in
        mlp = router_in + _moe_bytes_per_token(cfg, setup, layer, f * per_width, mlp_in)
        mlp += m.shared_size * per_width + (h * p + 4 if m.shared_gate else 0)
    else:
        mlp = mlp_in + f * per_width
    mlp += drop_h
    lora = 0
    for module in setup.adapted:
        n_in = f if module == "down_proj" else (out_width if module == "o_proj" else h)
        # PEFT casts the input to the adapter dtype (a copy when they differ) and A's output is kept.
        cast = n_in * setup.adapter_bytes if setup.adapter_bytes != p else 0
        lora += cast + setup.lora_rank * setup.adapter_bytes
    return norms + attn + core + mlp + lora, core


def _fixed_bytes(cfg: ModelConfig, setup: ActivationSetup) -> int:
    """Per micro-batch, not per token: positions, cos/sin, the causal mask, the loss's scalar."""
    s, d, p = setup.seq_len, cfg.head_dim, setup.act_bytes
    out = INDEX_BYTES * s if cfg.max_position_embeddings and setup.trainable is None else 0
    if setup.rotary and not cfg.max_position_embeddings:
        # cos and sin, computed once in the residual stream's dtype and kept by every layer
        out += 2 * setup.micro_batch * s * d * (4 if setup.autocast else p)
    if setup.autocast:
        out += autocast_weight_copies(cfg)
    if setup.attention == "eager":
        out += s * s                                  # the boolean causal mask masked_fill keeps
    if setup.checkpointing == "full":
        out += setup.checkpoint_state_bytes * cfg.num_layers
    return out + 4                                    # cross-entropy's total_weight (the loss is fp32)


def training_activations(cfg: ModelConfig, setup: ActivationSetup) -> ActivationEstimate:
    """Activations of one micro-batch through the whole model, with the chosen checkpointing."""
    if setup.attention not in ATTENTIONS:
        raise MemoryInputError(f"--attention {setup.attention!r} is unknown; expected one of {', '.join(ATTENTIONS)}")
    if setup.checkpointing not in CHECKPOINTING:
        raise MemoryInputError(
            f"--checkpointing {setup.checkpointing!r} is unknown; expected one of {', '.join(CHECKPOINTING)}")
    if setup.micro_batch < 1 or setup.seq_len < 1:
        raise MemoryInputError("--micro-batch and --seq must be >= 1")
    per_layer = [(layer_bytes_per_token(cfg, setup, layer), n) for layer, n in layer_groups(cfg)]
    layers_all = sum(n * b for (b, _), n in per_layer)
    cores = sum(n * c for (_, c), n in per_layer)
    layer, core = max(b for (b, _), _ in per_layer), max(c for (_, c), _ in per_layer)
    p, h = setup.act_bytes, cfg.hidden_size
    # Korthikanti sec. 4.3: the final norm, the output projection's input, and the fp32 log-probabilities
    # the cross-entropy keeps (4 sbv: HF computes the loss on logits.float()); plus the embedding dropout mask.
    head = norm_bytes_per_token(cfg, setup, weight_trains=setup.trainable is None)
    head += (h * p if setup.head_trainable else 0) + 4 * cfg.vocab_size
    head += h if cfg.hidden_dropout else 0
    # With a frozen base the first norm's input (the embedding's output) needs no grad: it keeps nothing.
    first = norm_bytes_per_token(cfg, setup, weight_trains=False) if setup.trainable is not None else 0
    tokens = setup.micro_batch * setup.seq_len
    recompute = 0
    if setup.checkpointing == "full":
        # Only each layer's input is kept (torch.utils.checkpoint keeps the block's inputs); during backward
        # one layer is recomputed and held whole: a backward transient, `recompute_bytes`.
        per_token = cfg.num_layers * h * p + head - first
        recompute = layer * setup.micro_batch * setup.seq_len
    elif setup.checkpointing == "selective":
        per_token = layers_all - cores + head - first
    else:
        per_token = layers_all + head - first
    return ActivationEstimate(layer_bytes_per_token=layer, core_bytes_per_token=core,
                              head_bytes_per_token=head, tokens=tokens, layers=cfg.num_layers,
                              total=per_token * tokens + _fixed_bytes(cfg, setup), recompute_bytes=recompute)


def autocast_weight_copies(cfg: ModelConfig) -> int:
    """autocast casts every weight F.linear uses (the head too, tied or not) to 16 bits and the Linear keeps
    that copy for backward; embeddings and norms are not cast, biases are cast but not kept."""
    linear = sum(n * sum(t.numel for t in tensors_of(cfg, layer, 0) if t.kind in (LINEAR, ROUTER))
                 for layer, n in layer_groups(cfg))
    return 2 * (linear + cfg.vocab_size * cfg.hidden_size)


def logits_bytes(cfg: ModelConfig, tokens: int, act_bytes: int, autocast: bool = False) -> int:
    """Forward's transient at the head: the logits and their fp32 copy for the loss (the same tensor in fp32);
    under autocast also the final norm's fp32 output, which the head keeps only as a 16-bit cast."""
    logits = tokens * cfg.vocab_size * (act_bytes + (4 if act_bytes != 4 else 0))
    return logits + (tokens * cfg.hidden_size * 4 if autocast else 0)


def logits_grad_bytes(cfg: ModelConfig, tokens: int) -> int:
    """Backward's first transient: the fp32 gradients of the log-probabilities and of the logits."""
    return 2 * tokens * cfg.vocab_size * 4
