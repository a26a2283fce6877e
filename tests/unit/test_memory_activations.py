"""Activations: Korthikanti et al.'s Table 2 for their GPT-3 175B, and the generalised per-layer model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.memory.activations import (
    CHECKPOINT_RNG_BYTES,
    ActivationSetup,
    korthikanti_layer_bytes,
    layer_bytes_per_token,
    training_activations,
)
from harness.memory.presets import preset
from harness.memory.shape import MemoryInputError, ModelConfig

# GPT-3 175B as the paper's Table 3 trains it: a = 96, h = 12288, s = 2048, 96 layers, t = 8.
S, H, A, T = 2048, 12288, 96, 8
SBH = S * 1 * H
GPT3 = ModelConfig(name="gpt3-175b", vocab_size=51200, hidden_size=H, num_layers=96, num_heads=A, num_kv_heads=A,
                   intermediate_size=4 * H, head_dim=H // A, tie_word_embeddings=True, mlp="gelu",
                   norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True, attention_dropout=0.1,
                   hidden_dropout=0.1)


def test_attention_term_is_80_for_gpt3() -> None:
    # 5as/h = 5 * 96 * 2048 / 12288 = 80: larger than the 34 of everything else.
    assert korthikanti_layer_bytes(S, 1, H, A) == SBH * (34 + 80) == 2_868_903_936


@pytest.mark.parametrize(("kwargs", "coefficient"), [
    ({}, 34 + 80),                                                          # no parallelism
    ({"t": T}, 10 + 24 / T + 80 / T),                                       # tensor parallel
    ({"t": T, "sequence_parallel": True}, 34 / T + 80 / T),                # + sequence parallel
    ({"t": T, "recompute": "selective"}, 10 + 24 / T),                      # tensor parallel + selective
    ({"t": T, "sequence_parallel": True, "recompute": "selective"}, 34 / T),
    ({"recompute": "full"}, 2),                                             # full recompute: the layer input
])
def test_table_2_rows(kwargs: dict[str, object], coefficient: float) -> None:
    assert korthikanti_layer_bytes(S, 1, H, A, **kwargs) == pytest.approx(SBH * coefficient)  # type: ignore[arg-type]


def test_selective_recompute_saves_70_percent_for_gpt3() -> None:
    full = korthikanti_layer_bytes(S, 1, H, A)
    selective = korthikanti_layer_bytes(S, 1, H, A, recompute="selective")
    assert round(1 - selective / full, 2) == 0.70


# The paper leaves out LayerNorm's mean and rstd: two fp32 values per token for each of a layer's two norms.
STATS = 2 * 2 * 4


# Megatron's fused softmax keeps one 16-bit tensor of probabilities, as the paper counts them.
MEGATRON = ActivationSetup(micro_batch=1, seq_len=S, attention="eager", softmax_fp32=False)


def test_generalised_layer_reduces_to_the_paper_for_a_gpt_layer() -> None:
    per_token, core = layer_bytes_per_token(GPT3, MEGATRON)
    assert (per_token - STATS) * S == korthikanti_layer_bytes(S, 1, H, A)
    assert core * S == 5 * A * S * S


def test_flash_drops_the_score_matrix_and_keeps_an_fp32_logsumexp() -> None:
    per_token, core = layer_bytes_per_token(GPT3, ActivationSetup(micro_batch=1, seq_len=S, attention="flash"))
    assert core == 0 and (per_token - STATS) * S == 34 * SBH + 4 * A * S


def test_no_dropout_removes_the_masks() -> None:
    cfg = replace(GPT3, attention_dropout=0.0, hidden_dropout=0.0)
    per_token, _ = layer_bytes_per_token(cfg, MEGATRON)
    assert (per_token - STATS) * S == 32 * SBH + 2 * A * S * S


def test_hf_eager_keeps_fp32_probabilities_and_their_copy() -> None:
    hf, core = layer_bytes_per_token(GPT3, replace(MEGATRON, softmax_fp32=True))
    megatron, paper_core = layer_bytes_per_token(GPT3, MEGATRON)
    assert core - paper_core == hf - megatron == 4 * A * S


def test_gqa_swiglu_and_rmsnorm_terms() -> None:
    cfg = preset("llama-3-8b")
    per_token, _ = layer_bytes_per_token(cfg, ActivationSetup(micro_batch=1, seq_len=4096, attention="flash"))
    h, kv, f, a = 4096, 1024, 14336, 32
    rmsnorm = 4 * h + 4 + 2 * h   # HF's fp32 input, the fp32 rsqrt, the bf16 normalised x
    expected = 2 * rmsnorm + 2 * (h + (h + kv) + kv + h + h + 4 * f) + 4 * a
    assert per_token == expected
    eager, _ = layer_bytes_per_token(cfg, ActivationSetup(micro_batch=1, seq_len=4096, attention="eager"))
    assert eager - per_token == 2 * (2 * (h - kv)) + (4 + 2) * a * 4096 - 4 * a  # K/V repeated, s x s, no lse


def test_model_total_and_checkpointing() -> None:
    cfg = preset("llama-2-7b")
    base = ActivationSetup(micro_batch=2, seq_len=1024, attention="eager")
    none = training_activations(cfg, base)
    selective = training_activations(cfg, replace(base, checkpointing="selective"))
    full = training_activations(cfg, replace(base, checkpointing="full"))
    head = (4 * 4096 + 4 + 2 * 4096) + 2 * 4096 + 4 * 32000
    fixed = 2 * 2 * 1024 * 128 * 2 + 1024 * 1024 + 4  # rotary cos/sin, the causal mask, the loss's scalar
    assert none.head_bytes_per_token == head
    assert none.total == 2 * 1024 * (32 * none.layer_bytes_per_token + head) + fixed
    assert selective.total == 2 * 1024 * (32 * (none.layer_bytes_per_token - none.core_bytes_per_token) + head) + fixed
    assert full.total == 2 * 1024 * (32 * 4096 * 2 + head) + fixed  # each layer's input
    on_cpu = training_activations(cfg, replace(base, checkpointing="full", checkpoint_state_bytes=CHECKPOINT_RNG_BYTES))
    assert on_cpu.total - full.total == 32 * CHECKPOINT_RNG_BYTES  # the generator state checkpoint keeps
    assert full.recompute_bytes == 2 * 1024 * none.layer_bytes_per_token  # one layer again, in backward
    assert none.recompute_bytes == selective.recompute_bytes == 0
    assert full.total < selective.total < none.total


def test_lora_frozen_linears_keep_less() -> None:
    cfg = preset("llama-2-7b")
    full = ActivationSetup(micro_batch=1, seq_len=1024)
    lora = replace(full, trainable=frozenset(), adapted=frozenset({"q_proj", "v_proj"}), lora_rank=16,
                   adapter_bytes=2)
    assert layer_bytes_per_token(cfg, lora)[0] < layer_bytes_per_token(cfg, full)[0]


def test_bad_settings_are_errors() -> None:
    with pytest.raises(MemoryInputError, match="--attention"):
        training_activations(GPT3, ActivationSetup(micro_batch=1, seq_len=8, attention="sparse"))
    with pytest.raises(MemoryInputError, match="--checkpointing"):
        training_activations(GPT3, ActivationSetup(micro_batch=1, seq_len=8, checkpointing="some"))
