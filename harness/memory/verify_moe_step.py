"""A training step of a small MoE, transformers' own Qwen3-MoE on the CPU, against the predicted peak (within 5%).

The model (q/k norms, 8 routed experts of which 2 per token, a dense first layer) is built from its config,
trained one step so AdamW's state exists, then a second step (forward with labels, backward, foreach AdamW,
gradients set to None) runs under the profiler's memory tracking (harness/memory/alloc_trace.py): the live
bytes before it (parameters and optimizer state, storage by storage) plus its high point over them is the
step's peak, compared with `memory`'s peak for the same config read by the CLI's reader, the same precision
regime, micro-batch, sequence and attention kind.
"""

from __future__ import annotations

from typing import Any

from harness.memory.alloc_trace import allocation_trace
from harness.memory.estimate import TrainSetup, estimate_training
from harness.memory.hf_config import from_hf_config
from harness.memory.torch_traits import storage
from harness.schema.memory_document import ChecksSection, SizeCheck
from harness.schema.outcomes import FAIL, PASS, SKIP

TOLERANCE = 0.05
CONFIG: dict[str, Any] = {
    "model_type": "qwen3_moe", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [0],
    "max_position_embeddings": 128, "tie_word_embeddings": False}
# (regime, attention implementation, micro-batch, sequence): the peak falls in backward, where activations count.
CASES = (("fp32", "eager", 4, 64), ("bf16", "sdpa", 4, 64))


def _measure(regime: str, attention: str, batch: int, seq: int) -> int | None:
    """The second step's peak bytes: what lives before it plus its high point over that (None: no profiler)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config: Any = AutoConfig.for_model(CONFIG["model_type"], **{k: v for k, v in CONFIG.items() if k != "model_type"})
    config._attn_implementation = attention  # what attn_implementation= sets (PretrainedConfig)
    torch.manual_seed(0)
    auto: Any = AutoModelForCausalLM
    model: Any = auto.from_config(config, dtype=torch.bfloat16 if regime == "bf16" else torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)  # foreach: torch's default on a GPU
    ids = torch.randint(0, int(CONFIG["vocab_size"]), (batch, seq), generator=torch.Generator().manual_seed(1))

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    held = list(model.parameters()) + [v for state in opt.state.values() for v in state.values()
                                       if isinstance(v, torch.Tensor)]
    before = sum({storage(t).data_ptr(): storage(t).nbytes() for t in held}.values())
    traced = allocation_trace(step)
    return None if traced is None else before + traced[1]


def run_moe_step_verification() -> ChecksSection:
    """The section: PASS when every measured case is within its tolerance."""
    checks = moe_step_checks()
    return ChecksSection(PASS if all(c.status in (PASS, SKIP) for c in checks) else FAIL, checks)


def moe_step_checks() -> tuple[SizeCheck, ...]:
    """Each case: the measured peak of a Qwen3-MoE training step against `memory`'s peak, within 5%."""
    import torch

    cfg = from_hf_config(dict(CONFIG), "small-qwen3-moe", source="transformers Qwen3MoeConfig (small)")
    checks = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for regime, attention, batch, seq in CASES:
            setup = TrainSetup(regime=regime, micro_batch=batch, seq_len=seq,
                               attention="eager" if attention == "eager" else "flash")
            predicted = estimate_training(cfg, setup).peak_bytes
            measured = _measure(regime, attention, batch, seq)
            name = f"qwen3_moe training step, {regime} AdamW, {attention}, batch {batch} x {seq}: peak"
            if measured is None:
                checks.append(SizeCheck(name + " (this torch has no profiler memory events)", predicted, 0,
                                        f"within {TOLERANCE:.0%}", SKIP))
                continue
            ratio = measured / predicted
            checks.append(SizeCheck(name, predicted, measured, f"within {TOLERANCE:.0%}",
                                    PASS if abs(ratio - 1) <= TOLERANCE else FAIL, ratio=round(ratio, 4)))
    finally:
        torch.set_num_threads(threads)
    return tuple(checks)
