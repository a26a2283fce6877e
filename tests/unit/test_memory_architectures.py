"""Today's architectures by their config keys: MoE (routed, shared, dense-first), MLA, sliding and hybrid
attention, multimodal configs; the KV cache per kind of layer; expert parallelism. Figures worked by hand."""

from __future__ import annotations

import pytest

from harness.memory.estimate import InferSetup, TrainSetup, estimate_inference, estimate_training
from harness.memory.hf_config import from_hf_config
from harness.memory.inference import (
    DECOMPRESSED,
    LATENT,
    inference_weight_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_parts,
)
from harness.memory.layers import FULL, MLA, MOE, SLIDING
from harness.memory.params import count_params, param_tensors, targetable
from harness.memory.presets import preset, presets
from harness.memory.shape import MemoryInputError, layer_groups

K128 = 131_072


def kinds(cfg_name: str) -> list[tuple[str, int, str, int]]:
    cfg = preset(cfg_name)
    return [(layer.attention.kind, layer.attention.window, layer.mlp.kind, n) for layer, n in layer_groups(cfg)]


def test_deepseek_v3_is_mla_with_three_dense_layers_then_moe() -> None:
    cfg = preset("deepseek-v3")
    assert kinds("deepseek-v3") == [(MLA, 0, "dense", 3), (MLA, 0, MOE, 58)]
    moe = cfg.layer(3).mlp
    assert (moe.experts, moe.top_k, moe.intermediate_size, moe.shared_size) == (256, 8, 2048, 2048)
    counts = count_params(cfg)
    assert counts.total == 671_026_404_352           # DeepseekV3ForCausalLM on the meta device (test_memory_meta)
    # One routed expert: gate, up and down of 7168 x 2048; 248 of 256 idle per token in each of 58 layers.
    assert counts.total - counts.active == 58 * 248 * 3 * 7168 * 2048
    assert counts.experts == 58 * 256 * 3 * 7168 * 2048


def test_mla_caches_the_latent_and_a_rope_key_per_token_and_layer() -> None:
    cfg = preset("deepseek-v3")
    # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes; the decompressed K (128 heads x 192)
    # and V (128 x 128) would be 71x larger.
    assert kv_bytes_per_token(cfg, 2, LATENT) == 61 * 576 * 2 == 70_272
    assert kv_bytes_per_token(cfg, 2, DECOMPRESSED) == 61 * 128 * (192 + 128) * 2
    assert kv_cache_bytes(cfg, 1, K128) == 70_272 * K128 < 9 * 2**30


def test_mla_latent_is_whole_on_every_tensor_parallel_rank() -> None:
    cfg = preset("deepseek-v3")
    one = estimate_inference(cfg, InferSetup(weights="bf16", context=K128))
    eight = estimate_inference(cfg, InferSetup(weights="bf16", context=K128, gpus=8))
    assert eight.ledgers.kv_cache == one.ledgers.kv_cache
    decompressed = estimate_inference(cfg, InferSetup(weights="bf16", context=K128, gpus=8, mla_cache=DECOMPRESSED))
    assert decompressed.ledgers.kv_cache == kv_cache_bytes(cfg, 1, K128, 2, DECOMPRESSED) // 8
    assert any("latent" in n and f"{decompressed.ledgers.kv_cache:,d}" in n for n in eight.notes)


def test_qwen3_moe_experts_are_sized_by_moe_intermediate_size() -> None:
    cfg = preset("qwen3-30b-a3b")
    assert kinds("qwen3-30b-a3b") == [(FULL, 0, MOE, 48)]
    counts = count_params(cfg)
    assert counts.total == 30_532_122_624
    assert counts.experts == 48 * 128 * 3 * 2048 * 768
    assert counts.total - counts.active == 48 * 120 * 3 * 2048 * 768


def test_qwen_moe_layer_rules_decoder_sparse_step_and_mlp_only_layers() -> None:
    cfg = from_hf_config({"model_type": "qwen3_moe", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
                          "moe_intermediate_size": 8, "num_hidden_layers": 6, "num_attention_heads": 2,
                          "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 2,
                          "mlp_only_layers": [3]}, "q")
    # MoE where (i + 1) % 2 == 0 and i is not listed: layers 1 and 5 (3 is listed).
    assert [cfg.layer(i).mlp.kind for i in range(6)] == ["dense", MOE, "dense", "dense", "dense", MOE]


