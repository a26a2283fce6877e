"""Weight formats as data: bits per value, the scales (and zero points) beside them, and what stays 16-bit.

Each layout is the one its library stores, tensor by tensor, for a Linear weight W of shape (out, in) (a
3-D expert tensor (E, out, in) is E such matrices):
- bitsandbytes LLM.int8 (`int8`): int8 W plus one fp32 scale per output row (Int8Params.SCB).
- bitsandbytes 4-bit (`nf4`, `fp4`): two 4-bit codes per byte and one absmax per 64 values: fp32, or with
  double quantization 8-bit plus one fp32 per 256 absmax values (QLoRA, arXiv 2305.14314, sec. 3).
- GPTQ (`gptq-int4`, any `bits`): qweight packed in int32 along the input, qzeros packed the same way and
  fp16 scales per group of `group_size` inputs and output, and g_idx, one int32 per input (the layout of
  auto-gptq / gptqmodel's QuantLinear).
- AWQ (`awq-int4`, `int4`): qweight (in, out*bits/32) int32, qzeros packed per group and output, fp16 scales
  per group and output, no g_idx (AutoAWQ's WQLinear_GEMM).
- FP8: one byte per value with an fp32 scale per tensor (`fp8`), per output row (`fp8-channel`, fbgemm) or
  per 128x128 block (`fp8-block`: DeepSeek-V3's checkpoint, `weight_scale_inv`, and transformers'
  FineGrainedFP8).
- MXFP4 (`mxfp4`, gpt-oss's experts): 4-bit E2M1 values, 16 bytes per 32, and one E8M0 (8-bit) scale per 32
  (OCP Microscaling Formats v1.0; gpt-oss's `*_blocks` and `*_scales` tensors).
Only Linear weights of the parts a format names are quantized; embeddings, the head, routers, norms, biases
and attention sinks stay 16-bit (or fp32 where the model class keeps them so).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.memory.errors import MemoryInputError

# The parts of a model a Linear weight belongs to (harness/memory/params.py sets one on every tensor).
ATTENTION = "attention"
MLP = "mlp"                # a dense MLP, or the shared expert of an MoE layer
EXPERTS = "experts"        # routed experts
ROUTER = "router"
EMBEDDING = "embedding"
HEAD = "head"
NORMS = "norms"            # norms, biases, attention sinks: never quantized
VISION = "vision"          # a vision tower and its projector into the text model
PARTS = (ATTENTION, MLP, EXPERTS, ROUTER, EMBEDDING, HEAD, NORMS, VISION)
TEXT_LINEARS = frozenset({ATTENTION, MLP, EXPERTS})
ALL_LINEARS = TEXT_LINEARS | {VISION}

PLAIN = "plain"
ROW = "row"
BLOCKWISE = "blockwise"
GPTQ = "gptq"
AWQ = "awq"
PER_TENSOR = "tensor"
PER_CHANNEL = "channel"
BLOCK_2D = "block2d"
MX = "mx"


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its weights: the layout, its sizes, and which parts it quantizes."""

    name: str
    title: str
    layout: str = PLAIN
    bits: int = 16                 # of each stored value
    group: int = 0                 # values per scale along the input (0: not grouped; -1: the whole row)
    block: tuple[int, int] = (0, 0)  # 2-D scale blocks (out, in)
    double_quant: bool = False     # bitsandbytes 4-bit: 8-bit absmax with one fp32 per 256 of them
    parts: frozenset[str] = ALL_LINEARS
    skipped: frozenset[str] = frozenset()   # parts left unquantized (modules_to_not_convert and the like)
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def quantized(self) -> bool:
        return self.layout != PLAIN

    def quantizes(self, part: str) -> bool:
        return self.quantized and part in self.parts and part not in self.skipped


