"""`python -m harness memory`: predict every ledger, judge the fit, plan the way out of an OOM, or verify."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.inputs import InputError, dumps_json, finite_or_null, float_arg, int_arg, shorten
from harness.memory import activations, inference, optimizers, sharding
from harness.memory.budget import Budget, gpu_budget, gpu_table, judge, parse_budget
from harness.memory.estimate import InferSetup, TrainSetup, estimate_inference, estimate_training
from harness.memory.ladder import ladder
from harness.memory.lora import DEFAULT_TARGETS, LoraSpec, resolve_targets
from harness.memory.output import render_text
from harness.memory.params import count_params
from harness.memory.prediction import document
from harness.memory.presets import load_config_file, preset, presets
from harness.memory.shape import BareModel, MemoryInputError, Model, bare_model
from harness.memory.training import REGIMES
from harness.schema import EXIT_FAILING, EXIT_HARNESS_ERROR, EXIT_OK, PASS, encode

# Input bounds: far beyond any real model or run, small enough that no loop or product runs away.
MAX_PARAMS = 1e15
MAX_COUNT = 100_000_000


def register(subparsers: Any) -> None:
    """Add the `memory` command."""
    p = subparsers.add_parser(
        "memory", help="memory arithmetic: ledgers of training/inference, fit, OOM ladder, verification",
        description="Predict weights, gradients, optimizer state, master weights, activations and KV cache; "
        "judge them against a GPU or a budget; --fit proposes the OOM ladder; --verify measures a real "
        "transformer step and compares.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help=f"a named model ({', '.join(sorted(presets()))})")
    src.add_argument("--config", metavar="PATH", help="an HF-style config.json")
    src.add_argument("--params", type=float_arg(1, MAX_PARAMS), metavar="N", help="a bare parameter count, e.g. 7e9")
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
    p.add_argument("--weights", choices=inference.WEIGHT_PRECISIONS, default="bf16", help="inference weights")
    p.add_argument("--kv-dtype", choices=tuple(inference.KV_DTYPES), default="bf16")
    p.add_argument("--batch", type=int_arg(1, MAX_COUNT), default=1, help="inference batch")
    p.add_argument("--context", type=int_arg(1, MAX_COUNT), default=4096,
                   help="inference context (tokens per sequence)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--gpu", help="judge against a named GPU, e.g. H100-SXM")
    target.add_argument("--budget", help="judge against a byte budget, e.g. 24GiB")
    p.add_argument("--fit", action="store_true", help="when it does not fit, propose the OOM ladder")
    p.add_argument("--json", action="store_true", help="print the versioned JSON document")
    p.add_argument("--list", choices=("models", "gpus"), help="list the named models or GPUs")
    p.add_argument("--verify", action="store_true", help="measure a real transformer step and compare")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="for --verify")
    p.add_argument("--full", action="store_true", help="for --verify: every size and regime, not the quick set")
    p.set_defaults(func=run)


def _model(args: argparse.Namespace) -> Model:
    if args.model:
        return preset(args.model)
    if args.config:
        return load_config_file(args.config)
    if args.params is not None:
        return bare_model(args.params)
    raise MemoryInputError("name a model: --model NAME, --config config.json or --params 7e9")


def _setup(args: argparse.Namespace, model: Model) -> TrainSetup | InferSetup:
    if args.mode == "infer":
        return InferSetup(weights=args.weights, kv_dtype=args.kv_dtype, batch=args.batch, context=args.context,
                          attention=args.attention, gpus=args.gpus)
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
                      adam8bit_block=args.adam8bit_block, impl=args.impl)


def _budget(args: argparse.Namespace) -> Budget | None:
    if args.gpu:
        return gpu_budget(args.gpu)
    if args.budget:
        return parse_budget(args.budget)
    return None


def _check_text_options(args: argparse.Namespace) -> None:
    """Names and paths are short printable text: a 5,000-character or multi-line value is a mistake."""
    for option, longest in (("model", 200), ("config", 4096), ("gpu", 200), ("budget", 200), ("lora_targets", 1000)):
        value = getattr(args, option, None)
        if isinstance(value, str) and (len(value) > longest or not value.isprintable()):
            flag = "--" + option.replace("_", "-")
            raise MemoryInputError(f"{flag}: expected a short name or path, got {shorten(value)}")


def _list(what: str) -> str:
    if what == "models":
        rows = [f"{name:<14} {count_params(p.config).total:>15,d} params  {p.source}" for name, p in presets().items()]
        return "\n".join(rows)
    gpus = sorted({display: (size, source) for display, size, source in gpu_table().values()}.items())
    return "\n".join(f"{n:<18} {s / (1 << 30):>7.2f} GiB  {src}" for n, (s, src) in gpus)


def _verify(args: argparse.Namespace) -> int:
    from harness.memory.verify import render_verification, run_verification

    doc = run_verification(quick=not args.full, device=args.device)
    print(dumps_json(finite_or_null(encode(doc)), indent=2) if args.json else render_verification(doc))
    return EXIT_OK if doc.status == PASS else EXIT_FAILING


def run(args: argparse.Namespace) -> int:
    """Exit 0 when it fits (or no budget was given, or --fit found a rung that fits), 1 when it does not, 2 on
    bad input."""
    try:
        _check_text_options(args)
        if args.list:
            print(_list(args.list))
            return EXIT_OK
        if args.verify:
            return _verify(args)
        model = _model(args)
        setup = _setup(args, model)
        est = estimate_training(model, setup) if isinstance(setup, TrainSetup) else estimate_inference(model, setup)
        budget = _budget(args)
        fit = judge(est.peak_bytes, budget) if budget else None
        plans = ladder(model, setup, budget) if args.fit else None
    except (MemoryInputError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    print(dumps_json(finite_or_null(encode(document(est, fit, plans))), indent=2) if args.json
          else render_text(est, fit, plans))
    if fit is None or fit.fits or (plans and plans[-1].fit.fits):
        return EXIT_OK
    return EXIT_FAILING
