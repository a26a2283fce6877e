"""A decoder layer as plain data: its attention kind and its MLP kind, each with the sizes that count.

A model is a stack of these (harness/memory/shape.py, `ModelConfig.layer`); every ledger is a sum over them.
Attention is `full` (every past token cached), `sliding` (at most `window` tokens cached: Mistral, Gemma-2/3's
local layers, gpt-oss's banded layers) or `mla` (DeepSeek's multi-head latent attention: one compressed latent
and one shared rotary key per token, arXiv 2405.04434 sec. 2.1). The MLP is `dense` or `moe` (routed experts,
of which `top_k` run per token, and optional shared experts that run for every token).
"""

from __future__ import annotations

from dataclasses import dataclass

FULL = "full"
SLIDING = "sliding"
MLA = "mla"
ATTENTION_KINDS = (FULL, SLIDING, MLA)
DENSE = "dense"
MOE = "moe"


@dataclass(frozen=True)
class Attention:
    """One layer's attention: its kind and widths (MLA's `head_dim` is the query/key head: nope + rope)."""

    kind: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int = 0               # sliding: the most past tokens the layer attends to and caches
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False         # Qwen3, Gemma-3: an RMSNorm over head_dim on Q and on K
    sinks: bool = False           # gpt-oss: one learned attention-sink logit per head
    q_lora_rank: int = 0          # MLA: Q through a rank-r bottleneck (0: one q_proj)
    kv_lora_rank: int = 0         # MLA: the cached latent's width
    rope_head_dim: int = 0        # MLA: the rotary part of each query/key head, cached once per token

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the K projection (GQA: kv_heads x head_dim)."""
        return self.num_kv_heads * self.head_dim


@dataclass(frozen=True)
class Mlp:
    """One layer's MLP: dense of `intermediate_size`, or MoE with `experts` routed experts of that width each."""

    kind: str
    intermediate_size: int
    experts: int = 0
    top_k: int = 0
    shared_size: int = 0          # the shared expert's width (DeepSeek: n_shared_experts x moe_intermediate_size)
    shared_gate: bool = False     # Qwen2-MoE: a sigmoid gate (hidden -> 1) on the shared expert
    router_bias: bool = False     # gpt-oss: the router Linear has a bias
    expert_bias: bool = False     # gpt-oss: each expert's projections have biases


@dataclass(frozen=True)
class Layer:
    """A decoder layer: attention, MLP, and how many hidden-size norms it has (Gemma-2/3's sandwich: 4)."""

    attention: Attention
    mlp: Mlp
    norms: int = 2

    @property
    def label(self) -> str:
        """'sliding(1024) + MoE 256x2048 + shared' and the like: what sets this layer apart."""
        a = self.attention
        att = f"sliding({a.window})" if a.kind == SLIDING else ("MLA" if a.kind == MLA else "full")
        m = self.mlp
        if m.kind == MOE:
            mlp = f"MoE {m.experts}x{m.intermediate_size} top-{m.top_k}"
            mlp += f" + shared {m.shared_size}" if m.shared_size else ""
        else:
            mlp = f"dense {m.intermediate_size}"
        return f"{att} attention, {mlp}"


@dataclass(frozen=True)
class VisionTower:
    """A SigLIP vision encoder (Gemma-3's `vision_config`) and the projector into the text model's width.

    Its tensors follow transformers' SiglipVisionTransformer (patch and position embeddings, pre-norm encoder
    layers with biases everywhere, a post-LayerNorm, the attention-pooling head when `vision_use_head`) and
    Gemma3MultiModalProjector (one projection matrix and an RMSNorm over the vision width).
    """

    hidden_size: int
    intermediate_size: int
    num_layers: int
    patch_size: int
    image_size: int
    num_channels: int = 3
    use_head: bool = False
    projector: str = "gemma3"

    @property
    def patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2
