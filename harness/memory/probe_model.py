"""A small real transformer in torch for the verification: embedding, blocks of attention + MLP + norms, head.

Its parameter names and shapes are those `params.param_tensors` predicts, so a wrong count shows by name.
torch is imported inside `build_probe` only; the classes are made once, on first use.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, NamedTuple, cast

from harness.memory.shape import ModelConfig


class _Classes(NamedTuple):
    """The probe's module classes, defined once torch is imported."""

    ProbeLM: Any
    LoraLinear: Any


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def _classes() -> _Classes:
    import torch
    from torch import nn
    from torch.nn import functional as F
    from torch.utils.checkpoint import checkpoint

    class RMSNorm(nn.Module):
        """As HF Llama computes it (modeling_llama.py LlamaRMSNorm): in fp32, cast back, times the weight."""

        def __init__(self, h: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x: Any) -> Any:
            dtype = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(dtype)

    def rotate_half(x: Any) -> Any:
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Expert(nn.Module):
        def __init__(self, cfg: ModelConfig, linear: Any) -> None:
            super().__init__()
            h, f, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
            if cfg.mlp == "gated":
                self.gate_proj = linear(h, f, bias)
            self.up_proj = linear(h, f, bias)
            self.down_proj = linear(f, h, bias)
            self.gated = cfg.mlp == "gated"

        def forward(self, y: Any) -> Any:
            if self.gated:
                return self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))
            return self.down_proj(F.gelu(self.up_proj(y)))

    class SparseMoE(nn.Module):
        """Top-k routing as Mixtral's block does it: fp32 softmax, top-k, renormalise, gather, index_add."""

        def __init__(self, cfg: ModelConfig, linear: Any) -> None:
            super().__init__()
            self.k = cfg.experts_per_token
            self.router = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)
            self.experts = nn.ModuleList([Expert(cfg, linear) for _ in range(cfg.num_experts)])

        def forward(self, y: Any) -> Any:
            shape = y.shape
            y = y.reshape(-1, shape[-1])
            probs = torch.softmax(self.router(y).float(), dim=-1)
            weights, chosen = probs.topk(self.k, dim=-1)
            weights = (weights / weights.sum(dim=-1, keepdim=True)).to(y.dtype)
            out = torch.zeros_like(y)
            for e, expert in enumerate(self.experts):
                tok, slot = torch.where(chosen == e)
                out = out.index_add(0, tok, expert(y[tok]) * weights[tok, slot, None])
            return out.reshape(shape)

    class LoraLinear(nn.Linear):
        """A frozen Linear plus adapters B(A(x)), which run in their own dtype as PEFT's do."""

        def __init__(self, n_in: int, n_out: int, bias: bool, rank: int) -> None:
            super().__init__(n_in, n_out, bias=bias)
            self.lora_A = nn.Linear(n_in, rank, bias=False)
            self.lora_B = nn.Linear(rank, n_out, bias=False)
            self.scaling = 2.0
            self.weight.requires_grad_(False)
            if self.bias is not None:
                self.bias.requires_grad_(False)

        def forward(self, x: Any) -> Any:
            out = F.linear(x, self.weight, self.bias)
            a = self.lora_A.weight
            return out + (self.lora_B(self.lora_A(x.to(a.dtype))) * self.scaling).to(out.dtype)

    class Block(nn.Module):
        def __init__(self, cfg: ModelConfig, attention: str, rank: int) -> None:
            super().__init__()
            h, d = cfg.hidden_size, cfg.head_dim
            self.cfg, self.attention = cfg, attention

            def linear(n_in: int, n_out: int, bias: bool) -> Any:
                return LoraLinear(n_in, n_out, bias, rank) if rank else nn.Linear(n_in, n_out, bias=bias)

            def norm() -> Any:
                return nn.LayerNorm(h) if cfg.norm == "layernorm" else RMSNorm(h)

            self.input_norm = norm()
            self.attn = nn.Module()
            self.attn.q_proj = linear(h, cfg.num_heads * d, cfg.qkv_bias)
            self.attn.k_proj = linear(h, cfg.num_kv_heads * d, cfg.qkv_bias)
            self.attn.v_proj = linear(h, cfg.num_kv_heads * d, cfg.qkv_bias)
            self.attn.o_proj = linear(cfg.num_heads * d, h, cfg.o_bias)
            self.post_norm = norm()
            self.mlp = SparseMoE(cfg, linear) if cfg.num_experts else Expert(cfg, linear)
            self.expand_kv = False

        def _heads(self, t: Any, n: int) -> Any:
            b, s, _ = t.shape
            t = t.view(b, s, n, self.cfg.head_dim).transpose(1, 2)
            return t

        def _repeat(self, t: Any) -> Any:
            """GQA by hand: each K/V head repeated for its group of query heads (a copy)."""
            b, n, s, d = t.shape
            group = self.cfg.num_heads // n
            return t[:, :, None].expand(b, n, group, s, d).reshape(b, n * group, s, d) if group > 1 else t

        def forward(self, x: Any, mask: Any, rope: Any) -> Any:
            cfg, a = self.cfg, cast(Any, self.attn)
            b, s, _ = x.shape
            y = self.input_norm(x)
            q = self._heads(a.q_proj(y), cfg.num_heads)
            k = self._heads(a.k_proj(y), cfg.num_kv_heads)
            v = self._heads(a.v_proj(y), cfg.num_kv_heads)
            if rope is not None:  # HF's apply_rotary_pos_emb: q * cos + rotate_half(q) * sin
                cos, sin = rope
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
            if self.attention == "eager":
                k, v = self._repeat(k), self._repeat(v)
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(cfg.head_dim))
                # HF's eager_attention_forward: the softmax in fp32, cast back for the product with V.
                probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1, dtype=torch.float32)
                o = probs.to(q.dtype) @ v
            elif self.expand_kv:
                o = F.scaled_dot_product_attention(q, self._repeat(k), self._repeat(v), is_causal=True)
            else:  # K/V stay at kv_heads, as flash attention keeps them
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=cfg.num_kv_heads < cfg.num_heads)
            x = x + a.o_proj(o.transpose(1, 2).reshape(b, s, cfg.num_heads * cfg.head_dim))
            return x + self.mlp(self.post_norm(x))

    def rotary(d: int, b: int, s: int, x: Any) -> tuple[Any, Any]:
        """cos and sin of shape (b, 1, s, d) as HF's LlamaRotaryEmbedding makes them (base 10000)."""
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=x.device).float() / d))
        freqs = torch.arange(s, device=x.device).float()[None].expand(b, s)[..., None] * inv
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]

    class ProbeLM(nn.Module):
        def __init__(self, cfg: ModelConfig, attention: str, rank: int) -> None:
            super().__init__()
            self.cfg, self.attention, self.checkpointing = cfg, attention, False
            self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
            if cfg.max_position_embeddings:
                self.embed_positions = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
            self.layers = nn.ModuleList([Block(cfg, attention, rank) for _ in range(cfg.num_layers)])
            self.final_norm = nn.LayerNorm(cfg.hidden_size) if cfg.norm == "layernorm" else RMSNorm(cfg.hidden_size)
            if not cfg.tie_word_embeddings:
                self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

        def forward(self, ids: Any, targets: Any) -> Any:
            b, s = ids.shape
            x = self.embed_tokens(ids)
            if self.cfg.max_position_embeddings:
                x = x + self.embed_positions(torch.arange(s, device=ids.device))
            mask = None
            if self.attention == "eager":
                mask = torch.ones(s, s, dtype=torch.bool, device=ids.device).triu(1)
            rope = None if self.cfg.max_position_embeddings else rotary(self.cfg.head_dim, b, s, x)
            for layer in self.layers:
                if self.checkpointing:  # torch.utils.checkpoint keeps the block's inputs and recomputes the rest
                    x = checkpoint(layer, x, mask, rope, use_reentrant=False)
                else:
                    x = layer(x, mask, rope)
            x = self.final_norm(x)
            head = self.embed_tokens.weight if self.cfg.tie_word_embeddings else self.lm_head.weight
            logits = F.linear(x, head)
            return F.cross_entropy(logits.view(b * s, -1).float(), targets.view(-1))  # HF: the loss in fp32

    return _Classes(ProbeLM, LoraLinear)


