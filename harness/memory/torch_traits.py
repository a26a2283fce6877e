"""What the running torch does that changed between releases and that the memory probe depends on.

Each trait is asked of torch itself (a tiny tensor, or its own source), not read from a version table:
- `mean` keeping its input for backward: torch 2.1's MeanBackward1 saves `self` (measured here: an RMSNorm's
  fp32 `x.pow(2)` stays alive, 4 bytes per hidden unit and token); torch 2.13's keeps only its sizes.
- `scaled_dot_product_attention`: absent before torch 2.0; its `enable_gqa` argument exists from torch 2.5
  (torch.nn.functional docs). Without it the probe repeats K/V itself before SDPA, as HF's `repeat_kv` does;
  likewise where the CPU's fused kernel does not take GQA and SDPA falls back to its math path, which keeps
  more for backward than the fused kernel's output and logsumexp (torch 2.8: measured here, 20-50% more
  activations in the GQA cases; 2.13's CPU flash kernel takes GQA). Asked by the backward node SDPA leaves:
  the fused kernel's is `ScaledDotProductFlashAttentionForCpuBackward0`, the math path's a view of a bmm.
- foreach AdamW adding eps out of place (`denom = torch._foreach_add(exp_avg_sq_sqrt, eps)`), so a second
  temporary of the parameters' size lives through the step: torch 1.13.1's torch/optim/adamw.py does (measured
  here: the step's peak one fp32 copy of the parameters higher); 2.1.0 adds it in place. Read from torch's own
  source where it has it.
- `Tensor.untyped_storage`: torch 2.0 on; torch 1.13 names the same thing `Tensor.storage()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class TorchTraits:
    """The answers; the defaults are today's torch."""

    mean_keeps_input: bool = False
    sdpa: bool = True
    sdpa_gqa: bool = True
    sdpa_gqa_fused_cpu: bool = True
    adamw_eps_out_of_place: bool = False


@lru_cache(maxsize=1)
def probe() -> TorchTraits:
    """Ask the torch installed here (imported now)."""
    import torch
    from torch.nn import functional as F

    x = torch.ones(2, 4, requires_grad=True)
    keeps = hasattr(x.pow(2).mean(-1, keepdim=True).grad_fn, "_saved_self")
    sdpa = hasattr(F, "scaled_dot_product_attention")
    gqa = fused = False
    if sdpa:
        q = torch.zeros(1, 2, 4, 8, requires_grad=True)
        try:
            out = F.scaled_dot_product_attention(q, q[:, :1], q[:, :1], is_causal=True, enable_gqa=True)
            gqa, fused = True, "Attention" in type(out.grad_fn).__name__
        except (TypeError, RuntimeError):
            gqa = False
    return TorchTraits(mean_keeps_input=keeps, sdpa=sdpa, sdpa_gqa=gqa, sdpa_gqa_fused_cpu=fused,
                       adamw_eps_out_of_place=_adamw_denom_copy())


def _adamw_denom_copy() -> bool:
    import inspect

    from torch.optim import adamw

    try:
        source = inspect.getsource(adamw)
    except (OSError, TypeError):  # no source shipped: today's in-place step
        return False
    return "denom = torch._foreach_add(" in source


def storage(tensor: Any) -> Any:
    """A tensor's untyped storage (its `data_ptr()` and `nbytes()`), by the name this torch gives it."""
    getter = getattr(tensor, "untyped_storage", None) or tensor.storage
    return getter()
