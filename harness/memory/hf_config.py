"""An HF-style config.json read into a ModelConfig: every key that changes the arithmetic, as transformers reads it.

A family (`model_type`) supplies what its configuration class defaults to and what its modeling code builds
(transformers 5, models/<type>/configuration_<type>.py and modeling_<type>.py): whether the head is tied,
biases, q/k norms, attention sinks, sandwich norms, how `sliding_window` turns into per-layer types, which
layers are MoE, the experts' width, shared experts, MLA. Keys are read the same way in every family; a key
that its family's class does not read is reported in the model's notes ("ignored"), never dropped in silence.
A multimodal config's `text_config` is the text model; a SigLIP `vision_config` is counted; others are noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harness.inputs import shorten
from harness.memory.config_keys import bool_key, int_key, layer_list, opt_int, probability
from harness.memory.errors import MemoryInputError
from harness.memory.families import Family, family_of
from harness.memory.layers import DENSE, FULL, MLA, MOE, SLIDING, Attention, Layer, Mlp, VisionTower
from harness.memory.quant_config import from_quantization_config
from harness.memory.shape import ModelConfig, uniform_layer, validate

# GPT-2-style configs (model_type gpt2 and friends) spell the shape with these keys
# (transformers' GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions.
_GPT2_KEYS = ("n_embd", "n_layer", "n_head")

_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token")
_MOE_KEYS = (*_EXPERT_KEYS, *_TOPK_KEYS, "moe_intermediate_size", "n_shared_experts", "shared_expert_intermediate_size",
             "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "decoder_sparse_step")
_MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
_SLIDING_KEYS = ("sliding_window", "layer_types", "sliding_window_pattern", "use_sliding_window", "max_window_layers")
_LAYER_TYPES = {"full_attention": FULL, "sliding_attention": SLIDING}
# The sliding-window keys each way of deriving layer types reads (families.py, Family.sliding).
_SLIDING_READS = {
    "all": ("sliding_window", "layer_types"),
    "all_gated": ("sliding_window", "use_sliding_window", "layer_types"),
    "qwen2": ("sliding_window", "use_sliding_window", "max_window_layers", "layer_types"),
    "qwen2_moe": ("sliding_window", "use_sliding_window", "max_window_layers", "layer_types"),
    "pattern": ("sliding_window", "sliding_window_pattern", "layer_types"),
    "layer_types": ("sliding_window", "layer_types"),
}


def _gpt2(d: Mapping[str, object], name: str, source: str, where: str) -> ModelConfig:
    # GPT-2 (transformers GPT2Config): LayerNorm with bias, GELU MLP of n_inner (default 4*n_embd),
    # biases on every Linear, learned positions, tied head, dropout 0.1 by default.
    hidden = int_key(d, "n_embd", where)
    heads = int_key(d, "n_head", where)
    return validate(ModelConfig(
        name=name, vocab_size=int_key(d, "vocab_size", where), hidden_size=hidden,
        num_layers=int_key(d, "n_layer", where), num_heads=heads, num_kv_heads=heads,
        intermediate_size=opt_int(d, "n_inner", where, 4 * hidden),
        head_dim=hidden // heads if hidden % heads == 0 else 0,
        tie_word_embeddings=bool_key(d, "tie_word_embeddings", where, True),
        mlp="gelu", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True,
        max_position_embeddings=opt_int(d, "n_positions", where, 1024),
        max_context=opt_int(d, "n_positions", where, 1024),
        attention_dropout=probability(d, ("attn_pdrop",), where),
        hidden_dropout=probability(d, ("resid_pdrop",), where),
        family=str(d.get("model_type") or "gpt2"), source=source,
    ))


@dataclass
class _Reading:
    """The keys of one text config, its family, and the notes gathered while reading it."""

    d: Mapping[str, object]
    family: Family
    model_type: str
    where: str
    notes: list[str] = field(default_factory=list)

    def ignored(self, keys: tuple[str, ...], why: str) -> None:
        """Note each key present (and not null) that this family's class does not read."""
        for key in keys:
            value = self.d.get(key)
            if value not in (None, False, 0, []):
                self.notes.append(f"{key} ({shorten(value)}) ignored: {why}")


def _one_of(r: _Reading, keys: tuple[str, ...], default: int, minimum: int) -> int:
    """One value spelled by any of `keys`; two spellings that disagree are refused, naming both."""
    found = {k: int_key(r.d, k, r.where, minimum=minimum) for k in keys if r.d.get(k) is not None}
    values = set(found.values())
    if len(values) > 1:
        named = ", ".join(f"{k}={v}" for k, v in found.items())
        raise MemoryInputError(f"{r.where}: {named} disagree; they name the same number")
    return values.pop() if values else default


