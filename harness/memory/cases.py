"""The verification cases: probe sizes and regimes for the CPU (tiny, ~1 s) and for a GPU (tens of MB)."""

from __future__ import annotations

import importlib.util

from harness.memory.probe_predict import PROBE_REGIMES, ProbeCase
from harness.memory.shape import ModelConfig, validate
from harness.memory.torch_traits import TorchTraits


def _gpt(name: str, vocab: int, h: int, layers: int, heads: int, kv: int, f: int, positions: int,
         tied: bool) -> ModelConfig:
    """GPT-2-like: LayerNorm with bias, GeLU MLP, biases on every Linear, learned positions."""
    return validate(ModelConfig(name=name, vocab_size=vocab, hidden_size=h, num_layers=layers, num_heads=heads,
                                num_kv_heads=kv, intermediate_size=f, head_dim=h // heads, tie_word_embeddings=tied,
                                mlp="gelu", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True,
                                max_position_embeddings=positions, source="refenv probe"))


def _llama(name: str, vocab: int, h: int, layers: int, heads: int, kv: int, f: int, experts: int = 0,
           top_k: int = 0) -> ModelConfig:
    """Llama-like: RMSNorm, SwiGLU, GQA, rotary, no biases, untied head; with experts, Mixtral-like MoE."""
    return validate(ModelConfig(name=name, vocab_size=vocab, hidden_size=h, num_layers=layers, num_heads=heads,
                                num_kv_heads=kv, intermediate_size=f, head_dim=h // heads, tie_word_embeddings=False,
                                num_experts=experts, experts_per_token=top_k, source="refenv probe"))


CPU_SIZES = {
    "tiny-gpt": (_gpt("tiny-gpt", 256, 32, 1, 2, 2, 128, 32, True), 2, 16),
    "small-llama": (_llama("small-llama", 320, 64, 2, 4, 2, 160), 2, 32),
    "medium-gpt": (_gpt("medium-gpt", 512, 96, 3, 6, 3, 384, 64, False), 2, 48),
    "tiny-moe": (_llama("tiny-moe", 256, 64, 2, 4, 2, 96, experts=4, top_k=2), 2, 32),
}
GPU_SIZES = {
    "gpu-gpt": (_gpt("gpu-gpt", 8192, 512, 4, 8, 8, 2048, 512, True), 4, 512),
    "gpu-llama": (_llama("gpu-llama", 16384, 1024, 4, 16, 4, 2816), 2, 1024),
    "gpu-wide": (_llama("gpu-wide", 32000, 2048, 2, 16, 8, 5632), 2, 1024),
    "gpu-moe": (_llama("gpu-moe", 16384, 1024, 2, 16, 4, 1408, experts=8, top_k=2), 2, 1024),
}
# (size, regime, attention): every size and every required regime at least once, both attentions.
_QUICK = {
    "cpu": (("tiny-gpt", "fp32-adamw", "eager"), ("tiny-gpt", "sgd-momentum", "sdpa"),
            ("small-llama", "bf16-adamw", "sdpa"), ("small-llama", "mixed-adamw", "eager"),
            ("small-llama", "lora", "sdpa"), ("medium-gpt", "mixed-adamw", "sdpa"),
            ("medium-gpt", "lora", "eager"), ("medium-gpt", "fp32-adamw", "sdpa"),
            ("tiny-moe", "mixed-adamw", "sdpa"), ("medium-gpt", "amp-adamw", "sdpa")),
    "cuda": (("gpu-gpt", "fp32-adamw", "eager"), ("gpu-gpt", "sgd-momentum", "sdpa"), ("gpu-gpt", "lora", "eager"),
             ("gpu-llama", "bf16-adamw", "sdpa"), ("gpu-llama", "mixed-adamw", "eager"),
             ("gpu-llama", "lora", "sdpa"), ("gpu-wide", "mixed-adamw", "sdpa"),
             ("gpu-wide", "fp32-adamw", "sdpa"), ("gpu-moe", "bf16-adamw", "sdpa"), ("gpu-llama", "amp-adamw", "sdpa")),
}


# Full activation checkpointing (torch.utils.checkpoint on every block), in the quick and the full set.
_CHECKPOINTED = {
    "cpu": (("small-llama", "mixed-adamw", "sdpa"), ("tiny-gpt", "fp32-adamw", "eager")),
    "cuda": (("gpu-llama", "bf16-adamw", "sdpa"), ("gpu-gpt", "fp32-adamw", "eager")),
}


def peft_installed() -> bool:
    """Whether PEFT can be imported (the peft-lora cases run only then); nothing is imported here."""
    return importlib.util.find_spec("peft") is not None


def cases(device: str, quick: bool = True, traits: TorchTraits | None = None) -> tuple[ProbeCase, ...]:
    """The quick set (each size and regime once) or the full product of sizes, regimes and attentions, for a
    torch with these `traits` (default: today's); a torch without SDPA (before 2.0) runs the eager cases only."""
    traits = traits or TorchTraits()
    sizes = GPU_SIZES if device == "cuda" else CPU_SIZES
    if quick:
        triples: tuple[tuple[str, str, str], ...] = _QUICK["cuda" if device == "cuda" else "cpu"]
    else:
        # LoRA is not run on the MoE sizes: the probe's router is a plain Linear that would train.
        triples = tuple((s, r, a) for s in sizes for r in PROBE_REGIMES for a in ("eager", "sdpa")
                        if not (r.endswith("lora") and sizes[s][0].num_experts))
    if device == "cuda" or not peft_installed():
        triples = tuple(t for t in triples if t[1] != "peft-lora")
    elif quick:
        triples += (("small-llama", "peft-lora", "sdpa"), ("medium-gpt", "peft-lora", "eager"))
    checkpointed = _CHECKPOINTED["cuda" if device == "cuda" else "cpu"]
    plan = [(*t, "none") for t in triples] + [(*t, "full") for t in checkpointed]
    if not traits.sdpa:
        plan = [p for p in plan if p[2] != "sdpa"]
    out = []
    for size, regime, attention, ckpt in plan:
        cfg, batch, seq = sizes[size]
        name = f"{size}/{regime}/{attention}" + ("/checkpointed" if ckpt == "full" else "")
        out.append(ProbeCase(name=name, cfg=cfg, regime=regime, attention=attention, micro_batch=batch,
                             seq_len=seq, checkpointing=ckpt, traits=traits))
    return tuple(out)
