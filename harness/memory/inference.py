"""Inference memory: weights in a format, the KV cache layer by layer (GQA, sliding windows, MLA), prefill.

The KV cache of a layer is what it keeps per past token, times the tokens it keeps: full attention keeps
every token; a sliding-window layer at most its window (transformers' DynamicSlidingWindowLayer and vLLM's
sliding-window blocks: measured by `memory --verify`); MLA keeps one latent of kv_lora_rank and one rotary key
of qk_rope_head_dim per token, shared by all heads, as vLLM and SGLang cache it (and transformers 5, measured),
where an engine that caches the decompressed keys and values (transformers 4's DeepseekV3Attention) keeps
heads x (qk_nope + qk_rope + v_head_dim) per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import weight_formats as wf
from harness.memory.layers import MLA, MOE, SLIDING, Layer
from harness.memory.params import LINEAR, ParamTensor, param_tensors, root_tensors, tensors_of
from harness.memory.shape import BareModel, MemoryInputError, Model, ModelConfig, layer_groups

WEIGHT_PRECISIONS = wf.NAMES
KV_DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
LATENT = "latent"
DECOMPRESSED = "decompressed"
MLA_CACHES = (LATENT, DECOMPRESSED)


def weight_format(model: Model, precision: str | None) -> wf.WeightFormat:
    """The format `--weights` names, or (none named) the checkpoint's own from its quantization_config, or bf16."""
    if precision is not None:
        return wf.weight_format(precision)
    stored = model.quantization if isinstance(model, ModelConfig) else None
    return stored or wf.FORMATS["bf16"]


def tensor_bytes(t: ParamTensor, precision: str | wf.WeightFormat, keep_fp32: frozenset[str] = frozenset()) -> int:
    """Bytes of one weight tensor stored in a format: a Linear weight of a part the format quantizes in its
    layout, anything else at 16 bits (or fp32 where the model class keeps that kind in fp32)."""
    fmt = precision if isinstance(precision, wf.WeightFormat) else wf.weight_format(precision)
    if not fmt.quantized and fmt.bits != 16:
        return t.numel * fmt.bits // 8
    if t.kind == LINEAR and fmt.quantized and (fmt.quantizes(t.part) or not t.part):
        return wf.quantized_bytes(fmt, t.shape)
    return (4 if t.kind in keep_fp32 else 2) * t.numel


def kept_fp32(model: ModelConfig, fmt: wf.WeightFormat) -> frozenset[str]:
    """The tensor kinds a model loaded in this format's 16-bit dtype keeps in fp32 (transformers' from_pretrained:
    the strict list under fp16 and bf16, the other under fp16 only; modeling_utils.py, dtype_plan)."""
    return model.keep_fp32 | (model.keep_fp32_fp16 if fmt.name == "fp16" else frozenset())


def inference_weight_bytes(model: Model, precision: str | wf.WeightFormat | None) -> int:
    """All weights in a format (None: the checkpoint's own); a bare count is treated as all-Linear."""
    fmt = precision if isinstance(precision, wf.WeightFormat) else weight_format(model, precision)
    if isinstance(model, BareModel):
        return tensor_bytes(ParamTensor("params", (model.params, 1), LINEAR), fmt)
    keep = kept_fp32(model, fmt)
    return sum(tensor_bytes(t, fmt, keep) for t in param_tensors(model))


def kv_dtype_bytes(kv_dtype: str) -> int:
    """Bytes per cached K or V element."""
    if kv_dtype not in KV_DTYPES:
        raise MemoryInputError(f"--kv-dtype {kv_dtype!r} is unknown; expected one of {', '.join(KV_DTYPES)}")
    return KV_DTYPES[kv_dtype]


def layer_token_bytes(layer: Layer, kv_bytes: int, mla: str = LATENT) -> int:
    """What one layer caches per token of one sequence."""
    a = layer.attention
    if a.kind == MLA:
        if mla == LATENT:
            return (a.kv_lora_rank + a.rope_head_dim) * kv_bytes
        return a.num_heads * (a.head_dim + a.v_head_dim) * kv_bytes
    return a.num_kv_heads * (a.head_dim + a.v_head_dim) * kv_bytes


def tokens_held(layer: Layer, context: int) -> int:
    """Tokens a layer keeps of a sequence of `context`: all of them, or at most its window."""
    return min(context, layer.attention.window) if layer.attention.kind == SLIDING else context


@dataclass(frozen=True)
class KvPart:
    """The cache of the layers of one kind: how many, tokens each keeps, bytes per token and in all."""

    label: str
    layers: int
    tokens: int
    bytes_per_token: int      # per layer and sequence, on one GPU
    bytes: int                # all these layers, the whole batch, on one GPU


def _label(layer: Layer, mla: str) -> str:
    a = layer.attention
    if a.kind == MLA:
        return (f"MLA latent ({a.kv_lora_rank} + rope {a.rope_head_dim})" if mla == LATENT
                else f"MLA decompressed K and V ({a.num_heads} heads x {a.head_dim} + {a.v_head_dim})")
    kind = f"sliding window {a.window}" if a.kind == SLIDING else "full attention"
    return f"{kind} ({a.num_kv_heads} KV heads x {a.head_dim})"


