"""The model and serving options `memory` and `roofline decode` share: one vocabulary, one reading of them.

`--model NAME | --config config.json | --params N` names the model; `--batch`, `--context`, `--weights`,
`--kv-dtype` and `--mla-cache` describe how it is served. Both commands read them here, so a KV cache `memory`
counts is the one `roofline decode` reads per step (harness.memory.estimate.estimate_inference).
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.inputs import float_arg, int_arg
from harness.memory import inference
from harness.memory.presets import load_config_file, preset, presets
from harness.memory.shape import MemoryInputError, Model, bare_model

MAX_PARAMS = 1e15
MAX_COUNT = 100_000_000


def add_model(parser: Any) -> None:
    """--model, --config, --params: one of them names the model."""
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--model", help=f"a named model ({', '.join(sorted(presets()))})")
    src.add_argument("--config", metavar="PATH", help="an HF-style config.json")
    src.add_argument("--params", type=float_arg(1, MAX_PARAMS), metavar="N", help="a bare parameter count, e.g. 7e9")


def add_serving(parser: Any, weights_default: str) -> None:
    """--batch, --context, --weights, --kv-dtype, --mla-cache: how an inference is served."""
    parser.add_argument("--weights", choices=inference.WEIGHT_PRECISIONS, default=None,
                        help=f"the weights' format (default: {weights_default})")
    parser.add_argument("--kv-dtype", choices=tuple(inference.KV_DTYPES), default="bf16")
    parser.add_argument("--mla-cache", choices=inference.MLA_CACHES, default=inference.LATENT,
                        help="latent attention (DeepSeek): cache the latent as vLLM/SGLang do, or the decompressed "
                             "keys and values")
    parser.add_argument("--batch", type=int_arg(1, MAX_COUNT), default=1, help="inference batch")
    parser.add_argument("--context", type=int_arg(1, MAX_COUNT), default=4096,
                        help="inference context (tokens per sequence)")


def model_of(args: argparse.Namespace) -> Model:
    """The model the options name; MemoryInputError when none is named."""
    # `is not None`: an empty value (`--model=`) is a mistake to name, not an option left out.
    if args.model is not None:
        return preset(args.model)
    if args.config is not None:
        return load_config_file(args.config)
    if args.params is not None:
        return bare_model(args.params)
    raise MemoryInputError("name a model: --model NAME, --config config.json or --params 7e9")
