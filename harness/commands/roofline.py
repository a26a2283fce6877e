"""`python -m harness roofline`: is an operation compute- or memory-bound here, and how fast can it be."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from harness.gpus import specs
from harness.inputs import InputError, dumps_json, finite_or_null, float_arg, int_arg, label, load_json_file, shorten
from harness.memory import flags, inference
from harness.memory import weight_formats as wf
from harness.memory.params import count_params
from harness.memory.shape import BareModel, MemoryInputError
from harness.probe import accounting, results, roofline
from harness.probe.views import render_roofline
from harness.schema import EXIT_HARNESS_ERROR, EXIT_OK
from harness.schema.jsondata import encode

_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
# Bounds on sizes: far beyond any real kernel, small enough that every product stays a finite float.
MAX_DIM = 1 << 31
MAX_BYTES = 1e18
PROBE_CAP = 16 << 20  # a saved probe document with its sweeps is tens of kB


def check_probe_shape(doc: object, where: str) -> None:
    """The parts of a saved probe document the roofs are read from, with the types and signs they need (before
    the document is read as its record, so a figure that is not a positive number says so)."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object")
    measurements = doc.get("measurements")
    if not isinstance(measurements, list):
        raise InputError(f"{where}: 'measurements' must be a list")
    for i, record in enumerate(measurements):
        if not isinstance(record, dict):
            raise InputError(f"{where}: measurements[{i}] must be an object, got {shorten(record)}")
        if not isinstance(record.get("id", ""), str):
            raise InputError(f"{where}: measurements[{i}].id must be a string, got {shorten(record.get('id'))}")
        for key in ("gbps_median", "tflops_median"):
            value = record.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise InputError(f"{where}: measurements[{i}].{key} must be a positive number, got {shorten(value)}")
    info = doc.get("device_info", {})
    if not isinstance(info, dict) \
            or not all(isinstance(info.get(k, ""), (str, type(None))) for k in ("name", "model")):
        raise InputError(f"{where}: 'device_info' must be an object of strings")
    if not isinstance(doc.get("device", ""), (str, type(None))):
        raise InputError(f"{where}: 'device' must be a string")


def register(subparsers: Any) -> None:
    """Add the `roofline` command and its three operations."""
    parser = subparsers.add_parser(
        "roofline",
        help="place a matmul, an elementwise op or an LLM decode step under this device's roofs",
        description="Say whether an operation is compute- or memory-bound, its arithmetic intensity, and "
        "its attainable throughput and time, from measured roofs (--probe FILE, written by `probe --out`), "
        "a named GPU's spec roofs (--gpu H100-SXM), or the spec of the GPU torch sees.",
    )
    ops = parser.add_subparsers(dest="operation", metavar="OPERATION")
    ops.required = True
    mm = ops.add_parser("matmul", help="an (M x K) @ (K x N) GEMM")
    for name in ("M", "N", "K"):
        mm.add_argument(name, type=int_arg(1, MAX_DIM))
    mm.add_argument("--dtype", choices=_DTYPES, default="bf16")
    ew = ops.add_parser("elementwise", help="an elementwise kernel (on the fp32 units)")
    ew.add_argument("--numel", type=float_arg(1, MAX_BYTES), required=True, help="elements processed")
    ew.add_argument("--bytes-per-element", type=float_arg(1e-6, 1e6), required=True,
                    help="bytes read + written per element")
    ew.add_argument("--flops-per-element", type=float_arg(0, 1e6), default=1.0, help="FLOPs per element (default 1)")
    dec = ops.add_parser("decode", help="one LLM decode step (every weight and the KV cache read once per step)",
                         description="The model as `memory` takes it (--model, --config or --params) with --batch "
                         "sequences of --context tokens; the KV cache is counted as `memory --mode infer` counts it.")
    flags.add_model(dec)
    flags.add_serving(dec, "--dtype's precision")
    dec.add_argument("--dtype", choices=("fp32", "bf16", "fp16", "fp8"), default="bf16",
                     help="the compute roof (and the weights' precision unless --weights says)")
    dec.add_argument("--kv-bytes", type=float_arg(0, MAX_BYTES), default=None,
                     help="with --params only (a bare count has no layers): KV-cache bytes read per step")
    for sub in (mm, ew, dec):
        source = sub.add_mutually_exclusive_group()
        source.add_argument("--probe", metavar="FILE", help="measured roofs from a saved probe JSON")
        source.add_argument("--gpu", metavar="NAME", help="a named GPU's spec roofs, e.g. H100-SXM, H200, A100")
        # From a nanosecond: every rate over the largest operation allowed above stays a finite float.
        sub.add_argument("--measured-ms", type=float_arg(1e-6, 1e12),
                         help="a measured time to compare with the roofline")
        sub.add_argument("--json", action="store_true", help="print JSON instead of text")
        sub.set_defaults(func=run)


