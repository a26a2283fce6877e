"""Quantized weights as data: each format's stored bytes worked by hand, quantization_config read into a format
with the parts it leaves 16-bit, and the checkpoint's own format as the serving default."""

from __future__ import annotations

import pytest

from harness.memory import weight_formats as wf
from harness.memory.estimate import InferSetup, estimate_inference
from harness.memory.inference import inference_weight_bytes, tensor_bytes
from harness.memory.params import EMBEDDING, HEAD, LINEAR, NORM, ROUTER, ParamTensor, count_params, param_tensors
from harness.memory.presets import preset
from harness.memory.quant_config import from_quantization_config
from harness.memory.shape import MemoryInputError

W = ParamTensor("w", (4096, 4096), LINEAR, "q_proj", wf.ATTENTION)


def fmt(q: dict[str, object]) -> wf.WeightFormat:
    return from_quantization_config(q, "config.json")


def test_each_layout_by_hand() -> None:
    n = 4096 * 4096
    assert wf.quantized_bytes(wf.FORMATS["int8"], W.shape) == n + 4 * 4096
    assert wf.quantized_bytes(wf.FORMATS["nf4-nodq"], W.shape) == n // 2 + 4 * n // 64        # 4.5 bits
    # GPTQ int4, groups of 128: int32-packed codes, per group 4-bit zeros packed and fp16 scales, int32 g_idx.
    assert wf.quantized_bytes(wf.FORMATS["gptq-int4"], W.shape) == n // 2 + 32 * (4096 // 2 + 2 * 4096) + 4 * 4096
    assert wf.quantized_bytes(wf.FORMATS["awq-int4"], W.shape) == n // 2 + 32 * (4096 // 2 + 2 * 4096)
    assert wf.quantized_bytes(wf.FORMATS["fp8"], W.shape) == n + 4
    assert wf.quantized_bytes(wf.FORMATS["fp8-channel"], W.shape) == n + 4 * 4096
    assert wf.quantized_bytes(wf.FORMATS["fp8-block"], (24576, 1536)) == 24576 * 1536 + 4 * 192 * 12
    # MXFP4: 32 values in 16 bytes plus one E8M0 scale byte: 4.25 bits; a 3-D expert tensor is E matrices.
    assert wf.quantized_bytes(wf.FORMATS["mxfp4"], (32, 5760, 2880)) == 32 * 5760 * 90 * 17
    assert wf.quantized_bytes(wf.FORMATS["mxfp4"], (32, 5760, 2880)) * 8 / (32 * 5760 * 2880) == 4.25


def test_only_linear_weights_of_the_parts_a_format_names_are_quantized() -> None:
    mx = wf.FORMATS["mxfp4"]
    experts = ParamTensor("e", (8, 64, 32), LINEAR, part=wf.EXPERTS)
    assert tensor_bytes(experts, mx) == wf.quantized_bytes(mx, experts.shape)
    assert tensor_bytes(W, mx) == 2 * W.numel                       # attention stays bf16 under MXFP4
    for kind, part in ((EMBEDDING, wf.EMBEDDING), (HEAD, wf.HEAD), (ROUTER, wf.ROUTER), (NORM, wf.NORMS)):
        t = ParamTensor("t", (64, 32), kind, part=part)
        assert tensor_bytes(t, wf.FORMATS["int8"]) == 2 * t.numel
    assert tensor_bytes(ParamTensor("r", (64, 32), ROUTER, part=wf.ROUTER), "bf16", frozenset({ROUTER})) == 4 * 64 * 32


def test_bitsandbytes_config() -> None:
    assert fmt({"quant_method": "bitsandbytes", "load_in_8bit": True}).layout == wf.ROW
    four = fmt({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                "bnb_4bit_use_double_quant": True, "llm_int8_skip_modules": ["lm_head", "mlp.gate"]})
    assert (four.name, four.double_quant, four.group) == ("bnb-nf4-dq", True, 64)
    assert four.skipped == {wf.HEAD, wf.ROUTER}
    plain = fmt({"quant_method": "bitsandbytes", "load_in_4bit": True})
    assert plain.name == "bnb-fp4" and not plain.double_quant  # BitsAndBytesConfig's defaults: fp4, no DQ