def _layer_kinds(r: _Reading, layers: int, max_context: int) -> tuple[tuple[str, ...], int]:
    """Each layer's attention kind (full or sliding) and the window, as the family's config class derives them."""
    d, fam, where = r.d, r.family, r.where
    explicit = d.get("layer_types")
    window = d.get("sliding_window", fam.window)
    if fam.sliding == "none":
        r.ignored(_SLIDING_KEYS, f"model_type {r.model_type!r} has no sliding-window attention in transformers")
        return (FULL,) * layers, 0
    reads = _SLIDING_READS[fam.sliding]
    if fam.sliding not in ("all_gated", "qwen2", "qwen2_moe") or d.get("use_sliding_window"):
        r.ignored(tuple(k for k in _SLIDING_KEYS if k not in reads),
                  f"model_type {r.model_type!r} does not read it (its window comes from {', '.join(reads)})")
    if explicit is not None:
        if not isinstance(explicit, list) or len(explicit) != layers:
            raise MemoryInputError(f"{where}: 'layer_types' must list one type per layer ({layers}, "
                                   f"num_hidden_layers), got {shorten(explicit)}")
        unknown = [t for t in explicit if not (isinstance(t, str) and t in _LAYER_TYPES)]
        if unknown:
            raise MemoryInputError(f"{where}: 'layer_types' has {shorten(unknown[0])}; refenv counts "
                                   f"{', '.join(_LAYER_TYPES)}")
        kinds = tuple(_LAYER_TYPES[str(t)] for t in explicit)
    else:
        use = bool_key(d, "use_sliding_window", where, False)
        on = window is not None
        if fam.sliding == "all":
            kinds = (SLIDING if on else FULL,) * layers
        elif fam.sliding == "all_gated":
            kinds = (SLIDING if on and use else FULL,) * layers
        elif fam.sliding == "qwen2":
            first = opt_int(d, "max_window_layers", where, 28, minimum=0)
            kinds = tuple(SLIDING if on and use and i >= first else FULL for i in range(layers))
        elif fam.sliding == "qwen2_moe":
            last = opt_int(d, "max_window_layers", where, 28, minimum=0)
            kinds = tuple(SLIDING if on and use and (i + 1) % 2 and i < last else FULL for i in range(layers))
        elif fam.sliding == "pattern":
            every = opt_int(d, "sliding_window_pattern", where, fam.pattern)
            kinds = tuple(SLIDING if (i + 1) % every else FULL for i in range(layers))
        else:  # an unknown family: a window with no layer_types slides on every layer, as Mistral's does
            kinds = (SLIDING if on else FULL,) * layers
            if on:
                r.notes.append(f"sliding_window {shorten(window)} without layer_types: every layer taken as sliding "
                               f"(model_type {r.model_type!r} is not one refenv knows)")
    if SLIDING not in kinds:
        return kinds, 0
    if window is None:
        raise MemoryInputError(f"{where}: layers are sliding-window layers but 'sliding_window' is null; give the "
                               "window in tokens")
    w = int_key({"sliding_window": window}, "sliding_window", where)
    if max_context and w > max_context:
        r.notes.append(f"sliding_window {w} is larger than max_position_embeddings {max_context}: its layers hold as "
                       f"many tokens as full attention up to that context")
    if fam.sliding == "pattern" and d.get("use_bidirectional_attention"):
        raise MemoryInputError(f"{where}: 'use_bidirectional_attention' true makes an encoder (its window is halved); "
                               "refenv counts decoders")
    return kinds, w


def _moe_layers(r: _Reading, layers: int) -> tuple[tuple[bool, ...], int, int]:
    """Which layers are MoE, the routed experts and top-k (DeepSeek's first_k_dense_replace and moe_layer_freq,
    Qwen's decoder_sparse_step and mlp_only_layers: one rule, each key neutral when absent)."""
    d, fam, where = r.d, r.family, r.where
    if not fam.moe:
        r.ignored(_MOE_KEYS, f"model_type {r.model_type!r} is a dense model in transformers")
        return (False,) * layers, 0, 0
    experts = _one_of(r, _EXPERT_KEYS, fam.experts, 0)
    if not experts:
        return (False,) * layers, 0, 0
    top_k = _one_of(r, _TOPK_KEYS, fam.top_k or 2, 1)
    first = opt_int(d, "first_k_dense_replace", where, fam.first_dense, minimum=0)
    freq = opt_int(d, "moe_layer_freq", where, 1)
    step = opt_int(d, "decoder_sparse_step", where, 1)
    dense_only = layer_list(d, "mlp_only_layers", where, layers)
    if freq != 1 and r.model_type == "deepseek_v3":
        r.notes.append(f"moe_layer_freq {freq}: counted as DeepSeek's own modeling code reads it (layer % freq == 0); "
                       "transformers' DeepseekV3 class ignores it")
    moe = tuple(i not in dense_only and (i + 1) % step == 0 and i >= first and i % freq == 0 for i in range(layers))
    if not any(moe):
        r.notes.append(f"{experts} experts configured but no layer is MoE (first_k_dense_replace, decoder_sparse_step, "
                       "mlp_only_layers): every layer counted dense")
    return moe, experts, top_k


