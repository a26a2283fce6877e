"""A transformer's shape as plain data: read from an HF-style config.json, validated, or a bare count."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

from harness.inputs import shorten


class MemoryInputError(ValueError):
    """Bad input to the memory arithmetic; the message names the field and what is expected."""


# GPT-2-style configs (model_type gpt2 and friends) spell the shape with these keys
# (transformers' GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions.
_GPT2_KEYS = ("n_embd", "n_layer", "n_head")
MLP_KINDS = ("gated", "gelu")
# transformers' per-architecture defaults for keys a config.json may leave out. `tie_word_embeddings`:
# PretrainedConfig defaults to True and Llama/Mistral/Mixtral/Qwen2/Phi-3 override it to False
# (configuration_<type>.py in transformers; Gemma, Gemma-2 and GPT-2 keep True); an unknown model_type
# gets PretrainedConfig's True, a config without model_type the Llama default False. Qwen2 builds q/k/v
# with bias=True and o_proj without, and has no `attention_bias` key (transformers modeling_qwen2.py, Qwen2Attention).
_UNTIED_BY_DEFAULT = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3"})
_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe"})
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


# Upper bounds of a config.json's sizes: far beyond any published model (the largest have ~200 layers,
# hidden sizes of ~30k and vocabularies of ~1M), small enough that per-layer loops and products stay quick
# ("num_hidden_layers": 1e12 would loop for hours; "hidden_size": 1e300 is not a model).
_MAXIMA = {"num_hidden_layers": 10_000, "n_layer": 10_000, "num_attention_heads": 65_536, "n_head": 65_536,
           "num_key_value_heads": 65_536, "num_local_experts": 65_536, "num_experts_per_tok": 65_536}
_MAX_SIZE = 1 << 26  # hidden, intermediate, head_dim, vocab and positions: 67M


def _int(d: Mapping[str, object], key: str, where: str, *, minimum: int = 1) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)
        else:
            raise MemoryInputError(f"{where}: {key!r} must be an integer, got {shorten(value)}")
    if value < minimum:
        raise MemoryInputError(f"{where}: {key!r} must be >= {minimum}, got {value}")
    maximum = _MAXIMA.get(key, _MAX_SIZE)
    if value > maximum:
        raise MemoryInputError(f"{where}: {key!r} must be <= {maximum}, got {shorten(value)}")
    return value


def _opt_int(d: Mapping[str, object], key: str, where: str, default: int, *, minimum: int = 1) -> int:
    return default if d.get(key) is None else _int(d, key, where, minimum=minimum)


def _float(d: Mapping[str, object], keys: tuple[str, ...], where: str) -> float:
    for key in keys:
        value = d.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise MemoryInputError(f"{where}: {key!r} must be a probability in [0, 1), got {shorten(value)}")
        return float(value)
    return 0.0


def _bool(d: Mapping[str, object], key: str, where: str, default: bool) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise MemoryInputError(f"{where}: {key!r} must be true or false, got {shorten(value)}")
    return value


def _tied_default(model_type: object) -> bool:
    return isinstance(model_type, str) and model_type not in _UNTIED_BY_DEFAULT


def from_hf_config(d: object, name: str, source: str = "") -> ModelConfig:
    """Read an HF-style config.json (parsed JSON, each key checked as it is read): Llama/Mistral/Mixtral keys,
    or GPT-2's n_embd/n_layer/n_head."""
    where = source or name
    if not isinstance(d, dict):
        raise MemoryInputError(f"{where}: expected a JSON object with the model's config keys")
    if all(k in d for k in _GPT2_KEYS):
        # GPT-2 (transformers GPT2Config): LayerNorm with bias, GELU MLP of n_inner (default 4*n_embd),
        # biases on every Linear, learned positions, tied head, dropout 0.1 by default.
        hidden = _int(d, "n_embd", where)
        heads = _int(d, "n_head", where)
        cfg = ModelConfig(
            name=name, vocab_size=_int(d, "vocab_size", where), hidden_size=hidden,
            num_layers=_int(d, "n_layer", where), num_heads=heads, num_kv_heads=heads,
            intermediate_size=_opt_int(d, "n_inner", where, 4 * hidden),
            head_dim=hidden // heads if hidden % heads == 0 else 0,
            tie_word_embeddings=_bool(d, "tie_word_embeddings", where, True),
            mlp="gelu", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True,
            max_position_embeddings=_opt_int(d, "n_positions", where, 1024),
            max_context=_opt_int(d, "n_positions", where, 1024),
            attention_dropout=_float(d, ("attn_pdrop",), where),
            hidden_dropout=_float(d, ("resid_pdrop",), where),
            source=source,
        )
        return validate(cfg)
    missing = [k for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                           "intermediate_size") if k not in d]
    if missing:
        raise MemoryInputError(
            f"{where}: missing {', '.join(repr(k) for k in missing)}; expected an HF-style transformer config "
            "(vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size) "
            "or GPT-2's n_embd/n_layer/n_head"
        )
    hidden = _int(d, "hidden_size", where)
    heads = _int(d, "num_attention_heads", where)
    explicit_head_dim = d.get("head_dim") is not None
    experts = _opt_int(d, "num_local_experts", where, 0, minimum=0)
    # Llama-family defaults (transformers LlamaConfig): no biases, RMSNorm, SwiGLU; the head's tying and
    # Qwen2's q/k/v biases by model_type (see _UNTIED_BY_DEFAULT).
    model_type = d.get("model_type")
    attention_bias = _bool(d, "attention_bias", where, False)
    qkv_bias = attention_bias or model_type in _QKV_BIAS_TYPES
    cfg = ModelConfig(
        name=name, vocab_size=_int(d, "vocab_size", where), hidden_size=hidden,
        num_layers=_int(d, "num_hidden_layers", where), num_heads=heads,
        num_kv_heads=_opt_int(d, "num_key_value_heads", where, heads),
        intermediate_size=_int(d, "intermediate_size", where),
        head_dim=_int(d, "head_dim", where) if explicit_head_dim else (hidden // heads if hidden % heads == 0 else 0),
        tie_word_embeddings=_bool(d, "tie_word_embeddings", where, _tied_default(model_type)),
        qkv_bias=qkv_bias, o_bias=attention_bias, mlp_bias=_bool(d, "mlp_bias", where, False),
        num_experts=experts,
        experts_per_token=_opt_int(d, "num_experts_per_tok", where, 2 if experts else 0, minimum=0),
        attention_dropout=_float(d, ("attention_dropout",), where),
        hidden_dropout=_float(d, ("hidden_dropout",), where),
        max_context=_opt_int(d, "max_position_embeddings", where, 0, minimum=0),
        source=source,
    )
    return validate(cfg)


def validate(cfg: ModelConfig) -> ModelConfig:
    """Check the shape is a transformer that can exist; raise MemoryInputError naming the field."""
    where = cfg.source or cfg.name
    for field in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size"):
        if getattr(cfg, field) < 1:
            raise MemoryInputError(f"{where}: {field} must be >= 1, got {getattr(cfg, field)}")
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
    return cfg


def bare_model(params: float) -> BareModel:
    """A model known only by its parameter count (`--params 7e9`)."""
    if math.isnan(params) or params < 1:
        raise MemoryInputError(f"--params must be a positive parameter count such as 7e9, got {params!r}")
    return BareModel(name=f"{params:.3g} params", params=round(params))
