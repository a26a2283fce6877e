"""The activation model against transformers' own LlamaForCausalLM, built here from a small config.

No weights are downloaded: a Llama-style config (GQA, rotary, RMSNorm, SwiGLU) is instantiated with random
weights, one training forward with labels runs under `saved_tensors_hooks`, and the bytes autograd keeps
(unique storages, parameters and inputs excluded) are compared with harness/memory/activations.py for the
same config read by the CLI's own config reader; its parameter count is compared exactly. Runs where
transformers is installed (a dev dependency here, through peft); elsewhere it is named as not measured.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from harness.memory.activations import ActivationSetup, training_activations
from harness.memory.hf_config import from_hf_config
from harness.memory.params import count_params
from harness.memory.torch_traits import storage
from harness.schema.memory_document import ChecksSection, SizeCheck
from harness.schema.outcomes import FAIL, PASS

TOLERANCE = 0.05
# A scaled-down Llama-3: 4 query heads over 2 KV heads, untied head, 2 layers.
CONFIG: dict[str, Any] = {"model_type": "llama", "vocab_size": 512, "hidden_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 352,
          "max_position_embeddings": 256, "tie_word_embeddings": False}
# (attention implementation, dtype name, batch, sequence)
CASES = (("sdpa", "bf16", 2, 48), ("sdpa", "fp32", 1, 64), ("eager", "bf16", 2, 32), ("eager", "fp32", 1, 40))


def installed() -> bool:
    """Whether transformers can be imported (nothing is imported here)."""
    return importlib.util.find_spec("transformers") is not None


def _measure(attention: str, dtype_name: str, batch: int, seq: int) -> tuple[int, int]:
    """(bytes saved for backward, parameters) of one LlamaForCausalLM training forward."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    config: Any = LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "model_type"})
    config._attn_implementation = attention  # what attn_implementation= sets (PretrainedConfig)
    model: Any = LlamaForCausalLM(config)
    model = model.to(dtype)
    model.train()
    ids = torch.randint(0, int(CONFIG["vocab_size"]), (batch, seq), generator=torch.Generator().manual_seed(1))
    excluded = {storage(p).data_ptr() for p in model.parameters()} | {storage(ids).data_ptr()}
    saved: dict[int, int] = {}

    def pack(x: Any) -> Any:
        st = storage(x)
        if st.data_ptr() not in excluded:
            saved[st.data_ptr()] = st.nbytes()
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        model(input_ids=ids, labels=ids)
    return sum(saved.values()), sum(p.numel() for p in model.parameters())


def run_hf_verification() -> ChecksSection:
    """Each case: measured against predicted activations (within 5%) and the parameter count (exact)."""
    cfg = from_hf_config(dict(CONFIG), "hf-llama-small", source="transformers LlamaConfig")
    checks = []
    for attention, dtype_name, batch, seq in CASES:
        p = 2 if dtype_name == "bf16" else 4
        setup = ActivationSetup(micro_batch=batch, seq_len=seq, attention="eager" if attention == "eager" else "flash",
                                act_bytes=p, stats_bytes=p)
        predicted = training_activations(cfg, setup).total
        measured, params = _measure(attention, dtype_name, batch, seq)
        ratio = measured / predicted
        ok = abs(ratio - 1) <= TOLERANCE and params == count_params(cfg).total
        checks.append(SizeCheck(f"LlamaForCausalLM {attention} {dtype_name} batch {batch} x {seq}", predicted,
                                measured, f"within {TOLERANCE:.0%}", PASS if ok else FAIL, ratio=round(ratio, 4),
                                params=params))
    return ChecksSection(PASS if all(c.status == PASS for c in checks) else FAIL, tuple(checks))
