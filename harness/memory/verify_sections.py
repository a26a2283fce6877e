"""The verification beyond the probe cases: the KV cache, transformers' Llama, sharding over gloo, and what
the CLI offers that a run cannot measure here, with why."""

from __future__ import annotations

from harness.memory.cases import peft_installed
from harness.schema.memory_document import ChecksSection, ShardingSection


def cpu_sections(quick: bool) -> dict[str, ChecksSection | ShardingSection]:
    """The KV cache grown token by token; with --full, transformers' Llama and sharding over gloo."""
    from harness.memory.verify_hf import installed, run_hf_verification
    from harness.memory.verify_infer import run_kv_verification

    out: dict[str, ChecksSection | ShardingSection] = {"kv_cache": run_kv_verification()}
    if not quick and installed():
        out["transformers"] = run_hf_verification()
    if not quick:
        from harness.memory.verify_dist import run_sharding_verification

        out["sharding"] = run_sharding_verification()
    return out


def not_measured(device: str, quick: bool) -> dict[str, str]:
    """What the CLI offers that this run does not measure, and why."""
    from harness.memory.verify_dist import NOT_MEASURED

    out = {
        "optimizer adamw8bit": "bitsandbytes' 8-bit AdamW runs on CUDA only; its figure is the 8-bit optimizers "
                               "paper's (arXiv 2110.02861): 1 byte per state plus an fp32 absmax per block",
        "qlora / weights nf4": "bitsandbytes' NF4 needs CUDA; its figure is the QLoRA paper's (arXiv 2305.14314): "
                               "4 bits + 8-bit absmax per 64 + fp32 per 256 blocks",
        "checkpointing selective": "Megatron's selective recompute of the attention core is not in torch; with "
                                   "flash attention it equals none (measured)",
        "inference tensor parallelism": "one process caches all KV heads; the split by KV head is arithmetic",
    }
    from harness.memory.verify_hf import installed

    if not installed() or device == "cuda" or quick:
        out["transformers LlamaForCausalLM"] = ("measured on the CPU with --full where transformers is installed "
                                                "(a dev dependency); the probe is Llama-style either way")
    if not peft_installed() or device == "cuda":
        out["lora (PEFT itself)"] = ("measured on the CPU only, where peft is installed (a dev dependency); "
                                     "elsewhere LoRA is measured on the probe's PEFT-like layer")
    if device == "cuda" or quick:
        out["sharding"] = "measured on the CPU with --verify --full (two gloo processes)"
    if device == "cuda":
        out["kv_cache"] = "measured on the CPU"
    else:
        out.update(NOT_MEASURED)
    return out