def test_gptq_awq_fp8_mxfp4_configs() -> None:
    gptq = fmt({"quant_method": "gptq", "bits": 8, "group_size": -1})
    assert (gptq.layout, gptq.bits, gptq.group) == (wf.GPTQ, 8, -1)
    assert wf.quantized_bytes(gptq, (4096, 4096)) == 4096 * 4096 + (4096 + 2 * 4096) + 4 * 4096
    awq = fmt({"quant_method": "awq", "bits": 4, "group_size": 64, "modules_to_not_convert": ["visual"]})
    assert awq.group == 64 and awq.skipped == {wf.VISION}
    ds = fmt({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})
    assert (ds.layout, ds.block) == (wf.BLOCK_2D, (128, 128))
    mx = fmt({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                  "model.embed_tokens", "lm_head"]})
    assert mx.parts == {wf.EXPERTS} and mx.skipped == {wf.ATTENTION, wf.ROUTER, wf.EMBEDDING, wf.HEAD}


def test_a_skip_entry_refenv_cannot_place_is_noted() -> None:
    f = fmt({"quant_method": "awq", "modules_to_not_convert": ["model.layers.0.mlp", "frobnicator"]})
    assert f.skipped == frozenset() and len(f.notes) == 2
    assert "names one layer" in f.notes[0] and "names no part" in f.notes[1]


@pytest.mark.parametrize(("q", "key"), [
    ({"quant_method": "hqq"}, "quant_method"),
    ({"quant_method": "compressed-tensors"}, "quant_method"),
    ({"load_in_4bit": True}, "quant_method"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "load_in_8bit"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf3"}, "bnb_4bit_quant_type"),
    ({"quant_method": "gptq", "bits": 5}, "bits"),
    ({"quant_method": "gptq", "group_size": 0}, "group_size"),
    ({"quant_method": "awq", "zero_point": False}, "zero_point"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
    ({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head"}, "modules_to_not_convert"),
    ("fp8", "quantization_config"),
])
def test_bad_quantization_config_is_refused_naming_the_key(q: object, key: str) -> None:
    with pytest.raises(MemoryInputError, match=key):
        from_quantization_config(q, "config.json")


def test_serving_defaults_to_the_checkpoints_own_format() -> None:
    gpt_oss = preset("gpt-oss-120b")
    est = estimate_inference(gpt_oss, InferSetup(weights=None))
    assert est.ledgers.weights == inference_weight_bytes(gpt_oss, wf.FORMATS["mxfp4"]) < 66e9
    assert "MXFP4" in est.weight_format
    bf16 = estimate_inference(gpt_oss, InferSetup(weights="bf16"))
    assert bf16.ledgers.weights > 3 * est.ledgers.weights
    # DeepSeek-V3's FP8 checkpoint: its Linear weights 1 byte plus an fp32 scale per 128x128 block, the router
    # fp32 (kept so by its class), embeddings and head 16-bit.
    ds = preset("deepseek-v3")
    stored = estimate_inference(ds, InferSetup(weights=None)).ledgers.weights
    linear = sum(t.numel for t in param_tensors(ds) if t.kind == LINEAR)
    assert linear < stored < linear * 1.001 + 2 * (count_params(ds).total - linear) + 2 * 58 * 256 * 7168


def test_weight_names_are_the_cli_choices() -> None:
    from harness.memory.inference import WEIGHT_PRECISIONS

    assert set(WEIGHT_PRECISIONS) >= {"bf16", "int8", "int4", "nf4", "gptq-int4", "awq-int4", "fp8", "fp8-block",
                                      "mxfp4"}
    with pytest.raises(MemoryInputError, match="--weights"):
        wf.weight_format("int3")
