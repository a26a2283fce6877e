"""Inference memory: weights at a precision, the KV cache for batch x context (GQA-aware), prefill working set."""

from __future__ import annotations

from harness.memory.lora import nf4_bytes
from harness.memory.params import LINEAR, ParamTensor, param_tensors
from harness.memory.shape import BareModel, MemoryInputError, Model, ModelConfig

WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "int8", "int4", "nf4")
KV_DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
# Weight-only int4 (GPTQ / AWQ style): 4-bit codes with an fp16 scale and an fp16 zero point per group
# of 128 weights along the input dimension (group_size=128 is both projects' default).
INT4_GROUP = 128

DESCRIPTIONS = {
    "fp32": "fp32 weights",
    "bf16": "bf16 weights",
    "fp16": "fp16 weights",
    "int8": "int8 Linear weights with an fp32 scale per output row (LLM.int8 style); the rest 16-bit",
    "int4": "int4 Linear weights, fp16 scale + zero per 128 (GPTQ/AWQ style); the rest 16-bit",
    "nf4": "NF4 Linear weights with double quantization (~4.127 bits); the rest 16-bit",
}


def tensor_bytes(t: ParamTensor, precision: str) -> int:
    """Bytes of one weight tensor stored at `precision` (only Linear weights are quantized)."""
    if precision == "fp32":
        return 4 * t.numel
    if precision in ("bf16", "fp16") or t.kind != LINEAR:
        return 2 * t.numel
    rows = t.shape[0]
    if precision == "int8":
        return t.numel + 4 * rows
    if precision == "int4":
        return -(-t.numel // 2) + 4 * -(-t.numel // INT4_GROUP)
    if precision == "nf4":
        return nf4_bytes(t.numel)
    raise MemoryInputError(f"--weights {precision!r} is unknown; expected one of {', '.join(WEIGHT_PRECISIONS)}")


def inference_weight_bytes(model: Model, precision: str) -> int:
    """All weights at `precision`; a bare count is treated as all-Linear."""
    if precision not in WEIGHT_PRECISIONS:
        raise MemoryInputError(f"--weights {precision!r} is unknown; expected one of {', '.join(WEIGHT_PRECISIONS)}")
    if isinstance(model, BareModel):
        return tensor_bytes(ParamTensor("params", (model.params, 1), LINEAR), precision)
    return sum(tensor_bytes(t, precision) for t in param_tensors(model))


def kv_dtype_bytes(kv_dtype: str) -> int:
    """Bytes per cached K or V element."""
    if kv_dtype not in KV_DTYPES:
        raise MemoryInputError(f"--kv-dtype {kv_dtype!r} is unknown; expected one of {', '.join(KV_DTYPES)}")
    return KV_DTYPES[kv_dtype]


def kv_bytes_per_token(cfg: ModelConfig, kv_bytes: int = 2) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x bytes: Llama-2-7B in fp16 = 512 KiB."""
    return 2 * cfg.num_layers * cfg.num_kv_heads * cfg.head_dim * kv_bytes


def kv_cache_bytes(cfg: ModelConfig, batch: int, context: int, kv_bytes: int = 2) -> int:
    """The KV cache for `batch` sequences of `context` tokens."""
    if batch < 1 or context < 1:
        raise MemoryInputError("--batch and --context must be >= 1")
    return kv_bytes_per_token(cfg, kv_bytes) * batch * context


def kv_heads_per_gpu(cfg: ModelConfig, tp: int) -> int:
    """KV heads each tensor-parallel rank caches: an even split, but never below one whole head.

    With more ranks than KV heads each rank keeps (a replica of) one head: vLLM replicates KV heads when
    tensor_parallel_size > num_key_value_heads (vllm/model_executor/models/llama.py, LlamaAttention).
    """
    return max(1, -(-cfg.num_kv_heads // tp))


def kv_cache_bytes_per_gpu(cfg: ModelConfig, batch: int, context: int, kv_bytes: int, tp: int) -> int:
    """The KV cache one tensor-parallel rank holds."""
    per_head = kv_cache_bytes(cfg, batch, context, kv_bytes) // cfg.num_kv_heads
    return per_head * kv_heads_per_gpu(cfg, tp)


def prefill_bytes(cfg: ModelConfig, batch: int, prompt: int, act_bytes: int = 2, attention: str = "flash") -> int:
    """Working set of a prefill, one layer at a time: residual, norm output, Q, MLP intermediates, logits.

    An estimate, not an exact ledger: no tensor is kept for backward, so only one layer's transients
    and the last position's fp32 logits are alive at once.
    """
    h, f = cfg.hidden_size, cfg.intermediate_size
    mlp = (3 if cfg.mlp == "gated" else 2) * f
    per_token = (2 * h + cfg.q_dim + max(mlp, 2 * h)) * act_bytes
    scores = cfg.num_heads * prompt * act_bytes if attention == "eager" else 0
    return batch * prompt * (per_token + scores) + batch * cfg.vocab_size * 4
