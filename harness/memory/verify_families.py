"""Each architecture family against transformers' own class, on the CPU: parameters, their bytes, the KV cache.

For every family refenv reads (Llama, Qwen2, Qwen3, Mistral, Phi-3, Gemma-2, Gemma-3 with its vision tower,
Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V3, gpt-oss) a small config of the same structure (two to six layers,
small widths, the same layer types, experts, shared experts and latent attention) is read by the CLI's own
reader and built by transformers' class: saved and loaded again with `from_pretrained(dtype=bfloat16)`, so
the modules its class keeps in fp32 are kept as a real load keeps them. Its parameters are counted and their
bytes summed storage by storage; a prompt then runs through it and tokens are decoded one at a time past the
sliding windows, and the bytes of the cache's tensors (transformers' DynamicCache: sliding layers keep their
window, DeepSeek's the latent) are compared with harness/memory/inference.kv_cache_bytes. All exact.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import tempfile
from typing import Any

from harness.memory.hf_config import from_hf_config
from harness.memory.inference import inference_weight_bytes, kv_cache_bytes
from harness.memory.params import count_params
from harness.memory.shape import ModelConfig
from harness.memory.torch_traits import storage
from harness.schema.memory_document import ChecksSection, SizeCheck
from harness.schema.outcomes import FAIL, PASS

BATCH, PROMPT, DECODE = 2, 5, 6      # 11 tokens: past every window below
_DENSE = {"vocab_size": 96, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
_MOE = {**_DENSE, "moe_intermediate_size": 24}
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": {"model_type": "llama", **_DENSE, "tie_word_embeddings": False},
    "qwen2": {"model_type": "qwen2", **_DENSE, "tie_word_embeddings": True, "use_sliding_window": True,
              "sliding_window": 4, "max_window_layers": 2},
    "qwen3": {"model_type": "qwen3", **_DENSE, "head_dim": 12, "tie_word_embeddings": False},
    "mistral": {"model_type": "mistral", **_DENSE, "sliding_window": 6, "head_dim": 16},
    "phi3": {"model_type": "phi3", **_DENSE, "num_key_value_heads": 4, "sliding_window": 7,
             "pad_token_id": 0},
    "gemma2": {"model_type": "gemma2", **_DENSE, "head_dim": 16, "sliding_window": 4},
    "gemma3_text": {"model_type": "gemma3_text", **_DENSE, "num_hidden_layers": 6, "head_dim": 16,
                    "sliding_window": 5, "sliding_window_pattern": 3},
    "gemma3": {"model_type": "gemma3", "mm_tokens_per_image": 4,
               "text_config": {**_DENSE, "model_type": "gemma3_text", "head_dim": 16, "sliding_window": 5,
                               "sliding_window_pattern": 2},
               "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 16, "intermediate_size": 40,
                                 "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 28,
                                 "patch_size": 14, "vision_use_head": False}},
    "mixtral": {"model_type": "mixtral", **_DENSE, "num_local_experts": 4, "num_experts_per_tok": 2,
                "sliding_window": None},
    "qwen2_moe": {"model_type": "qwen2_moe", **_MOE, "num_experts": 4, "num_experts_per_tok": 2,
                  "shared_expert_intermediate_size": 40, "decoder_sparse_step": 2, "mlp_only_layers": [3]},
    "qwen3_moe": {"model_type": "qwen3_moe", **_MOE, "head_dim": 8, "num_experts": 6, "num_experts_per_tok": 2,
                  "mlp_only_layers": [0]},
    "deepseek_v3": {"model_type": "deepseek_v3", **_MOE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                    "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 2, "first_k_dense_replace": 1,
                    "n_group": 2, "topk_group": 1, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8,
                    "qk_nope_head_dim": 12, "v_head_dim": 10, "rope_scaling": None},
    "gpt_oss": {"model_type": "gpt_oss", **_DENSE, "head_dim": 8, "num_local_experts": 4, "num_experts_per_tok": 2,
                "sliding_window": 4},
}


def installed() -> bool:
    """Whether transformers can be imported (nothing is imported here)."""
    return importlib.util.find_spec("transformers") is not None


def _build(raw: dict[str, Any], dtype_name: str = "bf16") -> Any:
    """The family's own class from the config, saved and loaded again as a checkpoint is, in bf16 (or fp16)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.utils import logging

    hf_logging: Any = logging  # quiet: no per-load warnings or progress bars in the document's run
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    kwargs = {k: v for k, v in raw.items() if k != "model_type"}
    config = AutoConfig.for_model(raw["model_type"], **kwargs)
    auto: Any = AutoModelForImageTextToText if "vision_config" in raw else AutoModelForCausalLM
    dtype = torch.float16 if dtype_name == "fp16" else torch.bfloat16
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stderr(io.StringIO()):
        auto.from_config(config, dtype=dtype).save_pretrained(folder)
        return auto.from_pretrained(folder, dtype=dtype).eval()


