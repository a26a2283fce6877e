"""A config.json's `quantization_config` read into a weight format (harness/memory/weight_formats.py).

The methods and keys are transformers' quantizer configs (transformers/utils/quantization_config.py):
bitsandbytes (load_in_8bit / load_in_4bit, bnb_4bit_quant_type, bnb_4bit_use_double_quant,
llm_int8_skip_modules), gptq (bits, group_size), awq (bits, group_size, zero_point, modules_to_not_convert),
fp8 (weight_block_size, modules_to_not_convert), fbgemm_fp8 (modules_to_not_convert) and mxfp4
(modules_to_not_convert). Any other method is refused, naming the key: a silently wrong byte count is worse
than an error. Module names left unconverted are mapped to the parts refenv counts; one that names no part
(or one layer only) is reported, never dropped in silence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from harness.inputs import shorten
from harness.memory import weight_formats as wf
from harness.memory.errors import MemoryInputError

METHODS = ("bitsandbytes", "gptq", "awq", "fp8", "fbgemm_fp8", "mxfp4")

# A module name's last words -> the part it names (HF names: model.layers.*.self_attn, mlp.router, ...).
_PART_WORDS = (
    (re.compile(r"(^|\.)(self_attn|attn|attention)(\.|$)"), (wf.ATTENTION,)),
    (re.compile(r"(^|\.)(router|gate)$"), (wf.ROUTER,)),
    (re.compile(r"(^|\.)(shared_experts?|shared_expert_gate)(\.|$)"), (wf.MLP,)),
    (re.compile(r"(^|\.)experts(\.|$)"), (wf.EXPERTS,)),
    (re.compile(r"(^|\.)mlp$"), (wf.MLP, wf.EXPERTS, wf.ROUTER)),
    (re.compile(r"(^|\.)(embed_tokens|wte|embed)(\.|$)"), (wf.EMBEDDING,)),
    (re.compile(r"(^|\.)lm_head$"), (wf.HEAD,)),
    (re.compile(r"(^|\.)(vision_tower|visual|vision_model|multi_modal_projector|mm_projector)(\.|$)"),
     (wf.VISION,)),
)
_ONE_LAYER = re.compile(r"(^|\.)layers\.\d+\.")


def skipped_parts(names: object, key: str, where: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The parts a list of module names leaves unquantized, and a note for each name that maps to none."""
    if names is None:
        return frozenset(), ()
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise MemoryInputError(f"{where}: {key!r} must be a list of module names, got {shorten(names)}")
    parts: set[str] = set()
    notes = []
    for name in names:
        if _ONE_LAYER.search(name) and "*" not in name:
            notes.append(f"{key} entry {shorten(name)} names one layer; counted as quantized like the others "
                         "(refenv leaves whole parts unquantized, not single layers)")
            continue
        found = [p for pattern, ps in _PART_WORDS if pattern.search(name.rstrip(".*")) for p in ps]
        if found:
            parts.update(found)
        else:
            notes.append(f"{key} entry {shorten(name)} names no part refenv counts (attention, mlp, experts, router, "
                         "embed_tokens, lm_head, vision): ignored")
    return frozenset(parts), tuple(notes)


def _int(q: Mapping[str, object], key: str, where: str, default: int, allowed: tuple[int, ...] | None = None) -> int:
    value = q.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or (allowed is not None and value not in allowed):
        expect = f"one of {', '.join(map(str, allowed))}" if allowed else "an integer"
        raise MemoryInputError(f"{where}: quantization_config.{key} must be {expect}, got {shorten(value)}")
    return value


def _flag(q: Mapping[str, object], key: str, where: str) -> bool:
    value = q.get(key, False)
    if not isinstance(value, bool):
        raise MemoryInputError(f"{where}: quantization_config.{key} must be true or false, got {shorten(value)}")
    return value


def _group(q: Mapping[str, object], where: str) -> int:
    group = _int(q, "group_size", where, 128)
    if group == 0 or group < -1:
        raise MemoryInputError(f"{where}: quantization_config.group_size must be -1 (one group per row) or >= 1, "
                               f"got {group}")
    return group


def _bitsandbytes(q: Mapping[str, object], where: str) -> wf.WeightFormat:
    eight, four = _flag(q, "load_in_8bit", where), _flag(q, "load_in_4bit", where)
    if eight == four:
        raise MemoryInputError(f"{where}: quantization_config: set exactly one of load_in_8bit and load_in_4bit")
    if eight:
        return wf.FORMATS["int8"]
    kind = q.get("bnb_4bit_quant_type", "fp4")  # BitsAndBytesConfig's default is fp4
    if kind not in ("nf4", "fp4"):
        raise MemoryInputError(f"{where}: quantization_config.bnb_4bit_quant_type must be nf4 or fp4, "
                               f"got {shorten(kind)}")
    dq = _flag(q, "bnb_4bit_use_double_quant", where)
    base = wf.FORMATS["nf4" if dq else "nf4-nodq"]
    return replace(base, name=f"bnb-{kind}" + ("-dq" if dq else ""),
                   title=base.title.replace("NF4", str(kind).upper()))


def from_quantization_config(q: object, where: str) -> wf.WeightFormat:
    """The weight format a `quantization_config` describes, or MemoryInputError naming the key."""
    if not isinstance(q, dict):
        raise MemoryInputError(f"{where}: quantization_config must be a JSON object, got {shorten(q)}")
    method = q.get("quant_method")
    if method not in METHODS:
        raise MemoryInputError(f"{where}: quantization_config.quant_method {shorten(method)} is not a method refenv "
                               f"counts ({', '.join(METHODS)}); pass --weights to choose a format")
    skip_key = "llm_int8_skip_modules" if method == "bitsandbytes" else "modules_to_not_convert"
    if method == "bitsandbytes":
        fmt = _bitsandbytes(q, where)
    elif method in ("gptq", "awq"):
        bits = _int(q, "bits", where, 4, (2, 3, 4, 8) if method == "gptq" else (4,))
        group = _group(q, where)
        layout = wf.GPTQ if method == "gptq" else wf.AWQ
        if method == "awq" and q.get("zero_point", True) is False:
            raise MemoryInputError(f"{where}: quantization_config.zero_point false (symmetric AWQ) is a layout refenv "
                                   "does not count; pass --weights")
        fmt = wf.WeightFormat(f"{method}-int{bits}", f"{method.upper()} int{bits}: fp16 scale and {bits}-bit zero per "
                              f"{'row' if group == -1 else group} inputs; the rest 16-bit", layout, bits, group=group,
                              parts=wf.TEXT_LINEARS, source=wf.FORMATS[f"{method}-int4"].source)
    elif method == "fp8":
        block = q.get("weight_block_size")
        if block is None:
            fmt = wf.FORMATS["fp8"]
        elif (isinstance(block, list) and len(block) == 2
              and all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in block)):
            title = f"FP8 Linear weights with an fp32 scale per {block[0]}x{block[1]} block; the rest 16-bit"
            fmt = replace(wf.FORMATS["fp8-block"], block=(block[0], block[1]), title=title)
        else:
            raise MemoryInputError(f"{where}: quantization_config.weight_block_size must be two positive integers "
                                   f"such as [128, 128], got {shorten(block)}")
    elif method == "fbgemm_fp8":
        fmt = wf.FORMATS["fp8-channel"]
    else:
        fmt = wf.FORMATS["mxfp4"]
    parts, notes = skipped_parts(q.get(skip_key), f"quantization_config.{skip_key}", where)
    return wf.with_skipped(replace(fmt, source=f"{fmt.source}; {where}: quantization_config"), parts, notes)