def _operation(args: argparse.Namespace) -> roofline.Operation:
    if args.operation == "matmul":
        return roofline.matmul(args.M, args.N, args.K, args.dtype)
    if args.operation == "elementwise":
        return roofline.elementwise(args.numel, args.bytes_per_element, args.flops_per_element)
    return decode_step(args)


def decode_step(args: argparse.Namespace) -> roofline.Operation:
    """A decode step of the model the options name: weights at their precision and the KV cache of --batch
    sequences of --context tokens, both from harness.memory.inference as `memory` counts them."""
    model = flags.model_of(args)
    precision = args.weights or (args.dtype if args.dtype in inference.WEIGHT_PRECISIONS else None)
    if isinstance(model, BareModel):
        weights = inference.inference_weight_bytes(model, precision) if precision else None
        kv = args.kv_bytes or 0.0
        what = (f"{model.params:g} params, batch {args.batch}, {precision or args.dtype} weights, KV "
                + (f"{kv:g} B (--kv-bytes)" if args.kv_bytes is not None else
                   "not counted (a bare --params has no layers: name the model with --model or --config)"))
        return roofline.decode(model.params, args.batch, args.dtype, kv, weights, what=what)
    if args.kv_bytes is not None:
        raise roofline.RooflineError(f"--kv-bytes: {model.name}'s KV cache is counted from --batch, --context and "
                                     "--kv-dtype; give --kv-bytes only with --params")
    counts = count_params(model)
    # A token runs through its active parameters only (a MoE's top-k experts): 2 FLOPs per active parameter.
    params = counts.active
    # Weights read once per step; of a MoE's routed experts, those its tokens reach. At a --dtype that is no
    # weight format (fp8 compute, say) every weight is taken at that element size.
    fmt = inference.weight_format(model, precision) if precision else None
    read = inference.decode_weight_bytes(model, fmt or wf.FORMATS["bf16"], args.batch)
    weight_bytes = read if fmt is not None else read / 2 * accounting.element_bytes(args.dtype)
    kv = inference.kv_cache_bytes(model, args.batch, args.context, inference.kv_dtype_bytes(args.kv_dtype),
                                  args.mla_cache)
    attention = inference.attention_flops(model, args.batch, args.context)
    beyond = f" (beyond its {model.max_context} tokens)" if model.max_context and args.context > model.max_context \
        else ""
    routed = (f", the routed experts its {args.batch} token(s) reach (uniform routing)"
              if counts.active != counts.total else "")
    what = (f"{model.name}, batch {args.batch} x {args.context} tokens{beyond}: weights {weight_bytes:,.0f} B "
            f"({precision or args.dtype}{routed}) + KV cache {kv:,} B ({args.kv_dtype})")
    return roofline.decode(params, args.batch, args.dtype, kv, weight_bytes, attention, what)


def _roofs(args: argparse.Namespace) -> roofline.Roofs:
    if args.probe:
        where = f"--probe {label(args.probe)}"
        try:
            # Bounded (a device or pipe reports size 0), strict UTF-8, nesting bounded, no NaN/Infinity.
            data = load_json_file(args.probe, where, cap=PROBE_CAP)
            results.check_header(data, where)
            check_probe_shape(data, where)
            return roofline.probe_roofs(results.check_document(data, where), where)
        except ValueError as exc:  # InputError is one
            raise roofline.RooflineError(str(exc)) from None
    if args.gpu:
        spec = specs.find_spec(args.gpu) if len(args.gpu) <= 200 else None
        if spec is None:
            known = ", ".join(s.id for s in specs.load())
            raise roofline.RooflineError(f"--gpu {shorten(args.gpu)}: unknown GPU; expected one of {known}")
        return roofline.spec_roofs(spec)
    return _this_gpu()


def _this_gpu() -> roofline.Roofs:
    try:
        import torch

        available = bool(torch.cuda.is_available())
    except Exception:
        available = False
    if not available:
        raise roofline.RooflineError("no GPU here: name one with --gpu (e.g. --gpu H100-SXM) or give measured "
                                     "roofs with --probe FILE (from `python -m harness probe --out FILE`)")
    props = torch.cuda.get_device_properties(0)
    match = specs.match_spec(props.name, int(props.multi_processor_count), int(props.total_memory))
    if match.spec is None:
        raise roofline.RooflineError(f"{match.reason}; name a GPU with --gpu or use --probe FILE")
    return roofline.spec_roofs(match.spec)


def run(args: argparse.Namespace) -> int:
    """Answer the question, as text or JSON."""
    try:
        result = roofline.analyze(_operation(args), _roofs(args), args.measured_ms)
    except (roofline.RooflineError, MemoryInputError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    print(dumps_json(finite_or_null(encode(result)), indent=2) if args.json else render_roofline(result))
    return EXIT_OK
