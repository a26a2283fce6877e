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
from harness.memory import params as p
from harness.memory.errors import MemoryInputError
from harness.memory.layers import DENSE, FULL, MLA, MOE, SLIDING, Attention, Layer, Mlp, VisionTower
from harness.memory.quant_config import from_quantization_config
from harness.memory.shape import ModelConfig, uniform_layer, validate

# GPT-2-style configs (model_type gpt2 and friends) spell the shape with these keys
# (transformers' GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions.
_GPT2_KEYS = ("n_embd", "n_layer", "n_head")

# Upper bounds of a config.json's sizes: far beyond any published model (the largest have ~200 layers,
# hidden sizes of ~30k and vocabularies of ~1M), small enough that per-layer loops and products stay quick
# ("num_hidden_layers": 1e12 would loop for hours; "hidden_size": 1e300 is not a model).
_MAXIMA = {"num_hidden_layers": 10_000, "n_layer": 10_000, "num_attention_heads": 65_536, "n_head": 65_536,
           "num_key_value_heads": 65_536, "num_local_experts": 65_536, "num_experts": 65_536,
           "n_routed_experts": 65_536, "num_experts_per_tok": 65_536, "experts_per_token": 65_536,
           "n_shared_experts": 65_536, "decoder_sparse_step": 10_000, "moe_layer_freq": 10_000,
           "first_k_dense_replace": 10_000, "max_window_layers": 10_000, "sliding_window_pattern": 10_000}
_MAX_SIZE = 1 << 26  # hidden, intermediate, head_dim, vocab and positions: 67M
_MAX_TOKENS = 1 << 40  # positions and windows: counts of tokens, not widths
_TOKEN_KEYS = ("max_position_embeddings", "sliding_window", "n_positions")

_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token")
_MOE_KEYS = (*_EXPERT_KEYS, *_TOPK_KEYS, "moe_intermediate_size", "n_shared_experts", "shared_expert_intermediate_size",
             "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "decoder_sparse_step")
_MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
_SLIDING_KEYS = ("sliding_window", "layer_types", "sliding_window_pattern", "use_sliding_window", "max_window_layers")
_LAYER_TYPES = {"full_attention": FULL, "sliding_attention": SLIDING}


@dataclass(frozen=True)
class Family:
    """What a model_type's transformers classes default to and build (see the module's docstring)."""

    tied: bool = True               # tie_word_embeddings' default (PretrainedConfig: True)
    qkv_bias: bool = False          # q/k/v biases whatever the config says (Qwen2)
    qkv_bias_key: str = "attention_bias"   # the key that puts biases on q/k/v ("" = none read)
    o_bias: bool = True             # whether that key puts one on o_proj too (Qwen2-MoE's qkv_bias does not)
    attention_bias: bool = False    # that key's default
    qk_norm: bool = False
    sinks: bool = False
    norms: int = 2
    sliding: str = "none"           # none | all | qwen2 | qwen2_moe | pattern | layer_types (how windows land)
    pattern: int = 0                # "pattern": layer i is full when (i + 1) % pattern == 0
    window: int | None = None       # sliding_window's default
    head_dim: int = 0               # head_dim's default (0: hidden_size // num_attention_heads)
    moe: bool = False               # reads the MoE keys
    experts: int = 0                # default number of routed experts
    top_k: int = 0
    moe_size_key: str = "moe_intermediate_size"   # the experts' width ("intermediate_size": Mixtral, gpt-oss)
    moe_size: int = 0
    shared: str = ""                # "deepseek": n_shared_experts x moe width; "qwen2_moe": its own width + gate
    shared_default: int = 0
    first_dense: int = 0            # first_k_dense_replace's default
    router_bias: bool = False
    expert_bias: bool = False
    mla: bool = False               # reads the latent-attention keys
    mla_defaults: Mapping[str, int] = field(default_factory=dict)
    keep_fp32: frozenset[str] = frozenset()
    known: bool = True
    defaults: Mapping[str, object] = field(default_factory=dict)  # class defaults for keys configs leave out
    title: str = ""                 # the configuration class, for notes


_MLA_DEFAULTS = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                 "v_head_dim": 128}
FAMILIES = {
    "llama": Family(tied=False),
    "mistral": Family(tied=False, qkv_bias_key="", sliding="all", window=4096),
    "mixtral": Family(tied=False, qkv_bias_key="", sliding="all", moe=True, experts=8, top_k=2,
                      moe_size_key="intermediate_size"),
    "qwen2": Family(tied=False, qkv_bias=True, o_bias=False, qkv_bias_key="", sliding="qwen2", window=4096),
    "qwen2_moe": Family(tied=False, qkv_bias_key="qkv_bias", o_bias=False, attention_bias=True, sliding="qwen2_moe",
                        window=4096, moe=True, experts=60, top_k=4, moe_size=1408, shared="qwen2_moe",
                        shared_default=5632),
    "qwen3": Family(tied=False, qk_norm=True, sliding="qwen2", window=4096, head_dim=128),
    "qwen3_moe": Family(tied=False, qk_norm=True, sliding="all_gated", window=4096, moe=True, experts=128, top_k=8,
                        moe_size=768),
    "gemma": Family(head_dim=256),
    "gemma2": Family(norms=4, sliding="pattern", pattern=2, window=4096, head_dim=256),
    "gemma3_text": Family(norms=4, qk_norm=True, sliding="pattern", pattern=6, window=4096, head_dim=256,
                          defaults={"vocab_size": 262_208, "max_position_embeddings": 131_072},
                          title="Gemma3TextConfig"),
    "gpt_oss": Family(tied=False, attention_bias=True, sinks=True, sliding="pattern", pattern=2, window=128,
                      head_dim=64, moe=True, experts=128, top_k=4, moe_size_key="intermediate_size", router_bias=True,
                      expert_bias=True, keep_fp32=frozenset({p.NORM})),
    "deepseek_v3": Family(tied=False, moe=True, experts=256, top_k=8, moe_size=2048, shared="deepseek",
                          shared_default=1, first_dense=3, mla=True, mla_defaults=_MLA_DEFAULTS,
                          keep_fp32=frozenset({p.ROUTER})),
    "phi3": Family(tied=False, qkv_bias_key="", sliding="all"),
}
FAMILIES["gemma3"] = FAMILIES["gemma3_text"]
# An unknown model_type is read as a Llama-style decoder that honours every key it has; a config without one,
# as Llama (the reader's historical default, untied).
_GENERIC = Family(sliding="layer_types", moe=True, mla=True, known=False)
_UNTYPED = Family(tied=False, sliding="layer_types", moe=True, mla=True)


