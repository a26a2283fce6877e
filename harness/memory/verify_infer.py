"""The KV cache measured: grown token by token as transformers' DynamicCache grows it, counted by storage.

For every layer of a probe model the K and V of each new token come from that layer's own k_proj and
v_proj and are appended with torch.cat along the sequence (DynamicCache.update), prompt first, then one
token at a time up to the context; the cache's bytes are then summed storage by storage and compared with
harness/memory/inference.kv_cache_bytes, exactly.
"""

from __future__ import annotations

from typing import Any

from harness.memory.cases import CPU_SIZES
from harness.memory.inference import KV_DTYPES, kv_cache_bytes
from harness.schema.memory_document import ChecksSection, SizeCheck
from harness.schema.outcomes import FAIL, PASS

# (probe size, batch, prompt tokens, context, KV dtype)
CASES = (("small-llama", 2, 8, 24, "bf16"), ("medium-gpt", 1, 4, 20, "fp32"), ("tiny-moe", 3, 1, 9, "bf16"))


def _grow(size: str, batch: int, prompt: int, context: int, kv_dtype: str) -> int:
    import torch

    from harness.memory.probe_model import build_probe

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[kv_dtype]
    cfg = CPU_SIZES[size][0]
    model = build_probe(cfg, attention="sdpa", dtype=dtype)
    cache: list[list[Any]] = [[None, None] for _ in model.layers]
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        step = prompt
        done = 0
        while done < context:
            ids = torch.randint(0, cfg.vocab_size, (batch, step), generator=g)
            x = model.embed_tokens(ids)
            for layer, kv in zip(model.layers, cache):  # noqa: B905  (strict= is 3.10+)
                y = layer.input_norm(x)
                new = [proj(y).view(batch, step, cfg.num_kv_heads, cfg.head_dim).transpose(1, 2)
                       for proj in (layer.attn.k_proj, layer.attn.v_proj)]
                for i in (0, 1):  # DynamicCache.update: torch.cat([cached, new], dim=-2)
                    kv[i] = new[i] if kv[i] is None else torch.cat([kv[i], new[i]], dim=-2)
            done += step
            step = 1
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for kv in cache for t in kv}
    return sum(storages.values())


def run_kv_verification() -> ChecksSection:
    """Each case's measured cache against the prediction; exact."""
    checks = []
    for size, batch, prompt, context, kv_dtype in CASES:
        cfg = CPU_SIZES[size][0]
        predicted = kv_cache_bytes(cfg, batch, context, KV_DTYPES[kv_dtype])
        measured = _grow(size, batch, prompt, context, kv_dtype)
        checks.append(SizeCheck(f"{size} batch {batch} prompt {prompt} -> context {context} ({kv_dtype})",
                                predicted, measured, "exact", PASS if predicted == measured else FAIL))
    return ChecksSection(PASS if all(c.status == PASS for c in checks) else FAIL, tuple(checks))