def _mla(r: _Reading, heads: int) -> Attention | None:
    """DeepSeek's multi-head latent attention, when the config has its keys."""
    d, fam, where = r.d, r.family, r.where
    if not fam.mla:
        r.ignored(_MLA_KEYS, f"model_type {r.model_type!r} has no latent attention in transformers")
        return None
    defaults = fam.mla_defaults
    if d.get("kv_lora_rank", defaults.get("kv_lora_rank")) is None:
        return None
    merged: dict[str, object] = {**defaults, **{k: d[k] for k in _MLA_KEYS if k in d}}
    missing = [k for k in _MLA_KEYS if k != "q_lora_rank" and merged.get(k) is None]
    if missing:
        raise MemoryInputError(f"{where}: kv_lora_rank (latent attention) needs {', '.join(map(repr, missing))}")
    rope = int_key(merged, "qk_rope_head_dim", where)
    nope = int_key(merged, "qk_nope_head_dim", where, minimum=0)
    q_rank = 0 if merged.get("q_lora_rank") is None else int_key(merged, "q_lora_rank", where)
    bias = bool_key(d, "attention_bias", where, False)
    return Attention(MLA, heads, 1, nope + rope, int_key(merged, "v_head_dim", where), qkv_bias=bias, o_bias=bias,
                     q_lora_rank=q_rank, kv_lora_rank=int_key(merged, "kv_lora_rank", where), rope_head_dim=rope)


def _vision(outer: Mapping[str, object], where: str, notes: list[str]) -> VisionTower | None:
    """A SigLIP vision_config (Gemma-3's), with SiglipVisionConfig's defaults; any other tower is noted."""
    v = outer.get("vision_config")
    for other in ("audio_config", "speech_config"):
        if outer.get(other) is not None:
            notes.append(f"{other} present: its encoder's parameters are not counted")
    if v is None:
        return None
    if not isinstance(v, dict):
        raise MemoryInputError(f"{where}: 'vision_config' must be a JSON object, got {shorten(v)}")
    kind = v.get("model_type")
    if kind != "siglip_vision_model" or outer.get("model_type") != "gemma3":
        notes.append(f"vision_config (model_type {shorten(kind)}) of a {shorten(outer.get('model_type'))} model: "
                     "its tower and projector are not counted")
        return None
    vw = f"{where}: vision_config"
    tower = VisionTower(hidden_size=opt_int(v, "hidden_size", vw, 768),
                        intermediate_size=opt_int(v, "intermediate_size", vw, 3072),
                        num_layers=opt_int(v, "num_hidden_layers", vw, 12),
                        patch_size=opt_int(v, "patch_size", vw, 16), image_size=opt_int(v, "image_size", vw, 224),
                        num_channels=opt_int(v, "num_channels", vw, 3),
                        use_head=bool_key(v, "vision_use_head", vw, True))
    if tower.image_size % tower.patch_size:
        raise MemoryInputError(f"{vw}: image_size ({tower.image_size}) must be a multiple of patch_size "
                               f"({tower.patch_size})")
    return tower


def _text(d: dict[str, object], where: str) -> tuple[dict[str, object], str]:
    """The text model's keys: a multimodal config's text_config (its model_type and tie flag from outside)."""
    text = d.get("text_config")
    if text is None:
        return d, str(d.get("model_type") or "")
    if not isinstance(text, dict):
        raise MemoryInputError(f"{where}: 'text_config' must be a JSON object, got {shorten(text)}")
    merged = dict(text)
    if "tie_word_embeddings" in d:
        merged["tie_word_embeddings"] = d["tie_word_embeddings"]
    kind = text.get("model_type") or (f"{d['model_type']}_text" if isinstance(d.get("model_type"), str) else "")
    return merged, str(kind)


