"""The verification beyond the probe cases: the KV cache, transformers' Llama, sharding over gloo, and what
the CLI offers that a run cannot measure here, with why."""

from __future__ import annotations

from typing import Callable  # noqa: UP035  (collections.abc.Callable[...] is 3.9+; the harness runs on 3.8)

from harness.memory.cases import peft_installed
from harness.memory.torch_traits import TorchTraits
from harness.schema.memory_document import ChecksSection, ShardingSection
from harness.schema.outcomes import ERROR


def cpu_sections(quick: bool) -> dict[str, ChecksSection | ShardingSection]:
    """The KV cache grown token by token; where transformers is installed, each architecture family's own class
    and a small MoE's training step; with --full, transformers' Llama and sharding over gloo."""
    from harness.memory.verify_families import run_family_verification
    from harness.memory.verify_hf import installed, run_hf_verification
    from harness.memory.verify_infer import run_kv_verification
    from harness.memory.verify_moe_step import run_moe_step_verification

    out: dict[str, ChecksSection | ShardingSection] = {"kv_cache": _guarded(run_kv_verification)}
    if installed():
        out["families"] = _guarded(run_family_verification)
        out["moe_training"] = _guarded(run_moe_step_verification)
    if not quick and installed():
        out["transformers"] = _guarded(run_hf_verification)
    if not quick:
        from harness.memory.verify_dist import run_sharding_verification

        out["sharding"] = run_sharding_verification()  # catches its ranks' failures itself
    return out


def _guarded(section: Callable[[], ChecksSection]) -> ChecksSection:
    """A section that cannot run (an API this torch lacks, a module it imports that is not there) is an ERROR
    with the exception's text, and the other sections still run."""
    try:
        return section()
    except Exception as exc:  # any failure to run is recorded, not raised: only a measured number can disagree
        return ChecksSection(ERROR, error=f"{type(exc).__name__}: {exc}")


def not_measured(device: str, quick: bool, traits: TorchTraits | None = None) -> dict[str, str]:
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
        "expert parallelism": "one process holds every expert; the split of the routed experts is arithmetic",
        "weights gptq / awq / fp8 / mxfp4": "their kernels need a GPU; the bytes are each library's stored layout "
                                            "(harness/memory/weight_formats.py), not measured here",
        "mla-cache decompressed": "transformers 5 caches MLA's latent (measured); the decompressed keys and "
                                  "values of transformers 4 are arithmetic",
    }
    from harness.memory.verify_hf import installed

    if not installed() or device == "cuda":
        out["architecture families"] = ("measured on the CPU where transformers is installed (a dev dependency): "
                                         "each family's own class, its parameters and KV cache, and a Qwen3-MoE "
                                         "training step; the arithmetic is the same either way")
    if not installed() or device == "cuda" or quick:
        out["transformers LlamaForCausalLM"] = ("measured on the CPU with --full where transformers is installed "
                                                "(a dev dependency); the probe is Llama-style either way")
    if not peft_installed() or device == "cuda":
        out["lora (PEFT itself)"] = ("measured on the CPU only, where peft is installed (a dev dependency); "
                                     "elsewhere LoRA is measured on the probe's PEFT-like layer")
    if device == "cuda" or quick:
        out["sharding"] = "measured on the CPU with --verify --full (two gloo processes)"
    if traits is not None and not traits.sdpa:
        out["attention sdpa/flash"] = ("this torch has no torch.nn.functional.scaled_dot_product_attention (torch "
                                       "2.0 on): the eager cases only")
    if device == "cuda":
        out["kv_cache"] = "measured on the CPU"
    else:
        out.update(NOT_MEASURED)
    return out