def _int(d: Mapping[str, object], key: str, where: str, *, minimum: int = 1) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)
        else:
            raise MemoryInputError(f"{where}: {key!r} must be an integer, got {shorten(value)}")
    if value < minimum:
        raise MemoryInputError(f"{where}: {key!r} must be >= {minimum}, got {value}")
    maximum = _MAXIMA.get(key, _MAX_TOKENS if key in _TOKEN_KEYS else _MAX_SIZE)
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
    if value is None:
        return default
    if not isinstance(value, bool):
        raise MemoryInputError(f"{where}: {key!r} must be true or false, got {shorten(value)}")
    return value


def _int_list(d: Mapping[str, object], key: str, where: str, below: int) -> frozenset[int]:
    value = d.get(key)
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise MemoryInputError(f"{where}: {key!r} must be a list of layer indices, got {shorten(value)}")
    bad = [v for v in value if not 0 <= v < below]
    if bad:
        raise MemoryInputError(f"{where}: {key!r} has layer {bad[0]}, outside 0..{below - 1} (num_hidden_layers)")
    return frozenset(value)


def _gpt2(d: Mapping[str, object], name: str, source: str, where: str) -> ModelConfig:
    # GPT-2 (transformers GPT2Config): LayerNorm with bias, GELU MLP of n_inner (default 4*n_embd),
    # biases on every Linear, learned positions, tied head, dropout 0.1 by default.
    hidden = _int(d, "n_embd", where)
    heads = _int(d, "n_head", where)
    return validate(ModelConfig(
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
    found = {k: _int(r.d, k, r.where, minimum=minimum) for k in keys if r.d.get(k) is not None}
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
    if explicit is not None:
        if not isinstance(explicit, list) or len(explicit) != layers:
            raise MemoryInputError(f"{where}: 'layer_types' must list one type per layer ({layers}, "
                                   f"num_hidden_layers), got {shorten(explicit)}")
        unknown = [t for t in explicit if t not in _LAYER_TYPES]
        if unknown:
            raise MemoryInputError(f"{where}: 'layer_types' has {shorten(unknown[0])}; refenv counts "
                                   f"{', '.join(_LAYER_TYPES)}")
        kinds = tuple(_LAYER_TYPES[str(t)] for t in explicit)
    else:
        use = _bool(d, "use_sliding_window", where, False)
        on = window is not None
        if fam.sliding == "all":
            kinds = (SLIDING if on else FULL,) * layers
        elif fam.sliding == "all_gated":
            kinds = (SLIDING if on and use else FULL,) * layers
        elif fam.sliding == "qwen2":
            first = _opt_int(d, "max_window_layers", where, 28, minimum=0)
            kinds = tuple(SLIDING if on and use and i >= first else FULL for i in range(layers))
        elif fam.sliding == "qwen2_moe":
            last = _opt_int(d, "max_window_layers", where, 28, minimum=0)
            kinds = tuple(SLIDING if on and use and (i + 1) % 2 and i < last else FULL for i in range(layers))
        elif fam.sliding == "pattern":
            every = _opt_int(d, "sliding_window_pattern", where, fam.pattern)
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
    w = _int({"sliding_window": window}, "sliding_window", where)
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
    first = _opt_int(d, "first_k_dense_replace", where, fam.first_dense, minimum=0)
    freq = _opt_int(d, "moe_layer_freq", where, 1)
    step = _opt_int(d, "decoder_sparse_step", where, 1)
    dense_only = _int_list(d, "mlp_only_layers", where, layers)
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
    rope = _int(merged, "qk_rope_head_dim", where)
    nope = _int(merged, "qk_nope_head_dim", where, minimum=0)
    q_rank = 0 if merged.get("q_lora_rank") is None else _int(merged, "q_lora_rank", where)
    bias = _bool(d, "attention_bias", where, False)
    return Attention(MLA, heads, 1, nope + rope, _int(merged, "v_head_dim", where), qkv_bias=bias, o_bias=bias,
                     q_lora_rank=q_rank, kv_lora_rank=_int(merged, "kv_lora_rank", where), rope_head_dim=rope)


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
    tower = VisionTower(hidden_size=_opt_int(v, "hidden_size", vw, 768),
                        intermediate_size=_opt_int(v, "intermediate_size", vw, 3072),
                        num_layers=_opt_int(v, "num_hidden_layers", vw, 12),
                        patch_size=_opt_int(v, "patch_size", vw, 16), image_size=_opt_int(v, "image_size", vw, 224),
                        num_channels=_opt_int(v, "num_channels", vw, 3),
                        use_head=_bool(v, "vision_use_head", vw, True))
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
    family = FAMILIES.get(model_type) or (_GENERIC if model_type else _UNTYPED)
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
    hidden = _int(text, "hidden_size", where)
    heads = _int(text, "num_attention_heads", where)
    layers = _int(text, "num_hidden_layers", where)
    kv_heads = _opt_int(text, "num_key_value_heads", where, heads)
    if text.get("head_dim") is not None:
        head_dim = _int(text, "head_dim", where)
    else:
        head_dim = family.head_dim or (hidden // heads if hidden % heads == 0 else 0)
    max_context = _opt_int(text, "max_position_embeddings", where, 0, minimum=0)
    intermediate = _int(text, "intermediate_size", where)
    qkv_bias = family.qkv_bias or (bool(family.qkv_bias_key)
                                   and _bool(text, family.qkv_bias_key, where, family.attention_bias))
    o_bias = qkv_bias and family.o_bias and not family.qkv_bias
    if not family.qkv_bias_key:
        r.ignored(("attention_bias",), f"model_type {r.model_type!r} builds its attention without biases")
    kinds, window = _layer_kinds(r, layers, max_context)
    moe, experts, top_k = _moe_layers(r, layers)
    mla = _mla(r, heads)
    moe_size = _opt_int(text, family.moe_size_key, where, family.moe_size or intermediate) if experts else 0
    shared = shared_gate = 0
    if experts and family.shared == "deepseek":
        shared = _opt_int(text, "n_shared_experts", where, family.shared_default, minimum=0) * moe_size
    elif experts and family.shared == "qwen2_moe":
        shared = _opt_int(text, "shared_expert_intermediate_size", where, family.shared_default, minimum=0)
        shared_gate = 1 if shared else 0
    elif experts and family.known:
        r.ignored(("n_shared_experts", "shared_expert_intermediate_size"),
                  f"model_type {r.model_type!r} has no shared experts in transformers")
    elif experts:
        shared = _opt_int(text, "n_shared_experts", where, 0, minimum=0) * moe_size
        shared = shared or _opt_int(text, "shared_expert_intermediate_size", where, 0, minimum=0)
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
        name=name, vocab_size=_int(text, "vocab_size", where), hidden_size=hidden, num_layers=layers,
        num_heads=heads, num_kv_heads=kv_heads, intermediate_size=intermediate,
        head_dim=mla.head_dim if mla else head_dim,
        tie_word_embeddings=_bool(text, "tie_word_embeddings", where, family.tied),
        qkv_bias=qkv_bias, o_bias=o_bias, mlp_bias=_bool(text, "mlp_bias", where, False),
        num_experts=experts if any(moe) else 0, experts_per_token=top_k if any(moe) else 0,
        attention_dropout=_float(text, ("attention_dropout",), where),
        hidden_dropout=_float(text, ("hidden_dropout",), where),
        max_context=max_context, source=source, vision=vision, quantization=quant,
        keep_fp32=family.keep_fp32, fused_experts=any(moe), family=model_type, notes=tuple(notes),
    )
    if any(layer != uniform_layer(cfg) for layer in plan):
        cfg = replace(cfg, layer_plan=tuple(plan))
    return validate(cfg)
