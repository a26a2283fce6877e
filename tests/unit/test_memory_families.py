"""The family verification can disagree: the cache transformers keeps is measured, not restated, so a prediction
that ignored the windows (or MLA's latent) would fail it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.memory.hf_config import from_hf_config
from harness.memory.inference import DECOMPRESSED, kv_cache_bytes
from harness.memory.layers import FULL
from harness.memory.verify_families import BATCH, DECODE, FAMILIES, PROMPT, _build, _cache_bytes

pytest.importorskip("transformers")


def test_a_prediction_without_the_windows_is_not_what_transformers_holds() -> None:
    raw = FAMILIES["gpt_oss"]
    cfg = from_hf_config(raw, "g")
    measured = _cache_bytes(_build(raw), cfg.vocab_size)
    tokens = PROMPT + DECODE
    assert measured == kv_cache_bytes(cfg, BATCH, tokens)
    unwindowed = replace(cfg, layer_plan=tuple(replace(layer, attention=replace(layer.attention, kind=FULL, window=0))
                                               for layer in cfg.layer_plan))
    assert kv_cache_bytes(unwindowed, BATCH, tokens) > measured


def test_transformers_5_caches_the_mla_latent_not_the_decompressed_keys() -> None:
    raw = FAMILIES["deepseek_v3"]
    cfg = from_hf_config(raw, "d")
    measured = _cache_bytes(_build(raw), cfg.vocab_size)
    assert measured == kv_cache_bytes(cfg, BATCH, PROMPT + DECODE)
    assert measured < kv_cache_bytes(cfg, BATCH, PROMPT + DECODE, 2, DECOMPRESSED)
