"""LoRA adapters and QLoRA's NF4 storage: which tensors train, and how many bytes a frozen base takes."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.params import ATTENTION_LINEARS, LINEAR, LORA, ParamTensor, param_tensors, targetable
from harness.memory.shape import MemoryInputError, ModelConfig

# QLoRA (Dettmers et al. 2023, arXiv 2305.14314, sec. 3): NF4 weights with one absmax per 64 weights;
# double quantization stores those absmax values in 8 bits with one fp32 scale per 256 of them.
NF4_BLOCK = 64
NF4_SECOND_BLOCK = 256
NF4_BITS_PER_PARAM = 4 + 8 / NF4_BLOCK + 32 / (NF4_BLOCK * NF4_SECOND_BLOCK)  # = 4.126953125

# Shorthands for target lists; "all-linear" is PEFT's name for every Linear but the output head.
TARGET_ALIASES = {
    "attention": ATTENTION_LINEARS,
    "qv": ("q_proj", "v_proj"),
}
DEFAULT_TARGETS = "q_proj,v_proj"  # the LoRA paper's choice (Hu et al. 2021, sec. 7.1) and PEFT's Llama default


@dataclass(frozen=True)
class LoraSpec:
    """LoRA of `rank` on the named Linear modules; with `qlora` the frozen base Linears are NF4."""

    rank: int
    targets: tuple[str, ...]
    qlora: bool = False


def resolve_targets(cfg: ModelConfig, text: str) -> tuple[str, ...]:
    """'q_proj,v_proj' / 'attention' / 'all-linear' -> module names, checked against the architecture."""
    known = targetable(cfg)
    names: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        expanded = known if item == "all-linear" else TARGET_ALIASES.get(item, (item,))
        for name in expanded:
            if name not in known:
                raise MemoryInputError(
                    f"--lora-targets: {name!r} is not a Linear of {cfg.name}; expected some of "
                    f"{', '.join(known)}, or all-linear / attention / qv"
                )
            if name not in names:
                names.append(name)
    if not names:
        raise MemoryInputError("--lora-targets: name at least one Linear module, e.g. q_proj,v_proj")
    return tuple(names)


def lora_tensors(cfg: ModelConfig, spec: LoraSpec) -> tuple[ParamTensor, ...]:
    """The adapters: for each targeted Linear W (out x in), A (rank x in) and B (out x rank)."""
    if spec.rank < 1:
        raise MemoryInputError(f"--lora-rank must be >= 1, got {spec.rank}")
    out: list[ParamTensor] = []
    for t in param_tensors(cfg):
        if t.kind == LINEAR and t.module in spec.targets:
            n_out, n_in = t.shape
            stem = t.name[: -len(".weight")]
            out.append(ParamTensor(f"{stem}.lora_A.weight", (spec.rank, n_in), LORA, t.module, t.part))
            out.append(ParamTensor(f"{stem}.lora_B.weight", (n_out, spec.rank), LORA, t.module, t.part))
    return tuple(out)


def nf4_bytes(numel: int) -> int:
    """Bytes of one NF4 tensor with double quantization: 4-bit codes, 8-bit absmax, fp32 second-level."""
    blocks = -(-numel // NF4_BLOCK)
    return -(-numel // 2) + blocks + 4 * -(-blocks // NF4_SECOND_BLOCK)
