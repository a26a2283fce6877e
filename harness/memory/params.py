"""Every parameter tensor of a model, by name and shape: the exact count the ledgers are built on.

A layer's tensors follow its attention kind and MLP kind (harness/memory/layers.py) as transformers builds
them: GQA projections (with Qwen2's q/k/v biases, Qwen3's and Gemma-3's q/k norms, gpt-oss's sinks), MLA's
low-rank projections (DeepseekV3Attention: q_a/q_b with a norm between, kv_a_proj_with_mqa, kv_a_layernorm,
kv_b_proj, o_proj), dense SwiGLU/GeLU MLPs, and MoE blocks (a router, routed experts as one Linear each or as
3-D tensors, shared experts, Qwen2-MoE's shared-expert gate, gpt-oss's router and expert biases).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import weight_formats as wf
from harness.memory.layers import MLA, MOE, Layer, VisionTower
from harness.memory.shape import ModelConfig, layer_groups

# Kinds of tensor. Only "linear" weights are quantized by QLoRA and adapted by LoRA; embeddings,
# norms, biases, the router and the head stay in 16-bit (QLoRA paper, Dettmers et al. 2023, sec. 3).
EMBEDDING = "embedding"
LINEAR = "linear"
BIAS = "bias"
NORM = "norm"
ROUTER = "router"
HEAD = "head"
LORA = "lora"
SINK = "sink"

# Linear modules LoRA can target, by the names used here (and by HF Llama / PEFT).
ATTENTION_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLA_LINEARS = ("q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
MLP_LINEARS = ("gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ParamTensor:
    """One parameter tensor: its name (as the probe module names it), shape, kind and the part it belongs to."""

    name: str
    shape: tuple[int, ...]
    kind: str
    module: str = ""   # the Linear it belongs to ("q_proj", ...), for LoRA targets
    part: str = ""     # attention, mlp, experts, router, embedding, head, norms, vision (weight_formats)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _linear(prefix: str, module: str, n_in: int, n_out: int, bias: bool, part: str) -> list[ParamTensor]:
    out = [ParamTensor(f"{prefix}.{module}.weight", (n_out, n_in), LINEAR, module, part)]
    if bias:
        out.append(ParamTensor(f"{prefix}.{module}.bias", (n_out,), BIAS, module, wf.NORMS))
    return out


def _norm(prefix: str, cfg: ModelConfig, width: int = 0) -> list[ParamTensor]:
    width = width or cfg.hidden_size
    out = [ParamTensor(f"{prefix}.weight", (width,), NORM, part=wf.NORMS)]
    if cfg.norm == "layernorm":
        out.append(ParamTensor(f"{prefix}.bias", (width,), NORM, part=wf.NORMS))
    return out


def _mlp(prefix: str, cfg: ModelConfig, f: int, part: str = wf.MLP) -> list[ParamTensor]:
    h, bias = cfg.hidden_size, cfg.mlp_bias
    out: list[ParamTensor] = []
    if cfg.mlp == "gated":
        out += _linear(prefix, "gate_proj", h, f, bias, part)
    out += _linear(prefix, "up_proj", h, f, bias, part)
    out += _linear(prefix, "down_proj", f, h, bias, part)
    return out


def _attention(p: str, cfg: ModelConfig, layer: Layer) -> list[ParamTensor]:
    a, h = layer.attention, cfg.hidden_size
    out: list[ParamTensor] = []
    if a.kind == MLA:
        # DeepseekV3Attention: attention_bias puts biases on q_a_proj, kv_a_proj_with_mqa and o_proj only.
        if a.q_lora_rank:
            out += _linear(p, "q_a_proj", h, a.q_lora_rank, a.qkv_bias, wf.ATTENTION)
            out += _norm(f"{p}.q_a_layernorm", cfg, a.q_lora_rank)
            out += _linear(p, "q_b_proj", a.q_lora_rank, a.q_dim, False, wf.ATTENTION)
        else:
            out += _linear(p, "q_proj", h, a.q_dim, False, wf.ATTENTION)
        out += _linear(p, "kv_a_proj_with_mqa", h, a.kv_lora_rank + a.rope_head_dim, a.qkv_bias, wf.ATTENTION)
        out += _norm(f"{p}.kv_a_layernorm", cfg, a.kv_lora_rank)
        nope = a.head_dim - a.rope_head_dim
        out += _linear(p, "kv_b_proj", a.kv_lora_rank, a.num_heads * (nope + a.v_head_dim), False, wf.ATTENTION)
        out += _linear(p, "o_proj", a.num_heads * a.v_head_dim, h, a.o_bias, wf.ATTENTION)
        return out
    out += _linear(p, "q_proj", h, a.q_dim, a.qkv_bias, wf.ATTENTION)
    out += _linear(p, "k_proj", h, a.kv_dim, a.qkv_bias, wf.ATTENTION)
    out += _linear(p, "v_proj", h, a.num_kv_heads * a.v_head_dim, a.qkv_bias, wf.ATTENTION)
    out += _linear(p, "o_proj", a.num_heads * a.v_head_dim, h, a.o_bias, wf.ATTENTION)
    if a.qk_norm:
        out += _norm(f"{p}.q_norm", cfg, a.head_dim) + _norm(f"{p}.k_norm", cfg, a.head_dim)
    if a.sinks:
        out.append(ParamTensor(f"{p}.sinks", (a.num_heads,), SINK, part=wf.NORMS))
    return out


def _experts(p: str, cfg: ModelConfig, layer: Layer) -> list[ParamTensor]:
    """The routed experts: one Linear each (the probe, transformers 4's Mixtral) or 3-D tensors (transformers 5)."""
    m, h = layer.mlp, cfg.hidden_size
    if not cfg.fused_experts:
        out: list[ParamTensor] = []
        for e in range(m.experts):
            out += _mlp(f"{p}.experts.{e}", cfg, m.intermediate_size, wf.EXPERTS)
        return out
    f, e = m.intermediate_size, m.experts
    width = 2 * f if cfg.mlp == "gated" else f
    up = "gate_up_proj" if cfg.mlp == "gated" else "up_proj"
    out = [ParamTensor(f"{p}.experts.{up}", (e, width, h), LINEAR, part=wf.EXPERTS)]
    if m.expert_bias:
        out.append(ParamTensor(f"{p}.experts.{up}_bias", (e, width), BIAS, part=wf.NORMS))
    out.append(ParamTensor(f"{p}.experts.down_proj", (e, h, f), LINEAR, part=wf.EXPERTS))
    if m.expert_bias:
        out.append(ParamTensor(f"{p}.experts.down_proj_bias", (e, h), BIAS, part=wf.NORMS))
    return out


def _feed_forward(p: str, cfg: ModelConfig, layer: Layer) -> list[ParamTensor]:
    m, h = layer.mlp, cfg.hidden_size
    if m.kind != MOE:
        return _mlp(p, cfg, m.intermediate_size)
    # Mixtral's block_sparse_moe: a bias-free router h -> E (gpt-oss's has a bias), then the experts.
    out = [ParamTensor(f"{p}.router.weight", (m.experts, h), ROUTER, part=wf.ROUTER)]
    if m.router_bias:
        out.append(ParamTensor(f"{p}.router.bias", (m.experts,), ROUTER, part=wf.ROUTER))
    out += _experts(p, cfg, layer)
    if m.shared_size:
        out += _mlp(f"{p}.shared_experts", cfg, m.shared_size)
    if m.shared_gate:
        out.append(ParamTensor(f"{p}.shared_expert_gate.weight", (1, h), ROUTER, part=wf.ROUTER))
    return out


def tensors_of(cfg: ModelConfig, layer: Layer, i: int) -> tuple[ParamTensor, ...]:
    """The tensors of `layer` as block i: its norms, attention and MLP (or experts)."""
    p = f"layers.{i}"
    out = _norm(f"{p}.input_norm", cfg) + _attention(f"{p}.attn", cfg, layer) + _norm(f"{p}.post_norm", cfg)
    if layer.norms == 4:  # Gemma-2/3: a norm before and after the MLP as well (pre/post_feedforward_layernorm)
        out += _norm(f"{p}.pre_mlp_norm", cfg) + _norm(f"{p}.post_mlp_norm", cfg)
    return tuple(out + _feed_forward(f"{p}.mlp", cfg, layer))


def layer_tensors(cfg: ModelConfig, i: int) -> tuple[ParamTensor, ...]:
    """The tensors of transformer block i."""
    return tensors_of(cfg, cfg.layer(i), i)


def vision_tensors(v: VisionTower, text_hidden: int) -> tuple[ParamTensor, ...]:
    """A SigLIP tower (SiglipVisionTransformer) and Gemma-3's projector, tensor by tensor."""
    h, f, part = v.hidden_size, v.intermediate_size, wf.VISION

    def linear(prefix: str, n_in: int, n_out: int) -> list[ParamTensor]:
        return [ParamTensor(f"{prefix}.weight", (n_out, n_in), LINEAR, prefix.rsplit(".", 1)[-1], part),
                ParamTensor(f"{prefix}.bias", (n_out,), BIAS, part=wf.NORMS)]

    def layernorm(prefix: str) -> list[ParamTensor]:
        return [ParamTensor(f"{prefix}.weight", (h,), NORM, part=wf.NORMS),
                ParamTensor(f"{prefix}.bias", (h,), NORM, part=wf.NORMS)]

    out = [ParamTensor("vision.patch_embedding.weight", (h, v.num_channels, v.patch_size, v.patch_size), EMBEDDING,
                       part=part),
           ParamTensor("vision.patch_embedding.bias", (h,), BIAS, part=wf.NORMS),
           ParamTensor("vision.position_embedding.weight", (v.patches, h), EMBEDDING, part=part)]
    for i in range(v.num_layers):
        p = f"vision.layers.{i}"
        out += layernorm(f"{p}.layer_norm1")
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += linear(f"{p}.self_attn.{proj}", h, h)
        out += layernorm(f"{p}.layer_norm2") + linear(f"{p}.mlp.fc1", h, f) + linear(f"{p}.mlp.fc2", f, h)
    out += layernorm("vision.post_layernorm")
    if v.use_head:  # SiglipMultiheadAttentionPoolingHead: a probe, nn.MultiheadAttention, a norm, an MLP
        out += [ParamTensor("vision.head.probe", (1, 1, h), EMBEDDING, part=part),
                ParamTensor("vision.head.attention.in_proj_weight", (3 * h, h), LINEAR, "in_proj", part),
                ParamTensor("vision.head.attention.in_proj_bias", (3 * h,), BIAS, part=wf.NORMS)]
        out += linear("vision.head.attention.out_proj", h, h) + layernorm("vision.head.layernorm")
        out += linear("vision.head.mlp.fc1", h, f) + linear("vision.head.mlp.fc2", f, h)
    # Gemma3MultiModalProjector: mm_input_projection_weight (vision, text) and an RMSNorm over the vision width.
    out += [ParamTensor("projector.mm_input_projection_weight", (h, text_hidden), LINEAR, "mm_input_projection", part),
            ParamTensor("projector.mm_soft_emb_norm.weight", (h,), NORM, part=wf.NORMS)]
    return tuple(out)


def _embeddings(cfg: ModelConfig) -> list[ParamTensor]:
    out = [ParamTensor("embed_tokens.weight", (cfg.vocab_size, cfg.hidden_size), EMBEDDING, part=wf.EMBEDDING)]
    if cfg.max_position_embeddings:
        out.append(ParamTensor("embed_positions.weight", (cfg.max_position_embeddings, cfg.hidden_size), EMBEDDING,
                               part=wf.EMBEDDING))
    return out


def _top(cfg: ModelConfig) -> list[ParamTensor]:
    out = _norm("final_norm", cfg)
    if not cfg.tie_word_embeddings:
        out.append(ParamTensor("lm_head.weight", (cfg.vocab_size, cfg.hidden_size), HEAD, part=wf.HEAD))
    return out


def param_tensors(cfg: ModelConfig) -> tuple[ParamTensor, ...]:
    """All parameter tensors, the vision tower first, then embeddings, layers, and the head last (a tied head
    adds none)."""
    out = list(vision_tensors(cfg.vision, cfg.hidden_size)) if cfg.vision else []
    out += _embeddings(cfg)
    for i in range(cfg.num_layers):
        out += layer_tensors(cfg, i)
    return tuple(out + _top(cfg))


def root_tensors(cfg: ModelConfig) -> tuple[ParamTensor, ...]:
    """FSDP's root unit when each block is wrapped on its own: embeddings, final norm, (untied) head, and a
    vision tower, which is not a decoder block."""
    vision = list(vision_tensors(cfg.vision, cfg.hidden_size)) if cfg.vision else []
    return tuple(vision + _embeddings(cfg) + _top(cfg))


def largest_block_params(cfg: ModelConfig) -> int:
    """The most parameters one decoder block holds (FSDP gathers a block whole)."""
    return max(sum(t.numel for t in tensors_of(cfg, layer, 0)) for layer, _ in layer_groups(cfg))


def largest_module_params(cfg: ModelConfig) -> int:
    """The most parameters one module holds directly (its own weight and bias, not its children's).

    DeepSpeed's ZeRO-3 estimator gathers this much at once (`largest_layer_params` in
    deepspeed/runtime/zero/stage3.py, estimate_zero3_model_states_mem_needs_all_live: recurse=False).
    """
    groups: dict[str, int] = {}
    layers = [t for layer, _ in layer_groups(cfg) for t in tensors_of(cfg, layer, 0)]
    for t in (*layers, *root_tensors(cfg)):
        module = t.name.rsplit(".", 1)[0]
        groups[module] = groups.get(module, 0) + t.numel
    return max(groups.values())


@dataclass(frozen=True)
class ParamCount:
    """The parameter count by part; `active` is what one token touches (MoE: top-k experts)."""

    total: int
    embedding: int
    per_layer: int      # the largest block
    layers: int
    head: int
    final_norm: int
    linear_weights: int
    active: int
    experts: int = 0    # routed experts' parameters, all layers
    vision: int = 0


def _routed_expert_params(cfg: ModelConfig, layer: Layer) -> int:
    """One routed expert's parameters in `layer` (its weights and, for gpt-oss, its biases)."""
    m = layer.mlp
    if m.kind != MOE:
        return 0
    total = sum(t.numel for t in _experts("e", cfg, layer) if t.part in (wf.EXPERTS, wf.NORMS))
    return total // m.experts


def count_params(cfg: ModelConfig) -> ParamCount:
    """Exact parameter count of the architecture, by part."""
    embedding = cfg.vocab_size * cfg.hidden_size + cfg.max_position_embeddings * cfg.hidden_size
    head = 0 if cfg.tie_word_embeddings else cfg.vocab_size * cfg.hidden_size
    final_norm = cfg.hidden_size * (2 if cfg.norm == "layernorm" else 1)
    vision = sum(t.numel for t in vision_tensors(cfg.vision, cfg.hidden_size)) if cfg.vision else 0
    layers = linear = experts = unused = 0
    for layer, n in layer_groups(cfg):
        tensors = tensors_of(cfg, layer, 0)
        layers += n * sum(t.numel for t in tensors)
        linear += n * sum(t.numel for t in tensors if t.kind == LINEAR)
        one = _routed_expert_params(cfg, layer)
        experts += n * one * layer.mlp.experts
        unused += n * one * (layer.mlp.experts - layer.mlp.top_k)
    total = vision + embedding + layers + final_norm + head
    return ParamCount(total=total, embedding=embedding, per_layer=largest_block_params(cfg), layers=cfg.num_layers,
                      head=head, final_norm=final_norm, linear_weights=linear, active=total - unused,
                      experts=experts, vision=vision)


def targetable(cfg: ModelConfig) -> tuple[str, ...]:
    """The Linear module names of this architecture's decoder layers that LoRA can adapt (experts stored as
    3-D tensors are not Linear modules)."""
    found: list[str] = []
    for layer, _ in layer_groups(cfg):
        for t in tensors_of(cfg, layer, 0):
            if t.kind == LINEAR and t.module and t.module not in found:
                found.append(t.module)
    return tuple(found)
