"""Each model_type's transformers classes as data: what their configuration defaults to and their modeling builds.

Read from transformers 5's models/<type>/configuration_<type>.py (defaults, and how `layer_types` follow from
the sliding-window keys) and modeling_<type>.py (biases, q/k norms, sinks, sandwich norms, which layers are
MoE, the experts' width, shared experts, MLA, `_keep_in_fp32_modules(_strict)`). harness/memory/hf_config.py
reads a config.json with them; `memory --verify` builds a small config of each family with its class and
compares (harness/memory/verify_families.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.memory.params import NORM, ROUTER


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
    keep_fp32: frozenset[str] = frozenset()       # _keep_in_fp32_modules_strict: fp32 under fp16 and bf16
    keep_fp32_fp16: frozenset[str] = frozenset()  # _keep_in_fp32_modules: fp32 under fp16 only
    known: bool = True
    defaults: Mapping[str, object] = field(default_factory=dict)  # class defaults for keys configs leave out
    title: str = ""                 # the configuration class, for notes


MLA_DEFAULTS = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
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
                      expert_bias=True, keep_fp32_fp16=frozenset({NORM})),
    "deepseek_v3": Family(tied=False, moe=True, experts=256, top_k=8, moe_size=2048, shared="deepseek",
                          shared_default=1, first_dense=3, mla=True, mla_defaults=MLA_DEFAULTS,
                          keep_fp32=frozenset({ROUTER})),
    "phi3": Family(tied=False, qkv_bias_key="", sliding="all"),
}
FAMILIES["gemma3"] = FAMILIES["gemma3_text"]
# An unknown model_type is read as a Llama-style decoder that honours every key it has; a config without one,
# as Llama (the reader's historical default, untied).
GENERIC = Family(sliding="layer_types", moe=True, mla=True, known=False)
UNTYPED = Family(tied=False, sliding="layer_types", moe=True, mla=True)


def family_of(model_type: str) -> Family:
    """The family of a model_type: a known one, the generic reading for an unknown one, Llama's for none."""
    return FAMILIES.get(model_type) or (GENERIC if model_type else UNTYPED)
