"""Every named model built by transformers' own class on the `meta` device (no memory, no download): its
parameter count equals refenv's, exactly, and the published size its publisher states."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import datafiles
from harness.memory.params import count_params
from harness.memory.presets import parse_published, presets

RAW: dict[str, Any] = json.loads(datafiles.read("model_presets.json"))["presets"]


def built_on_meta(raw: dict[str, Any]) -> Any:
    """The model class transformers picks for the config (the multimodal one where there is a vision tower)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "architectures")}
    config = AutoConfig.for_model(raw["model_type"], **kwargs)
    auto = AutoModelForImageTextToText if "vision_config" in raw else AutoModelForCausalLM
    with torch.device("meta"):
        return auto.from_config(config)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("name", sorted(RAW))
def test_named_model_count_equals_transformers_class(name: str) -> None:
    model = built_on_meta(RAW[name]["config"])
    assert sum(p.numel() for p in model.parameters()) == count_params(presets()[name].config).total


@pytest.mark.parametrize("name", sorted(presets()))
def test_named_model_matches_its_published_active_size(name: str) -> None:
    p = presets()[name]
    counts = count_params(p.config)
    if not p.published_active_params:
        # A MoE preset states its active size, or says why its publisher's figure is not compared.
        assert counts.active == counts.total or RAW[name].get("published_active_note"), name
        return
    value, half_unit = parse_published(p.published_active_params)
    # DeepSeek and OpenAI leave the input embedding (a lookup, no multiply) out of their active counts.
    active = counts.active - (counts.embedding if RAW[name].get("published_active_excludes") == "embedding" else 0)
    assert abs(active - value) <= half_unit, (name, active)


FAMILY_DEFAULTS = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2",
                   "gemma3_text", "gpt_oss", "deepseek_v3", "phi3")


@pytest.mark.parametrize("model_type", FAMILY_DEFAULTS)
def test_each_familys_default_config_as_transformers_writes_it(model_type: str) -> None:
    """The config.json a family's configuration class writes with its defaults (save_pretrained's keys) is
    counted as its model class counts it: every key as transformers itself reads it."""
    from transformers import AutoConfig

    from harness.memory.hf_config import from_hf_config

    written = json.loads(AutoConfig.for_model(model_type).to_json_string(use_diff=False))
    model = built_on_meta(written)
    cfg = from_hf_config(written, f"{model_type}-default")
    assert sum(p.numel() for p in model.parameters()) == count_params(cfg).total


def test_default_moe_mla_and_sliding_configs_by_hand() -> None:
    """Configs as transformers writes them, where a Llama-only reading goes wrong by up to 28x: DeepSeek-V3's
    routed experts and latent cache, Qwen3-MoE's expert width, Gemma-3's and gpt-oss's windows."""
    from transformers import AutoConfig

    from harness.memory.hf_config import from_hf_config
    from harness.memory.inference import kv_cache_bytes

    def written(model_type: str) -> Any:
        return from_hf_config(json.loads(AutoConfig.for_model(model_type).to_json_string(use_diff=False)), model_type)

    k128 = 131_072
    ds = written("deepseek_v3")
    assert count_params(ds).total == 671_026_404_352                  # not 40.4 B: 256 routed + 1 shared expert
    assert kv_cache_bytes(ds, 1, k128) == 61 * (512 + 64) * 2 * k128  # 8.58 GiB, not 244 GiB
    qwen = written("qwen3_moe")                                       # 24 layers of 128 experts of 768
    per_layer_experts = 128 * 3 * 2048 * 768
    assert 15.3e9 < count_params(qwen).total < 15.4e9 and count_params(qwen).experts == 24 * per_layer_experts
    gemma = written("gemma3_text")                                    # 22 sliding (4096) + 4 full of 26
    assert kv_cache_bytes(gemma, 1, k128) == (22 * 4096 + 4 * k128) * 4 * 256 * 2 * 2
    oss = written("gpt_oss")                                          # 18 sliding (128) + 18 full
    assert kv_cache_bytes(oss, 1, k128) == (18 * 128 + 18 * k128) * 8 * 64 * 2 * 2
