"""`python -m harness memory`: predict every ledger, judge the fit, plan the way out of an OOM, or verify."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.inputs import InputError, dumps_json, finite_or_null, int_arg, shorten
from harness.memory import activations, flags, optimizers, sharding
from harness.memory.budget import Budget, gpu_budget, gpu_table, judge, parse_budget
from harness.memory.estimate import InferSetup, TrainSetup, estimate_inference, estimate_training
from harness.memory.ladder import ladder
from harness.memory.lora import DEFAULT_TARGETS, LoraSpec, resolve_targets
from harness.memory.output import render_text
from harness.memory.params import count_params
from harness.memory.picture import render_html, render_svg
from harness.memory.prediction import document
from harness.memory.presets import presets
from harness.memory.shape import BareModel, MemoryInputError, Model
from harness.memory.training import REGIMES
from harness.schema import EXIT_FAILING, EXIT_HARNESS_ERROR, EXIT_OK, PASS, encode

# Input bounds: far beyond any real model or run, small enough that no loop or product runs away.
MAX_COUNT = flags.MAX_COUNT
FORMATS = ("text", "json", "html", "svg")


def register(subparsers: Any) -> None:
    """Add the `memory` command."""
    p = subparsers.add_parser(
        "memory", help="memory arithmetic: ledgers of training/inference, fit, OOM ladder, verification",
        description="Predict weights, gradients, optimizer state, master weights, activations and KV cache; "
        "judge them against a GPU or a budget; --fit proposes the OOM ladder; --verify measures a real "
        "transformer step and compares.")
    flags.add_model(p)
    p.add_argument("--mode", choices=("train", "infer"), default="train")
    p.add_argument("--regime", choices=tuple(REGIMES), default="mixed")
    p.add_argument("--optimizer", choices=optimizers.OPTIMIZERS, default=optimizers.ADAMW)
    p.add_argument("--adam8bit-block", type=int_arg(1, 1 << 30), default=optimizers.DEFAULT_8BIT_BLOCK, metavar="N")
    p.add_argument("--lora-rank", type=int_arg(0, 1 << 16), default=0, metavar="R",
                   help="train LoRA adapters of rank R")
    p.add_argument("--lora-targets", default=DEFAULT_TARGETS, help="q_proj,v_proj | attention | all-linear | ...")
    p.add_argument("--qlora", action="store_true", help="NF4 base weights (implies LoRA, rank 16 by default)")
    p.add_argument("--sharding", choices=sharding.SHARDINGS, default=None)
    p.add_argument("--impl", choices=sharding.IMPLS, default=sharding.PAPER,
                   help="which ZeRO the figure models: the paper's count or DeepSpeed's implementation")
    p.add_argument("--gpus", type=int_arg(1, 1 << 20), default=1, metavar="N")
    p.add_argument("--micro-batch", type=int_arg(1, MAX_COUNT), default=1, metavar="B")
    p.add_argument("--seq", type=int_arg(1, MAX_COUNT), default=2048, metavar="S", help="training sequence length")
    p.add_argument("--grad-accum", type=int_arg(1, MAX_COUNT), default=1, metavar="K")
    p.add_argument("--attention", choices=activations.ATTENTIONS, default="flash")
    p.add_argument("--checkpointing", choices=activations.CHECKPOINTING, default="none")
    flags.add_serving(p, "the checkpoint's own (its quantization_config), else bf16")
    p.add_argument("--ep", type=int_arg(1, 1 << 16), default=1, metavar="N",
                   help="expert parallelism: the routed experts of a MoE model split over N GPUs")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--gpu", help="judge against a named GPU, e.g. H100-SXM")
    target.add_argument("--budget", help="judge against a byte budget, e.g. 24GiB")
    p.add_argument("--fit", action="store_true", help="when it does not fit, propose the OOM ladder")
    p.add_argument("--json", action="store_true", help="print the versioned JSON document (--format json)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text (default), json, or the ledgers drawn against the budget: html (a page) or svg")
    p.add_argument("--list", choices=("models", "gpus"), help="list the named models or GPUs")
    p.add_argument("--verify", action="store_true", help="measure a real transformer step and compare")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="for --verify")
    p.add_argument("--full", action="store_true", help="for --verify: every size and regime, not the quick set")
    p.set_defaults(func=run)


def _setup(args: argparse.Namespace, model: Model) -> TrainSetup | InferSetup:
    if args.mode == "infer":
        return InferSetup(weights=args.weights, kv_dtype=args.kv_dtype, batch=args.batch, context=args.context,
                          attention=args.attention, gpus=args.gpus, ep=args.ep, mla_cache=args.mla_cache)
    lora = None
    if args.lora_rank or args.qlora:
        if isinstance(model, BareModel):
            raise MemoryInputError("LoRA/QLoRA needs the model's layers: use --model or --config, not --params")
        lora = LoraSpec(rank=args.lora_rank or 16, targets=resolve_targets(model, args.lora_targets),
                        qlora=args.qlora)
    shard = args.sharding or (sharding.DDP if args.gpus > 1 else sharding.NONE)
    return TrainSetup(regime=args.regime, optimizer=args.optimizer, lora=lora, sharding=shard, gpus=args.gpus,
                      micro_batch=args.micro_batch, seq_len=args.seq, attention=args.attention,
                      checkpointing=args.checkpointing, grad_accum=args.grad_accum,
                      adam8bit_block=args.adam8bit_block, impl=args.impl, ep=args.ep)


def _budget(args: argparse.Namespace) -> Budget | None:
    if args.gpu is not None:
        return gpu_budget(args.gpu)
    if args.budget is not None:
        return parse_budget(args.budget)
    return None


def _check_text_options(args: argparse.Namespace) -> None:
    """Names and paths are short printable text: a 5,000-character or multi-line value is a mistake."""
    for option, longest, what in (("model", 200, "a model name such as llama-3-8b"),
                                  ("config", 4096, "the path of a config.json"),
                                  ("gpu", 200, "a GPU name such as H100-SXM (--list gpus)"),
                                  ("budget", 200, "a size such as 24GiB"),
                                  ("lora_targets", 1000, "module names such as q_proj,v_proj")):
        value = getattr(args, option, None)
        flag = "--" + option.replace("_", "-")
        if isinstance(value, str) and not value.strip():
            raise MemoryInputError(f"{flag}: empty; expected {what}")
        if isinstance(value, str) and (len(value) > longest or not value.isprintable()):
            raise MemoryInputError(f"{flag}: expected a short name or path, got {shorten(value)}")


def _list(what: str, as_json: bool) -> str:
    """The named models or GPUs, as lines or (with --json) a versioned document of their rows."""
    rows: list[dict[str, str | int]]  # a name, a figure, its source
    if what == "models":
        rows = [{"name": name, "params": count_params(p.config).total, "active_params": count_params(p.config).active,
                 "source": p.source} for name, p in presets().items()]
        lines = [f"{r['name']:<18} {r['params']:>17,d} params" + (
                 f" ({r['active_params']:,d} active)" if r["active_params"] != r["params"] else "") + f"  {r['source']}"
                 for r in rows]
    else:
        gpus = sorted({display: (size, source) for display, size, source in gpu_table().values()}.items())
        rows = [{"name": n, "memory_bytes": size, "source": src} for n, (size, src) in gpus]
        lines = [f"{n:<18} {size / (1 << 30):>7.2f} GiB  {src}" for n, (size, src) in gpus]
    if as_json:
        return dumps_json({"schema": "refenv.memory.list", "version": 1, "kind": what, what: rows}, indent=2)
    return "\n".join(lines)


def _format(args: argparse.Namespace) -> str:
    """--format, or json for --json; the two cannot disagree."""
    if args.json and args.format not in (None, "json"):
        raise MemoryInputError(f"--json and --format {args.format} disagree: give one of them")
    return "json" if args.json else (args.format or "text")


def _verify(args: argparse.Namespace, fmt: str) -> int:
    from harness.memory.verify import render_verification, run_verification

    if fmt in ("html", "svg"):
        raise MemoryInputError(f"--format {fmt} draws a prediction; --verify prints text or json")
    doc = run_verification(quick=not args.full, device=args.device)
    print(dumps_json(finite_or_null(encode(doc)), indent=2) if fmt == "json" else render_verification(doc))
    return EXIT_OK if doc.status == PASS else EXIT_FAILING


def run(args: argparse.Namespace) -> int:
    """Exit 0 when it fits (or no budget was given, or --fit found a rung that fits), 1 when it does not, 2 on
    bad input."""
    try:
        _check_text_options(args)
        fmt = _format(args)
        if args.list:
            if fmt in ("html", "svg"):
                raise MemoryInputError(f"--format {fmt} draws a prediction; --list prints text or json")
            print(_list(args.list, fmt == "json"))
            return EXIT_OK
        if args.verify:
            return _verify(args, fmt)
        model = flags.model_of(args)
        setup = _setup(args, model)
        est = estimate_training(model, setup) if isinstance(setup, TrainSetup) else estimate_inference(model, setup)
        budget = _budget(args)
        fit = judge(est.peak_bytes, budget) if budget else None
        plans = ladder(model, setup, budget) if args.fit else None
    except (MemoryInputError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    if fmt == "json":
        print(dumps_json(finite_or_null(encode(document(est, fit, plans))), indent=2))
    elif fmt in ("html", "svg"):
        print(render_html(est, fit, plans) if fmt == "html" else render_svg(est, fit, plans))
    else:
        print(render_text(est, fit, plans))
    if fit is None or fit.fits or (plans and plans[-1].fit.fits):
        return EXIT_OK
    return EXIT_FAILING