def from_hf_config(d: object, name: str, source: str = "") -> ModelConfig:
    """Read an HF-style config.json (parsed JSON, each key checked as it is read)."""
    where = source or name
    if not isinstance(d, dict):
        raise MemoryInputError(f"{where}: expected a JSON object with the model's config keys")
    if all(k in d for k in _GPT2_KEYS):
        return _gpt2(d, name, source, where)
    text, model_type = _text(d, where)
    family = family_of(model_type)
    assumed = [k for k in family.defaults if text.get(k) is None]
    text = {**text, **{k: family.defaults[k] for k in assumed}}
    missing = [k for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                           "intermediate_size") if k not in text]
    if missing:
        raise MemoryInputError(
            f"{where}: missing {', '.join(repr(k) for k in missing)}; expected an HF-style transformer config "
            "(vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size) "
            "or GPT-2's n_embd/n_layer/n_head"
        )
    r = _Reading(text, family, model_type or "llama", where)
    r.notes += [f"{k} absent: {family.title}'s default {family.defaults[k]} taken" for k in assumed]
    if not family.known:
        r.notes.append(f"model_type {model_type!r} is not one refenv knows: read as a Llama-style decoder with every "
                       "MoE, latent-attention and sliding-window key it has")
    hidden = int_key(text, "hidden_size", where)
    heads = int_key(text, "num_attention_heads", where)
    layers = int_key(text, "num_hidden_layers", where)
    kv_heads = opt_int(text, "num_key_value_heads", where, heads)
    if text.get("head_dim") is not None:
        head_dim = int_key(text, "head_dim", where)
    else:
        head_dim = family.head_dim or (hidden // heads if hidden % heads == 0 else 0)
    max_context = opt_int(text, "max_position_embeddings", where, 0, minimum=0)
    intermediate = int_key(text, "intermediate_size", where)
    qkv_bias = family.qkv_bias or (bool(family.qkv_bias_key)
                                   and bool_key(text, family.qkv_bias_key, where, family.attention_bias))
    o_bias = qkv_bias and family.o_bias and not family.qkv_bias
    if not family.qkv_bias_key:
        r.ignored(("attention_bias",), f"model_type {r.model_type!r} builds its attention without biases")
    kinds, window = _layer_kinds(r, layers, max_context)
    moe, experts, top_k = _moe_layers(r, layers)
    mla = _mla(r, heads)
    moe_size = opt_int(text, family.moe_size_key, where, family.moe_size or intermediate) if experts else 0
    shared = shared_gate = 0
    if experts and family.shared == "deepseek":
        shared = opt_int(text, "n_shared_experts", where, family.shared_default, minimum=0) * moe_size
    elif experts and family.shared == "qwen2_moe":
        shared = opt_int(text, "shared_expert_intermediate_size", where, family.shared_default, minimum=0)
        shared_gate = 1 if shared else 0
    elif experts and family.known:
        r.ignored(("n_shared_experts", "shared_expert_intermediate_size"),
                  f"model_type {r.model_type!r} has no shared experts in transformers")
    elif experts:
        shared = opt_int(text, "n_shared_experts", where, 0, minimum=0) * moe_size
        shared = shared or opt_int(text, "shared_expert_intermediate_size", where, 0, minimum=0)
    if text.get("num_nextn_predict_layers"):
        r.notes.append(f"num_nextn_predict_layers {shorten(text['num_nextn_predict_layers'])}: the checkpoint's "
                       "multi-token-prediction layer(s) are not built by transformers and not counted")
    plan = []
    for i in range(layers):
        attention = mla or Attention(kinds[i], heads, kv_heads, head_dim, head_dim,
                                     window=window if kinds[i] == SLIDING else 0, qkv_bias=qkv_bias, o_bias=o_bias,
                                     qk_norm=family.qk_norm, sinks=family.sinks)
        mlp = (Mlp(MOE, moe_size, experts, top_k, shared, bool(shared_gate), family.router_bias, family.expert_bias)
               if moe[i] else Mlp(DENSE, intermediate))
        plan.append(Layer(attention, mlp, family.norms))
    notes = r.notes
    vision = _vision(d, where, notes)
    quant = from_quantization_config(d["quantization_config"], where) if d.get("quantization_config") else None
    if quant is not None:
        notes += list(quant.notes)
    cfg = ModelConfig(
        name=name, vocab_size=int_key(text, "vocab_size", where), hidden_size=hidden, num_layers=layers,
        num_heads=heads, num_kv_heads=kv_heads, intermediate_size=intermediate,
        head_dim=mla.head_dim if mla else head_dim,
        tie_word_embeddings=bool_key(text, "tie_word_embeddings", where, family.tied),
        qkv_bias=qkv_bias, o_bias=o_bias, mlp_bias=bool_key(text, "mlp_bias", where, False),
        num_experts=experts if any(moe) else 0, experts_per_token=top_k if any(moe) else 0,
        attention_dropout=probability(text, ("attention_dropout",), where),
        hidden_dropout=probability(text, ("hidden_dropout",), where),
        max_context=max_context, source=source, vision=vision, quantization=quant,
        keep_fp32=family.keep_fp32, keep_fp32_fp16=family.keep_fp32_fp16, fused_experts=any(moe),
        family=model_type, notes=tuple(notes),
    )
    if any(layer != uniform_layer(cfg) for layer in plan):
        cfg = replace(cfg, layer_plan=tuple(plan))
    return validate(cfg)