def kv_heads_per_gpu(layer: Layer, tp: int) -> int:
    """KV heads each tensor-parallel rank caches: an even split, but never below one whole head.

    With more ranks than KV heads each rank keeps (a replica of) one head: vLLM replicates KV heads when
    tensor_parallel_size > num_key_value_heads (vllm/model_executor/models/llama.py, LlamaAttention).
    """
    return max(1, -(-layer.attention.num_kv_heads // tp))


def kv_parts(cfg: ModelConfig, batch: int, context: int, kv_bytes: int = 2, tp: int = 1,
             mla: str = LATENT) -> tuple[KvPart, ...]:
    """The cache by kind of layer, per GPU over `tp` tensor-parallel ranks; MLA's latent is whole on each rank
    (one latent serves every head, so vLLM keeps it on every rank)."""
    if batch < 1 or context < 1:
        raise MemoryInputError("--batch and --context must be >= 1")
    if mla not in MLA_CACHES:
        raise MemoryInputError(f"--mla-cache {mla!r} is unknown; expected one of {', '.join(MLA_CACHES)}")
    merged: dict[str, list[int]] = {}
    for layer, n in layer_groups(cfg):
        per_token = layer_token_bytes(layer, kv_bytes, mla)
        if layer.attention.kind != MLA or mla == DECOMPRESSED:
            heads = layer.attention.num_kv_heads if layer.attention.kind != MLA else layer.attention.num_heads
            per_token = per_token // heads * (max(1, -(-heads // tp)))
        tokens = tokens_held(layer, context)
        entry = merged.setdefault(_label(layer, mla), [0, tokens, per_token, 0])
        entry[0] += n
        entry[3] += n * tokens * per_token * batch
    return tuple(KvPart(label, n, tokens, per, total) for label, (n, tokens, per, total) in merged.items())


def kv_bytes_per_token(cfg: ModelConfig, kv_bytes: int = 2, mla: str = LATENT) -> int:
    """What all layers cache per token while every layer still keeps every token: Llama-2-7B in fp16 = 512 KiB."""
    return sum(n * layer_token_bytes(layer, kv_bytes, mla) for layer, n in layer_groups(cfg))


def kv_cache_bytes(cfg: ModelConfig, batch: int, context: int, kv_bytes: int = 2, mla: str = LATENT) -> int:
    """The KV cache for `batch` sequences of `context` tokens, every layer holding what its kind keeps."""
    return sum(p.bytes for p in kv_parts(cfg, batch, context, kv_bytes, 1, mla))


def kv_cache_bytes_per_gpu(cfg: ModelConfig, batch: int, context: int, kv_bytes: int, tp: int,
                           mla: str = LATENT) -> int:
    """The KV cache one tensor-parallel rank holds."""
    return sum(p.bytes for p in kv_parts(cfg, batch, context, kv_bytes, tp, mla))


def prefill_bytes(cfg: ModelConfig, batch: int, prompt: int, act_bytes: int = 2, attention: str = "flash") -> int:
    """Working set of a prefill, one layer at a time: residual, norm output, Q, MLP intermediates, logits.

    An estimate, not an exact ledger: no tensor is kept for backward, so only one layer's transients
    and the last position's fp32 logits are alive at once (the widest layer's, for a mixed stack).
    """
    h = cfg.hidden_size
    widest = 0
    for layer, _ in layer_groups(cfg):
        m, a = layer.mlp, layer.attention
        per = 3 if cfg.mlp == "gated" else 2
        mlp = per * m.intermediate_size * (m.top_k if m.kind == MOE else 1) + per * m.shared_size
        per_token = (2 * h + a.q_dim + max(mlp, 2 * h)) * act_bytes
        scores = a.num_heads * min(prompt, a.window or prompt) * act_bytes if attention == "eager" else 0
        widest = max(widest, per_token + scores)
    return batch * prompt * widest + batch * cfg.vocab_size * 4


def experts_touched(experts: int, top_k: int, tokens: int) -> float:
    """Distinct experts a decode step of `tokens` tokens reaches, each routed to top_k of E at random:
    E x (1 - (1 - k/E)^tokens), the expectation under uniform routing (one token: exactly k)."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def decode_weight_bytes(model: ModelConfig, fmt: wf.WeightFormat, tokens: int) -> float:
    """Weight bytes one decode step reads: every weight but the routed experts, and of those the ones its
    tokens reach (uniform routing); a dense model reads all of them."""
    total = 0.0
    for layer, n in layer_groups(model):
        for t in tensors_of(model, layer, 0):
            size = float(tensor_bytes(t, fmt, kept_fp32(model, fmt)) * n)
            if t.part == wf.EXPERTS:
                size *= experts_touched(layer.mlp.experts, layer.mlp.top_k, tokens) / layer.mlp.experts
            total += size
    return total + sum(tensor_bytes(t, fmt, kept_fp32(model, fmt)) for t in root_tensors(model))


def attention_flops(model: ModelConfig, batch: int, context: int) -> float:
    """A decode step's attention over its cache: q.k and p.v, a multiply-add per head dimension per query head
    and cached token the layer keeps (a window for sliding layers)."""
    return sum(2.0 * n * layer.attention.num_heads * (layer.attention.head_dim + layer.attention.v_head_dim)
               * tokens_held(layer, context) * batch for layer, n in layer_groups(model))
