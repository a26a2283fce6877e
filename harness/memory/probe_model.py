"""A small real transformer in torch for the verification: embedding, blocks of attention + MLP + norms, head.

Its parameter names and shapes are those `params.param_tensors` predicts, so a wrong count shows by name.
torch is imported inside `build_probe` only; the classes are made once, on first use.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, cast

from harness.memory.model import ModelConfig


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def _classes() -> dict[str, Any]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class RMSNorm(nn.Module):
        """x * rsqrt(mean(x^2) + eps) * weight, written out so what autograd keeps is known op by op."""

        def __init__(self, h: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x: Any) -> Any:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

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
            self.mlp = nn.Module()
            if cfg.mlp == "gated":
                self.mlp.gate_proj = linear(h, cfg.intermediate_size, cfg.mlp_bias)
            self.mlp.up_proj = linear(h, cfg.intermediate_size, cfg.mlp_bias)
            self.mlp.down_proj = linear(cfg.intermediate_size, h, cfg.mlp_bias)

        def _heads(self, t: Any, n: int) -> Any:
            b, s, _ = t.shape
            t = t.view(b, s, n, self.cfg.head_dim).transpose(1, 2)
            group = self.cfg.num_heads // n
            if group > 1:  # GQA: repeat each K/V head for its group of query heads
                t = t[:, :, None].expand(b, n, group, s, self.cfg.head_dim).reshape(b, n * group, s, -1)
            return t

        def forward(self, x: Any, mask: Any) -> Any:
            cfg, a = self.cfg, cast(Any, self.attn)
            b, s, _ = x.shape
            y = self.input_norm(x)
            q = self._heads(a.q_proj(y), cfg.num_heads)
            k = self._heads(a.k_proj(y), cfg.num_kv_heads)
            v = self._heads(a.v_proj(y), cfg.num_kv_heads)
            if self.attention == "eager":
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(cfg.head_dim))
                o = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + a.o_proj(o.transpose(1, 2).reshape(b, s, cfg.num_heads * cfg.head_dim))
            y = self.post_norm(x)
            m = cast(Any, self.mlp)
            if cfg.mlp == "gated":
                z = m.down_proj(F.silu(m.gate_proj(y)) * m.up_proj(y))
            else:
                z = m.down_proj(F.gelu(m.up_proj(y)))
            return x + z

    class ProbeLM(nn.Module):
        def __init__(self, cfg: ModelConfig, attention: str, rank: int) -> None:
            super().__init__()
            self.cfg, self.attention = cfg, attention
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
            for layer in self.layers:
                x = layer(x, mask)
            x = self.final_norm(x)
            head = self.embed_tokens.weight if self.cfg.tie_word_embeddings else self.lm_head.weight
            logits = F.linear(x, head)
            return F.cross_entropy(logits.view(b * s, -1), targets.view(-1))

    return {"ProbeLM": ProbeLM, "LoraLinear": LoraLinear}


def build_probe(cfg: ModelConfig, *, attention: str, dtype: Any, lora_rank: int = 0, seed: int = 0) -> Any:
    """The probe on the CPU in `dtype`; with LoRA the base is frozen in `dtype` and the adapters stay fp32."""
    import torch

    torch.manual_seed(seed)
    classes = _classes()
    model = classes["ProbeLM"](cfg, attention, lora_rank).to(dtype=dtype)
    if lora_rank:
        for p in (model.embed_tokens, getattr(model, "embed_positions", None), getattr(model, "lm_head", None)):
            if p is not None:
                p.requires_grad_(False)
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm) or type(module).__name__ == "RMSNorm":
                module.requires_grad_(False)
            if isinstance(module, classes["LoraLinear"]):
                module.lora_A.float()
                module.lora_B.float()
        model.final_norm.requires_grad_(False)
    return model