_BNB = "bitsandbytes (Int8Params / Params4bit)"
FORMATS = {
    "fp32": WeightFormat("fp32", "fp32 weights", bits=32),
    "bf16": WeightFormat("bf16", "bf16 weights"),
    "fp16": WeightFormat("fp16", "fp16 weights"),
    "int8": WeightFormat("int8", "int8 Linear weights with an fp32 scale per output row (LLM.int8, bitsandbytes); "
                         "the rest 16-bit", ROW, 8, source=_BNB),
    "nf4": WeightFormat("nf4", "NF4 Linear weights with double quantization (~4.127 bits); the rest 16-bit",
                        BLOCKWISE, 4, group=64, double_quant=True, source=_BNB),
    "nf4-nodq": WeightFormat("nf4-nodq", "NF4 Linear weights with an fp32 absmax per 64 (4.5 bits); the rest 16-bit",
                             BLOCKWISE, 4, group=64, source=_BNB),
    "int4": WeightFormat("int4", "int4 Linear weights in AWQ's layout: fp16 scale and 4-bit zero per 128 inputs; "
                         "the rest 16-bit", AWQ, 4, group=128, parts=TEXT_LINEARS, source="AutoAWQ WQLinear_GEMM"),
    "awq-int4": WeightFormat("awq-int4", "AWQ int4: fp16 scale and 4-bit zero per 128 inputs (AutoAWQ GEMM); the "
                             "rest 16-bit", AWQ, 4, group=128, parts=TEXT_LINEARS, source="AutoAWQ WQLinear_GEMM"),
    "gptq-int4": WeightFormat("gptq-int4", "GPTQ int4: fp16 scale and 4-bit zero per 128 inputs, int32 g_idx per "
                              "input; the rest 16-bit", GPTQ, 4, group=128, parts=TEXT_LINEARS,
                              source="auto-gptq / gptqmodel QuantLinear"),
    "fp8": WeightFormat("fp8", "FP8 Linear weights with one fp32 scale per tensor; the rest 16-bit", PER_TENSOR, 8,
                        parts=TEXT_LINEARS, source="FP8 E4M3 per-tensor scaling"),
    "fp8-channel": WeightFormat("fp8-channel", "FP8 Linear weights with an fp32 scale per output row (fbgemm); the "
                                "rest 16-bit", PER_CHANNEL, 8, parts=TEXT_LINEARS, source="transformers FbgemmFp8"),
    "fp8-block": WeightFormat("fp8-block", "FP8 Linear weights with an fp32 scale per 128x128 block (DeepSeek-V3); "
                              "the rest 16-bit", BLOCK_2D, 8, block=(128, 128), parts=TEXT_LINEARS,
                              source="DeepSeek-V3 weight_scale_inv; transformers FineGrainedFP8"),
    "mxfp4": WeightFormat("mxfp4", "MXFP4 experts: 4-bit values with an 8-bit scale per 32 (4.25 bits); the rest "
                          "16-bit", MX, 4, group=32, parts=frozenset({EXPERTS}),
                          source="OCP Microscaling Formats v1.0; gpt-oss *_blocks / *_scales"),
}
NAMES = tuple(FORMATS)


def weight_format(name: str) -> WeightFormat:
    """A format by name (`--weights`), or a clear error listing the known ones."""
    if name not in FORMATS:
        raise MemoryInputError(f"--weights {name!r} is unknown; expected one of {', '.join(NAMES)}")
    return FORMATS[name]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _packed(values: int, bits: int) -> int:
    """Bytes of `values` codes of `bits` each packed into int32 words."""
    return 4 * _ceil(values * bits, 32)


def quantized_bytes(fmt: WeightFormat, shape: tuple[int, ...]) -> int:
    """Bytes of one Linear weight of `shape` ((out, in) or (E, out, in)) stored in `fmt`, scales included."""
    numel = 1
    for d in shape:
        numel *= d
    n_in = shape[-1]
    n_out = shape[-2] if len(shape) >= 2 else 1
    lead = numel // (n_out * n_in) if n_out * n_in else 0
    if fmt.layout == PLAIN:
        return numel * fmt.bits // 8
    if fmt.layout == ROW:
        return numel + 4 * lead * n_out
    if fmt.layout == BLOCKWISE:
        blocks = _ceil(numel, fmt.group)
        scales = blocks + 4 * _ceil(blocks, 256) if fmt.double_quant else 4 * blocks
        return _ceil(numel, 2) + scales
    groups = 1 if fmt.group <= 0 else _ceil(n_in, fmt.group)
    if fmt.layout == GPTQ:
        per = _packed(n_in, fmt.bits) * n_out + groups * (_packed(n_out, fmt.bits) + 2 * n_out) + 4 * n_in
        return lead * per
    if fmt.layout == AWQ:
        return lead * (n_in * _packed(n_out, fmt.bits) + groups * (_packed(n_out, fmt.bits) + 2 * n_out))
    if fmt.layout == PER_TENSOR:
        return numel + 4 * lead
    if fmt.layout == PER_CHANNEL:
        return numel + 4 * lead * n_out
    if fmt.layout == BLOCK_2D:
        return numel + 4 * lead * _ceil(n_out, fmt.block[0]) * _ceil(n_in, fmt.block[1])
    if fmt.layout == MX:
        per_row = _ceil(n_in, fmt.group)
        return lead * n_out * per_row * (fmt.group * fmt.bits // 8 + 1)
    raise MemoryInputError(f"weight format {fmt.name!r}: unknown layout {fmt.layout!r}")


def with_skipped(fmt: WeightFormat, skipped: frozenset[str], notes: tuple[str, ...] = ()) -> WeightFormat:
    """The format with more parts left unquantized."""
    return replace(fmt, skipped=fmt.skipped | skipped, notes=fmt.notes + notes)
