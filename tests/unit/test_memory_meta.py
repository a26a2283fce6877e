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

    hf_logging.set_verbosity_error()
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "architectures")}
    config = AutoConfig.for_model(raw["model_type"], **kwargs)
    auto = AutoModelForImageTextToText if "vision_config" in raw else AutoModelForCausalLM
    with torch.device("meta"):
        return auto.from_config(config)


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
