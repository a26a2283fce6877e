"""Every parameter tensor of a model, by name and shape: the exact count the ledgers are built on."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.shape import ModelConfig

# Kinds of tensor. Only "linear" weights are quantized by QLoRA and adapted by LoRA; embeddings,
# norms, biases, the router and the head stay in 16-bit (QLoRA paper, Dettmers et al. 2023, sec. 3).
EMBEDDING = "embedding"
LINEAR = "linear"
BIAS = "bias"
NORM = "norm"
ROUTER = "router"
HEAD = "head"
LORA = "lora"

# Linear modules LoRA can target, by the names used here (and by HF Llama / PEFT).
ATTENTION_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_LINEARS = ("gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ParamTensor:
    """One parameter tensor: its name (as the probe module names it), shape and kind."""

    name: str
    shape: tuple[int, ...]
    kind: str
    module: str = ""   # the Linear it belongs to ("q_proj", ...), for LoRA targets

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _linear(prefix: str, module: str, n_in: int, n_out: int, bias: bool) -> list[ParamTensor]:
    out = [ParamTensor(f"{prefix}.{module}.weight", (n_out, n_in), LINEAR, module)]
    if bias:
        out.append(ParamTensor(f"{prefix}.{module}.bias", (n_out,), BIAS, module))
    return out


def _norm(prefix: str, cfg: ModelConfig) -> list[ParamTensor]:
    out = [ParamTensor(f"{prefix}.weight", (cfg.hidden_size,), NORM)]
    if cfg.norm == "layernorm":
        out.append(ParamTensor(f"{prefix}.bias", (cfg.hidden_size,), NORM))
    return out


def _mlp(prefix: str, cfg: ModelConfig) -> list[ParamTensor]:
    h, f, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
    out: list[ParamTensor] = []
    if cfg.mlp == "gated":
        out += _linear(prefix, "gate_proj", h, f, bias)
    out += _linear(prefix, "up_proj", h, f, bias)
    out += _linear(prefix, "down_proj", f, h, bias)
    return out


def layer_tensors(cfg: ModelConfig, i: int) -> tuple[ParamTensor, ...]:
    """The tensors of transformer block i: two norms, attention (GQA-aware), MLP or experts."""
    p = f"layers.{i}"
    h = cfg.hidden_size
    out = _norm(f"{p}.input_norm", cfg)
    out += _linear(f"{p}.attn", "q_proj", h, cfg.q_dim, cfg.qkv_bias)
    out += _linear(f"{p}.attn", "k_proj", h, cfg.kv_dim, cfg.qkv_bias)
    out += _linear(f"{p}.attn", "v_proj", h, cfg.kv_dim, cfg.qkv_bias)
    out += _linear(f"{p}.attn", "o_proj", cfg.q_dim, h, cfg.o_bias)
    out += _norm(f"{p}.post_norm", cfg)
    if cfg.num_experts:
        # Mixtral's block_sparse_moe: a bias-free router h -> E, then E SwiGLU experts.
        out.append(ParamTensor(f"{p}.mlp.router.weight", (cfg.num_experts, h), ROUTER))
        for e in range(cfg.num_experts):
            out += _mlp(f"{p}.mlp.experts.{e}", cfg)
    else:
        out += _mlp(f"{p}.mlp", cfg)
    return tuple(out)


def _embeddings(cfg: ModelConfig) -> list[ParamTensor]:
    out = [ParamTensor("embed_tokens.weight", (cfg.vocab_size, cfg.hidden_size), EMBEDDING)]
    if cfg.max_position_embeddings:
        out.append(ParamTensor("embed_positions.weight", (cfg.max_position_embeddings, cfg.hidden_size), EMBEDDING))
    return out


def _top(cfg: ModelConfig) -> list[ParamTensor]:
    out = _norm("final_norm", cfg)
    if not cfg.tie_word_embeddings:
        out.append(ParamTensor("lm_head.weight", (cfg.vocab_size, cfg.hidden_size), HEAD))
    return out


def param_tensors(cfg: ModelConfig) -> tuple[ParamTensor, ...]:
    """All parameter tensors, embeddings first, head last; a tied head adds none."""
    out = _embeddings(cfg)
    for i in range(cfg.num_layers):
        out += layer_tensors(cfg, i)
    return tuple(out + _top(cfg))


def root_tensors(cfg: ModelConfig) -> tuple[ParamTensor, ...]:
    """FSDP's root unit when each block is wrapped on its own: embeddings, final norm, (untied) head."""
    return tuple(_embeddings(cfg) + _top(cfg))


def largest_module_params(cfg: ModelConfig) -> int:
    """The most parameters one module holds directly (its own weight and bias, not its children's).

    DeepSpeed's ZeRO-3 estimator gathers this much at once (`largest_layer_params` in
    deepspeed/runtime/zero/stage3.py, estimate_zero3_model_states_mem_needs_all_live: recurse=False).
    """
    groups: dict[str, int] = {}
    for t in (*layer_tensors(cfg, 0), *root_tensors(cfg)):
        module = t.name.rsplit(".", 1)[0]
        groups[module] = groups.get(module, 0) + t.numel
    return max(groups.values())


@dataclass(frozen=True)
class ParamCount:
    """The parameter count by part; `active` is what one token touches (MoE: top-k experts)."""

    total: int
    embedding: int
    per_layer: int
    layers: int
    head: int
    final_norm: int
    linear_weights: int
    active: int


def count_params(cfg: ModelConfig) -> ParamCount:
    """Exact parameter count of the architecture, by part."""
    layer = sum(t.numel for t in layer_tensors(cfg, 0))
    embedding = cfg.vocab_size * cfg.hidden_size + cfg.max_position_embeddings * cfg.hidden_size
    head = 0 if cfg.tie_word_embeddings else cfg.vocab_size * cfg.hidden_size
    final_norm = cfg.hidden_size * (2 if cfg.norm == "layernorm" else 1)
    linear = sum(t.numel for t in layer_tensors(cfg, 0) if t.kind == LINEAR) * cfg.num_layers
    total = embedding + layer * cfg.num_layers + final_norm + head
    active = total
    if cfg.num_experts:
        expert = sum(t.numel for t in _mlp("e", cfg))
        active -= (cfg.num_experts - cfg.experts_per_token) * expert * cfg.num_layers
    return ParamCount(total=total, embedding=embedding, per_layer=layer, layers=cfg.num_layers, head=head,
                      final_norm=final_norm, linear_weights=linear, active=active)


def targetable(cfg: ModelConfig) -> tuple[str, ...]:
    """The Linear module names of this architecture that LoRA can adapt."""
    mlp = MLP_LINEARS if cfg.mlp == "gated" else MLP_LINEARS[1:]
    return ATTENTION_LINEARS + mlp