def test_deepseek_moe_layer_freq_is_read_and_noted() -> None:
    base = {k: v for k, v in preset_config("deepseek-v3").items() if k != "quantization_config"}
    cfg = from_hf_config({**base, "num_hidden_layers": 8, "moe_layer_freq": 2}, "d")
    # DeepSeek's own modeling code: MoE from first_k_dense_replace (3) on, where layer % moe_layer_freq == 0.
    assert [cfg.layer(i).mlp.kind for i in range(8)] == ["dense"] * 4 + [MOE, "dense", MOE, "dense"]
    assert any("moe_layer_freq 2" in n for n in cfg.notes)


def preset_config(name: str) -> dict[str, object]:
    import json

    from harness import datafiles

    config: dict[str, object] = json.loads(datafiles.read("model_presets.json"))["presets"][name]["config"]
    return config


def test_qwen2_moe_shared_expert_and_its_gate() -> None:
    cfg = from_hf_config({"model_type": "qwen2_moe", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
                          "moe_intermediate_size": 8, "shared_expert_intermediate_size": 24,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "num_experts": 4,
                          "num_experts_per_tok": 2}, "q2")
    names = {t.name: t.shape for t in param_tensors(cfg) if t.name.startswith("layers.0.mlp")}
    assert names["layers.0.mlp.shared_expert_gate.weight"] == (1, 16)
    assert names["layers.0.mlp.shared_experts.up_proj.weight"] == (24, 16)
    assert names["layers.0.mlp.experts.gate_up_proj"] == (4, 16, 16)


def test_gemma3_five_sliding_layers_to_one_global_at_128k() -> None:
    cfg = preset("gemma-3-27b")
    assert kinds("gemma-3-27b") == [(SLIDING, 1024, "dense", 52), (FULL, 0, "dense", 10)]
    per_token = 16 * (128 + 128) * 2    # 16 KV heads, K and V of 128, bf16
    assert kv_cache_bytes(cfg, 1, K128) == 52 * 1024 * per_token + 10 * K128 * per_token
    # Every layer would keep every token without the window: ~6x more.
    assert kv_bytes_per_token(cfg) * K128 > 5 * kv_cache_bytes(cfg, 1, K128)


def test_gpt_oss_alternating_windows_and_sinks() -> None:
    cfg = preset("gpt-oss-120b")
    assert kinds("gpt-oss-120b") == [(SLIDING, 128, MOE, 18), (FULL, 0, MOE, 18)]
    assert kv_cache_bytes(cfg, 1, K128) == 18 * 128 * 2048 + 18 * K128 * 2048
    names = {t.name for t in param_tensors(cfg)}
    assert {"layers.0.attn.sinks", "layers.0.mlp.router.bias", "layers.0.mlp.experts.down_proj_bias"} <= names


def test_sliding_layers_hold_at_most_their_window_and_all_of_a_short_context() -> None:
    cfg = preset("mistral-7b")  # 4096 on every layer
    parts = kv_parts(cfg, batch=2, context=1000)
    assert [(p.layers, p.tokens) for p in parts] == [(32, 1000)]
    assert kv_cache_bytes(cfg, 2, 32_768) == kv_cache_bytes(cfg, 2, 4096)


def test_layer_types_win_over_the_pattern() -> None:
    raw = {"model_type": "gemma3_text", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
           "num_hidden_layers": 3, "num_attention_heads": 2, "head_dim": 8, "sliding_window": 4,
           "layer_types": ["full_attention", "sliding_attention", "full_attention"]}
    cfg = from_hf_config(raw, "g")
    assert [cfg.layer(i).attention.kind for i in range(3)] == [FULL, SLIDING, FULL]


def test_qwen2_window_only_when_switched_on_and_above_max_window_layers() -> None:
    raw = {"model_type": "qwen2", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
           "num_hidden_layers": 4, "num_attention_heads": 2, "sliding_window": 8, "max_window_layers": 2}
    assert all(from_hf_config(raw, "q").layer(i).attention.kind == FULL for i in range(4))
    on = from_hf_config({**raw, "use_sliding_window": True}, "q")
    assert [on.layer(i).attention.kind for i in range(4)] == [FULL, FULL, SLIDING, SLIDING]