def _parameters(model: Any) -> tuple[int, int]:
    """(parameters, bytes of their distinct storages: a tied head counted once)."""
    storages = {storage(p).data_ptr(): storage(p).nbytes() for p in model.parameters()}
    return sum(p.numel() for p in model.parameters()), sum(storages.values())


def _cache_bytes(model: Any, vocab: int) -> int:
    """A prompt, then one token at a time; the cache's tensors summed storage by storage."""
    import torch

    g = torch.Generator().manual_seed(3)
    cache: Any = None
    with torch.no_grad():
        for step in range(DECODE + 1):
            ids = torch.randint(0, vocab, (BATCH, PROMPT if step == 0 else 1), generator=g)
            out = model(input_ids=ids, use_cache=True, **({} if cache is None else {"cache": cache}))
            cache = out.get("cache") if out.get("cache") is not None else out.past_key_values
    tensors = [t for layer in cache.layers for t in (layer.keys, layer.values) if t is not None]
    return sum({storage(t).data_ptr(): storage(t).nbytes() for t in tensors}.values())


def family_checks(name: str, raw: dict[str, Any]) -> tuple[SizeCheck, ...]:
    """One family: parameter count and bytes, and (text models) the cache after a prompt and decoding."""
    cfg: ModelConfig = from_hf_config(raw, f"small-{name}", source=f"transformers {raw['model_type']} (small)")
    model = _build(raw)
    params, param_bytes = _parameters(model)
    predicted_params = count_params(cfg).total
    predicted_bytes = inference_weight_bytes(cfg, "bf16")
    ok = params == predicted_params and param_bytes == predicted_bytes
    checks = [SizeCheck(f"{name} ({type(model).__name__}): {predicted_params:,d} parameters in bf16",
                        predicted_bytes, param_bytes, "exact", PASS if ok else FAIL, params=params)]
    if "vision_config" not in raw:
        tokens = PROMPT + DECODE
        predicted = kv_cache_bytes(cfg, BATCH, tokens, 2)
        measured = _cache_bytes(model, cfg.vocab_size)
        checks.append(SizeCheck(f"{name}: KV cache, batch {BATCH} x {tokens} tokens (bf16)", predicted, measured,
                                "exact", PASS if predicted == measured else FAIL))
    if cfg.keep_fp32_fp16:  # the modules its class keeps in fp32 under fp16 only (gpt-oss's norms)
        params, param_bytes = _parameters(_build(raw, "fp16"))
        predicted_bytes = inference_weight_bytes(cfg, "fp16")
        checks.append(SizeCheck(f"{name}: parameters loaded in fp16 ({', '.join(sorted(cfg.keep_fp32_fp16))} in fp32)",
                                predicted_bytes, param_bytes, "exact",
                                PASS if param_bytes == predicted_bytes and params == predicted_params else FAIL,
                                params=params))
    return tuple(checks)


def run_family_verification() -> ChecksSection:
    """Every family's checks; a family that cannot be built is a failed check with its error, the rest still run."""
    import torch

    checks: list[SizeCheck] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is faster, and on a busy machine several times so
    try:
        for name, raw in FAMILIES.items():
            try:
                checks += family_checks(name, raw)
            except Exception as exc:  # recorded per family; the others still run
                checks.append(SizeCheck(f"{name}: {type(exc).__name__}: {str(exc)[:200]}", 0, 0, "exact", FAIL))
    finally:
        torch.set_num_threads(threads)
    return ChecksSection(PASS if all(c.status == PASS for c in checks) else FAIL, tuple(checks))
