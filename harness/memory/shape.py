"""A transformer's shape as plain data (read from a config.json by harness/memory/hf_config.py), validated, or a
bare count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Union

from harness.memory.errors import MemoryInputError
from harness.memory.layers import (
    ATTENTION_KINDS,
    DENSE,
    FULL,
    MLA,
    MOE,
    SLIDING,
    Attention,
    Layer,
    Mlp,
    VisionTower,
)
from harness.memory.weight_formats import WeightFormat

__all__ = ["BareModel", "MemoryInputError", "Model", "ModelConfig", "bare_model", "layer_groups", "validate"]


MLP_KINDS = ("gated", "gelu")
NORM_KINDS = ("rmsnorm", "layernorm")


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, enough to count every parameter tensor and activation."""

    name: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    head_dim: int
    tie_word_embeddings: bool
    mlp: str = "gated"              # "gated": gate/up/down (SwiGLU); "gelu": up/down
    norm: str = "rmsnorm"           # "layernorm" carries a bias, "rmsnorm" a weight only
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    max_position_embeddings: int = 0  # > 0 only for learned position embeddings (GPT-2)
    max_context: int = 0            # the longest context the model was built for (0 = not stated)
    num_experts: int = 0            # MoE: experts per layer (0 = dense)
    experts_per_token: int = 0
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    source: str = ""
    # Layers that differ from the uniform stack the fields above describe (sliding/full, MLA, dense/MoE): one
    # per layer when any differs or carries more than those fields say; empty for a uniform Llama-style stack.
    layer_plan: tuple[Layer, ...] = ()
    vision: VisionTower | None = None
    quantization: WeightFormat | None = None        # the checkpoint's format, from its quantization_config
    # Tensor kinds the model class keeps in fp32 when loaded in a 16-bit dtype (transformers'
    # _keep_in_fp32_modules_strict), and those it keeps in fp32 only when loaded in fp16 (_keep_in_fp32_modules).
    keep_fp32: frozenset[str] = frozenset()
    keep_fp32_fp16: frozenset[str] = frozenset()
    fused_experts: bool = False                     # experts as 3-D tensors (transformers 5), not one Linear each
    family: str = ""                                # the config's model_type
    notes: tuple[str, ...] = field(default=())      # what the reader assumed, each naming its key

    def layer(self, i: int) -> Layer:
        """Layer i as data (attention kind, MLP kind, norms)."""
        return self.layer_plan[i] if self.layer_plan else uniform_layer(self)

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: kv_heads x head_dim (GQA-aware)."""
        return self.num_kv_heads * self.head_dim

    @property
    def q_dim(self) -> int:
        """Width of the Q projection and of the attention output: heads x head_dim."""
        return self.num_heads * self.head_dim


@dataclass(frozen=True)
class BareModel:
    """Only a parameter count: enough for the state ledgers, not for activations or a KV cache."""

    name: str
    params: int
    source: str = "--params"


Model = Union[ModelConfig, BareModel]  # noqa: UP007  (a runtime alias: X | Y needs 3.10)


def validate(cfg: ModelConfig) -> ModelConfig:
    """Check the shape is a transformer that can exist; raise MemoryInputError naming the field."""
    where = cfg.source or cfg.name
    for key in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size"):
        if getattr(cfg, key) < 1:
            raise MemoryInputError(f"{where}: {key} must be >= 1, got {getattr(cfg, key)}")
    if cfg.head_dim < 1:
        raise MemoryInputError(
            f"{where}: num_attention_heads ({cfg.num_heads}) must divide hidden_size ({cfg.hidden_size}) "
            "unless head_dim is given"
        )
    if cfg.num_heads % cfg.num_kv_heads:
        raise MemoryInputError(
            f"{where}: num_key_value_heads ({cfg.num_kv_heads}) must divide num_attention_heads ({cfg.num_heads})"
        )
    if cfg.mlp not in MLP_KINDS or cfg.norm not in NORM_KINDS:
        raise MemoryInputError(f"{where}: mlp must be one of {MLP_KINDS} and norm one of {NORM_KINDS}")
    if cfg.num_experts and not 1 <= cfg.experts_per_token <= cfg.num_experts:
        raise MemoryInputError(
            f"{where}: num_experts_per_tok ({cfg.experts_per_token}) must be between 1 and "
            f"num_local_experts ({cfg.num_experts})"
        )
    for layer, _ in layer_groups(cfg):
        _validate_layer(layer, where)
    return cfg


def _validate_layer(layer: Layer, where: str) -> None:
    """A layer's sizes agree with each other (the reader's checks, kept for hand-made configs too)."""
    a, m = layer.attention, layer.mlp
    if a.kind not in ATTENTION_KINDS:
        raise MemoryInputError(f"{where}: attention kind {a.kind!r} is not one of {', '.join(ATTENTION_KINDS)}")
    if min(a.num_heads, a.num_kv_heads, a.head_dim, a.v_head_dim) < 1:
        raise MemoryInputError(f"{where}: heads, key/value heads and head sizes must be >= 1")
    if a.kind == SLIDING and a.window < 1:
        raise MemoryInputError(f"{where}: a sliding-window layer needs sliding_window >= 1, got {a.window}")
    if a.kind == MLA and not (a.kv_lora_rank >= 1 and 1 <= a.rope_head_dim <= a.head_dim):
        raise MemoryInputError(f"{where}: latent attention needs kv_lora_rank >= 1 and 1 <= qk_rope_head_dim <= "
                               f"qk_nope_head_dim + qk_rope_head_dim")
    if m.intermediate_size < 1:
        raise MemoryInputError(f"{where}: the MLP width must be >= 1, got {m.intermediate_size} "
                               "(intermediate_size / moe_intermediate_size)")
    if m.kind == MOE and not 1 <= m.top_k <= m.experts:
        raise MemoryInputError(f"{where}: num_experts_per_tok ({m.top_k}) must be between 1 and the number of "
                               f"routed experts ({m.experts})")


def uniform_layer(cfg: ModelConfig) -> Layer:
    """The one layer a uniform stack repeats: full attention, and the dense MLP or Mixtral-style experts."""
    attention = Attention(FULL, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.head_dim,
                          qkv_bias=cfg.qkv_bias, o_bias=cfg.o_bias)
    mlp = (Mlp(MOE, cfg.intermediate_size, cfg.num_experts, cfg.experts_per_token) if cfg.num_experts
           else Mlp(DENSE, cfg.intermediate_size))
    return Layer(attention, mlp)


@lru_cache(maxsize=256)
def layer_groups(cfg: ModelConfig) -> tuple[tuple[Layer, int], ...]:
    """The distinct layers, in order of first appearance, each with how many times the stack has it."""
    if not cfg.layer_plan:
        return ((uniform_layer(cfg), cfg.num_layers),)
    counts: dict[Layer, int] = {}
    for layer in cfg.layer_plan:
        counts[layer] = counts.get(layer, 0) + 1
    return tuple(counts.items())


def bare_model(params: float) -> BareModel:
    """A model known only by its parameter count (`--params 7e9`)."""
    if math.isnan(params) or params < 1:
        raise MemoryInputError(f"--params must be a positive parameter count such as 7e9, got {params!r}")
    return BareModel(name=f"{params:.3g} params", params=round(params))