def test_multimodal_config_reads_its_text_config_and_counts_the_siglip_tower() -> None:
    cfg = preset("gemma-3-27b")
    counts = count_params(cfg)
    # SigLIP-So400m as Gemma-3 configures it: 27 layers of 1152, 4304; 896 px in 14 px patches; no head.
    h, f = 1152, 4304
    layer = 4 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h)
    tower = (h * 3 * 14 * 14 + h) + 64 * 64 * h + 27 * layer + 2 * h
    assert counts.vision == tower + (h * 5376 + h)  # + the projector (1152 x 5376) and its norm
    assert any("vocab_size absent" in n for n in cfg.notes)


def test_an_unknown_vision_tower_is_noted_not_dropped() -> None:
    raw = {"model_type": "llava", "text_config": {"model_type": "llama", "vocab_size": 100, "hidden_size": 16,
                                                  "intermediate_size": 32, "num_hidden_layers": 2,
                                                  "num_attention_heads": 2},
           "vision_config": {"model_type": "clip_vision_model"}}
    cfg = from_hf_config(raw, "l")
    assert cfg.vision is None and any("clip_vision_model" in n and "not counted" in n for n in cfg.notes)


def test_keys_a_family_does_not_read_are_noted() -> None:
    raw = {"model_type": "llama", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 2, "sliding_window": 64, "num_local_experts": 4}
    cfg = from_hf_config(raw, "l")
    assert cfg.num_experts == 0 and all(layer.attention.kind == FULL for layer, _ in layer_groups(cfg))
    assert any(n.startswith("sliding_window (64) ignored") for n in cfg.notes)
    assert any(n.startswith("num_local_experts (4) ignored") for n in cfg.notes)


def test_lora_targets_follow_the_layers() -> None:
    assert targetable(preset("deepseek-v3")) == ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
                                                 "o_proj", "gate_proj", "up_proj", "down_proj")
    assert targetable(preset("llama-3-8b")) == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                "down_proj")


def test_expert_parallel_serving_splits_the_routed_experts_only() -> None:
    cfg = preset("deepseek-v3")
    fmt = "bf16"
    whole = inference_weight_bytes(cfg, fmt)
    expert_bytes = count_params(cfg).experts * 2
    est = estimate_inference(cfg, InferSetup(weights=fmt, gpus=8, ep=8))
    assert est.ledgers.weights == -(-(whole - expert_bytes) // 8) + expert_bytes // 8
    assert any("32 of the 256 routed experts" in n for n in est.notes)
    with pytest.raises(MemoryInputError, match="--ep"):
        estimate_inference(cfg, InferSetup(weights=fmt, ep=512))
    with pytest.raises(MemoryInputError, match="MoE"):
        estimate_inference(preset("llama-3-8b"), InferSetup(ep=2))


def test_expert_parallel_training_shards_experts_within_their_group() -> None:
    cfg = preset("mixtral-8x7b")
    counts = count_params(cfg)
    ddp = estimate_training(cfg, TrainSetup(sharding="ddp", gpus=8))
    ep = estimate_training(cfg, TrainSetup(sharding="ddp", gpus=8, ep=8))
    # Mixed precision: 2 B of bf16 weights per parameter; one expert of 8 per rank.
    assert ddp.ledgers.weights - ep.ledgers.weights == 2 * counts.experts * 7 // 8
    assert ep.ledgers.master_weights == 4 * (counts.total - counts.experts) + 4 * counts.experts // 8
    # Under FSDP every state is sharded 16 ways either way; the block it gathers holds one rank's experts only.
    fsdp_ep = estimate_training(cfg, TrainSetup(sharding="fsdp-full", gpus=16, ep=8)).ledgers
    fsdp = estimate_training(cfg, TrainSetup(sharding="fsdp-full", gpus=16)).ledgers
    assert fsdp_ep.optimizer_state == fsdp.optimizer_state and fsdp_ep.weights < fsdp.weights
    with pytest.raises(MemoryInputError, match="must divide --gpus"):
        estimate_training(cfg, TrainSetup(sharding="ddp", gpus=6, ep=4))


@pytest.mark.parametrize("name", sorted(presets()))
def test_every_named_model_has_a_source_and_reads_without_surprises(name: str) -> None:
    p = presets()[name]
    assert p.source.startswith("https://huggingface.co/") and p.source.endswith("/config.json")
    ignored = [n for n in p.config.notes if "ignored" in n]
    assert ignored == [], ignored