def build_probe(cfg: ModelConfig, *, attention: str, dtype: Any, lora_rank: int = 0, seed: int = 0,
                expand_kv: bool = False, checkpointing: bool = False) -> Any:
    """The probe on the CPU in `dtype`; with LoRA the base is frozen in `dtype` and the adapters stay fp32."""
    import torch

    torch.manual_seed(seed)
    classes = _classes()
    model = classes.ProbeLM(cfg, attention, lora_rank).to(dtype=dtype)
    model.checkpointing = checkpointing
    for layer in model.layers:
        layer.expand_kv = expand_kv
    if lora_rank:
        for p in (model.embed_tokens, getattr(model, "embed_positions", None), getattr(model, "lm_head", None)):
            if p is not None:
                p.requires_grad_(False)
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm) or type(module).__name__ == "RMSNorm":
                module.requires_grad_(False)
            if isinstance(module, classes.LoraLinear):
                module.lora_A.float()
                module.lora_B.float()
        model.final_norm.requires_grad_(False)
    return model


def build_peft_probe(cfg: ModelConfig, *, attention: str, dtype: Any, rank: int, targets: tuple[str, ...],
                     seed: int = 0) -> Any:
    """The probe with LoRA made by PEFT itself: `inject_adapter_in_model` on every targeted Linear, the base
    frozen by PEFT, the adapters in fp32 as get_peft_model's autocast_adapter_dtype=True leaves them."""
    import torch
    from peft import LoraConfig, inject_adapter_in_model

    model = build_probe(cfg, attention=attention, dtype=dtype, seed=seed)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=list(targets), lora_dropout=0.0)
    model = inject_adapter_in_model(config, model)
    for name, param in model.named_parameters():
        if ".lora_" in name:
            param.data = param.data.to(torch.float32)
    return model
