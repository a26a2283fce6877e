"""Inference: Llama-2-7B's 512 KiB of KV cache per token, GQA, weight precisions, the estimate's ledgers."""

from __future__ import annotations

import pytest

from harness.memory.estimate import InferSetup, estimate_inference
from harness.memory.inference import inference_weight_bytes, kv_bytes_per_token, kv_cache_bytes, tensor_bytes
from harness.memory.lora import nf4_bytes
from harness.memory.params import LINEAR, ParamTensor, count_params
from harness.memory.presets import preset
from harness.memory.shape import MemoryInputError, bare_model


def test_llama_2_7b_kv_cache_is_512_kib_per_token_in_fp16() -> None:
    assert kv_bytes_per_token(preset("llama-2-7b"), 2) == 512 * 1024


def test_gqa_cuts_the_cache_by_heads_over_kv_heads() -> None:
    # Llama-3-8B: 32 layers, 8 KV heads of 128 -> 128 KiB per token, a quarter of Llama-2-7B's.
    assert kv_bytes_per_token(preset("llama-3-8b"), 2) == 128 * 1024
    assert kv_cache_bytes(preset("llama-3-8b"), batch=4, context=8192) == 4 * 8192 * 128 * 1024


def test_weight_precisions() -> None:
    cfg = preset("llama-2-7b")
    params = count_params(cfg).total
    assert inference_weight_bytes(cfg, "fp32") == 4 * params
    assert inference_weight_bytes(cfg, "bf16") == 2 * params
    w = ParamTensor("w", (4096, 4096), LINEAR)
    assert tensor_bytes(w, "int8") == 4096 * 4096 + 4 * 4096
    # AWQ's layout: 4-bit codes, then per group of 128 inputs the 4-bit zeros packed in int32 and fp16 scales.
    assert tensor_bytes(w, "int4") == 4096 * 4096 // 2 + 4096 // 128 * (4096 // 2 + 2 * 4096)
    assert tensor_bytes(w, "nf4") == nf4_bytes(4096 * 4096)
    # Embeddings stay 16-bit whatever the Linear weights become.
    assert tensor_bytes(ParamTensor("e", (32000, 4096), "embedding"), "int4") == 2 * 32000 * 4096


def test_estimate_splits_over_tensor_parallel_gpus() -> None:
    cfg = preset("llama-3-70b")
    one = estimate_inference(cfg, InferSetup(batch=8, context=8192))
    four = estimate_inference(cfg, InferSetup(batch=8, context=8192, gpus=4))
    assert one.ledgers.kv_cache == kv_cache_bytes(cfg, 8, 8192, 2)
    assert four.ledgers.weights == -(-one.ledgers.weights // 4)
    assert four.ledgers.kv_cache == -(-one.ledgers.kv_cache // 4)
    assert one.ledgers.gradients == one.ledgers.optimizer_state == 0


def test_bare_count_gives_weights_only() -> None:
    est = estimate_inference(bare_model(7e9), InferSetup())
    assert est.ledgers.weights == 14_000_000_000 and est.ledgers.activations is None
    assert any("KV cache" in n for n in est.notes)


def test_bad_inference_settings() -> None:
    with pytest.raises(MemoryInputError, match="--weights"):
        estimate_inference(preset("gpt2"), InferSetup(weights="int3"))
    with pytest.raises(MemoryInputError, match="--kv-dtype"):
        estimate_inference(preset("gpt2"), InferSetup(kv_dtype="int2"))
    with pytest.raises(MemoryInputError, match="--batch"):
        estimate_inference(preset("gpt2"), InferSetup(batch=0))


def test_tensor_parallel_kv_cache_never_splits_a_kv_head() -> None:
    # Llama-3-70B has 8 KV heads: over 16 ranks each still caches one whole head (an eighth), not a 16th.
    cfg = preset("llama-3-70b")
    one = estimate_inference(cfg, InferSetup(batch=1, context=8192))
    sixteen = estimate_inference(cfg, InferSetup(batch=1, context=8192, gpus=16))
    assert sixteen.ledgers.kv_cache == one.ledgers.kv_cache // 8
    assert any("replicated" in n for n in sixteen.notes)
    with pytest.raises(MemoryInputError, match="more ranks than heads"):
        estimate_inference(cfg, InferSetup(gpus=128))


def test_context_beyond_the_model_maximum_is_flagged() -> None:
    assert not any("beyond" in n for n in estimate_inference(preset("llama-3-8b"), InferSetup(context=8192)).notes)
    est = estimate_inference(preset("llama-3-8b"), InferSetup(context=16384))
    assert any("beyond" in n and "8192" in n for n in est.notes)


def test_inference_ladder_never_proposes_more_ranks_than_heads() -> None:
    from harness.memory.budget import parse_budget
    from harness.memory.ladder import ladder

    cfg = preset("llama-2-7b")  # 32 heads
    plans = ladder(cfg, InferSetup(batch=64, context=4096), parse_budget("256MiB"))
    gpus = [p.estimate.setup.gpus for p in plans]
    assert max(gpus) == 32 and not plans[-1].fit.fits
