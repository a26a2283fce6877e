"""Parameter counts: the presets against their published sizes, GPT-2 exactly, configs and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.memory.hf_config import from_hf_config
from harness.memory.params import LINEAR, count_params, param_tensors
from harness.memory.presets import load_config_file, parse_published, preset, presets
from harness.memory.shape import MemoryInputError, bare_model

LLAMA_7B = {"vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "intermediate_size": 11008}


@pytest.mark.parametrize("name", sorted(presets()))
def test_preset_count_matches_its_published_size(name: str) -> None:
    p = presets()[name]
    value, half_unit = parse_published(p.published_params)
    assert abs(count_params(p.config).total - value) <= half_unit, (name, count_params(p.config).total)


@pytest.mark.parametrize(("name", "exact"), [
    ("gpt2", 124_439_808),        # the figure torch/transformers print for GPT-2 small
    ("llama-2-7b", 6_738_415_616),
    ("llama-3-8b", 8_030_261_248),
    ("llama-3-70b", 70_553_706_496),
    ("mistral-7b", 7_241_732_096),
])
def test_exact_counts(name: str, exact: int) -> None:
    assert count_params(preset(name)).total == exact


def test_mixtral_active_params_match_the_release_note() -> None:
    p = presets()["mixtral-8x7b"]
    value, half_unit = parse_published(p.published_active_params)
    assert abs(count_params(p.config).active - value) <= half_unit


def test_the_required_presets_exist_with_sources() -> None:
    for name in ("gpt2", "llama-2-7b", "llama-3-8b", "llama-3-70b", "mistral-7b"):
        assert presets()[name].source.startswith("https://huggingface.co/")


def test_tensor_list_sums_to_the_count_and_names_are_unique() -> None:
    cfg = preset("llama-3-8b")
    tensors = param_tensors(cfg)
    assert sum(t.numel for t in tensors) == count_params(cfg).total
    assert len({t.name for t in tensors}) == len(tensors)
    assert count_params(cfg).linear_weights == sum(t.numel for t in tensors if t.kind == LINEAR)


def test_gqa_shrinks_k_and_v_only() -> None:
    k = next(t for t in param_tensors(preset("llama-3-8b")) if t.name == "layers.0.attn.k_proj.weight")
    q = next(t for t in param_tensors(preset("llama-3-8b")) if t.name == "layers.0.attn.q_proj.weight")
    assert (k.shape, q.shape) == ((1024, 4096), (4096, 4096))


def test_tied_head_adds_no_tensor() -> None:
    names = [t.name for t in param_tensors(preset("gpt2"))]
    assert "lm_head.weight" not in names and "embed_positions.weight" in names
    assert "lm_head.weight" in [t.name for t in param_tensors(preset("llama-2-7b"))]


def test_gpt2_style_keys_are_read() -> None:
    cfg = from_hf_config({"vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12}, "gpt2-like")
    assert count_params(cfg).total == 124_439_808
    assert (cfg.intermediate_size, cfg.norm, cfg.mlp) == (3072, "layernorm", "gelu")


def test_config_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "my-model" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA_7B))
    cfg = load_config_file(str(path))
    assert cfg.name == "my-model" and count_params(cfg).total == 6_738_415_616


@pytest.mark.parametrize(("patch", "fragment"), [
    ({"hidden_size": -4096}, "'hidden_size' must be >= 1"),
    ({"num_attention_heads": 30}, "must divide hidden_size"),
    ({"num_key_value_heads": 5}, "num_key_value_heads (5) must divide num_attention_heads (32)"),
    ({"vocab_size": "big"}, "'vocab_size' must be an integer"),
    ({"tie_word_embeddings": "yes"}, "must be true or false"),
    ({"num_local_experts": 8, "num_experts_per_tok": 9}, "between 1 and num_local_experts"),
])
def test_bad_configs_name_the_field(patch: dict[str, object], fragment: str) -> None:
    with pytest.raises(MemoryInputError, match=None) as info:
        from_hf_config({**LLAMA_7B, **patch}, "bad")
    assert fragment in str(info.value)


def test_missing_keys_are_listed() -> None:
    with pytest.raises(MemoryInputError, match="'intermediate_size'"):
        from_hf_config({k: v for k, v in LLAMA_7B.items() if k != "intermediate_size"}, "bad")


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(MemoryInputError, match=r"known models: deepseek-r1, .*, gpt2, "):
        preset("llama-9")


def test_bare_model_refuses_nonsense() -> None:
    assert bare_model(7e9).params == 7_000_000_000
    for bad in (-1.0, 0.0, float("nan")):
        with pytest.raises(MemoryInputError):
            bare_model(bad)


# Gemma-2B's config.json (huggingface.co/google/gemma-2b) carries no tie_word_embeddings key: GemmaConfig
# defaults it to True, and the model has 2,506,172,416 parameters (2.51 B), not 3.03 B.
GEMMA_2B = {"model_type": "gemma", "vocab_size": 256000, "hidden_size": 2048, "num_hidden_layers": 18,
            "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 16384}
# Qwen2-0.5B (huggingface.co/Qwen/Qwen2-0.5B): q/k/v carry biases no config key names; 494,032,768 params.
QWEN2_05B = {"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24,
             "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
             "tie_word_embeddings": True, "max_position_embeddings": 131072}


def test_tied_head_defaults_by_model_type() -> None:
    gemma = from_hf_config(GEMMA_2B, "gemma-2b")
    assert gemma.tie_word_embeddings and count_params(gemma).total == 2_506_172_416
    assert not from_hf_config({**GEMMA_2B, "model_type": "llama"}, "x").tie_word_embeddings
    assert not from_hf_config(LLAMA_7B, "no-type").tie_word_embeddings  # the Llama default, as before


def test_qwen2_has_implicit_qkv_biases() -> None:
    cfg = from_hf_config(QWEN2_05B, "qwen2-0.5b")
    assert cfg.qkv_bias and not cfg.o_bias
    assert count_params(cfg).total == 494_032_768
    assert cfg.max_context == 131072
