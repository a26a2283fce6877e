"""The prediction as text (its document is harness/memory/prediction.py)."""

from __future__ import annotations

from harness.memory import optimizers, sharding
from harness.memory.budget import FRAGMENTATION, Fit
from harness.memory.estimate import Estimate, TrainSetup, describe_regime
from harness.memory.ladder import Plan
from harness.memory.params import count_params
from harness.memory.shape import ModelConfig

_LEDGERS = (("weights", "weights"), ("gradients", "gradients"), ("optimizer_state", "optimizer state"),
            ("master_weights", "master weights"), ("activations", "activations"), ("kv_cache", "KV cache"))


def human(n: int | None) -> str:
    """Bytes as GiB/MiB/KiB with two decimals."""
    if n is None:
        return "unknown"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{sign}{n / size:.2f} {unit}"
    return f"{sign}{n} B"


def describe(est: Estimate) -> list[str]:
    """The run's setup, a line each (regime, optimizer, sharding, batch; or format, batch, context)."""
    s = est.setup
    if isinstance(s, TrainSetup):
        lora = "" if s.lora is None else (
            f", {'QLoRA' if s.lora.qlora else 'LoRA'} r={s.lora.rank} on {','.join(s.lora.targets)}")
        return [
            f"training: {describe_regime(s.regime)}",
            f"optimizer: {optimizers.DESCRIPTIONS[s.optimizer]}{lora}",
            f"sharding: {sharding.DESCRIPTIONS[s.sharding]}" + (f" x {s.gpus} GPUs" if s.gpus > 1 else "")
            + (f", routed experts over {s.ep} (expert parallel)" if s.ep > 1 else ""),
            *([f"  {sharding.IMPL_SOURCES[impl]}"] if (impl := sharding.implementation(s.sharding, s.impl))
              in sharding.IMPL_SOURCES else []),
            f"micro-batch {s.micro_batch} x seq {s.seq_len}, {s.attention} attention, checkpointing {s.checkpointing},"
            f" accumulation {s.grad_accum} -> effective batch {s.effective_batch}",
        ]
    return [f"inference: {est.weight_format}, KV cache {s.kv_dtype}",
            f"batch {s.batch} x context {s.context}, {s.attention} attention"
            + (f", {s.gpus} GPUs" if s.gpus > 1 else "") + (f", experts over {s.ep} GPUs" if s.ep > 1 else "")]


def _ledger_lines(est: Estimate, indent: str = "  ") -> list[str]:
    led, lines = est.ledgers, []
    for key, label in _LEDGERS:
        value = getattr(led, key)
        if value == 0 and key in ("master_weights", "kv_cache", "gradients", "optimizer_state"):
            continue
        exact = "" if value is None else f"{value:>18,d} B"
        lines.append(f"{indent}{label:<16}{human(value):>12}{exact}")
        if key == "kv_cache":
            lines += [f"{indent}  {p.layers:>3} x {p.label}: {p.tokens:,d} tokens x {p.bytes_per_token:,d} B "
                      f"-> {human(p.bytes)}" for p in est.kv_parts]
    lines.append(f"{indent}{'sum per GPU':<16}{human(led.total):>12}{led.total:>18,d} B")
    ph = est.phases
    if ph is not None:
        for label, value, extra in (
                ("forward", ph.forward, f"with the logits {human(ph.logits_bytes)}"),
                ("backward", ph.backward, f"with d(logits) {human(ph.logits_grad_bytes)}"
                 + (f" or a recomputed layer {human(ph.recompute_bytes)}" if ph.recompute_bytes else "")),
                ("optimizer step", ph.optimizer_step, f"fp32 grad copies {human(ph.fp32_grad_copy_bytes)}, "
                                                      f"optimizer temporaries {human(ph.optimizer_temp_bytes)}")):
            lines.append(f"{indent}  {label:<14}{human(value):>12}{value:>18,d} B  {extra}".rstrip())
    lines.append(f"{indent}{'peak per GPU':<16}{human(est.peak_bytes):>12}{est.peak_bytes:>18,d} B"
                 + (f"  (in the {ph.phase.replace('_', ' ')})" if ph else ""))
    return lines


def _fit_lines(fit: Fit) -> list[str]:
    b = fit.budget
    verdict = (f"fits, with {human(fit.headroom_bytes)} to spare" if fit.fits
               else f"does NOT fit: short by {human(-fit.headroom_bytes)}")
    return [f"{b.name}: {human(b.total_bytes)} - CUDA context {human(fit.cuda_context_bytes)} - "
            f"fragmentation margin {FRAGMENTATION:.0%} {human(fit.fragmentation_margin_bytes)} = usable "
            f"{human(fit.usable_bytes)}", f"  {verdict}"]


def render_text(est: Estimate, fit: Fit | None, plans: tuple[Plan, ...] | None = None) -> str:
    """A short human report: the setup, each ledger, the budget, the plans."""
    m = est.model
    head = f"{m.name}: {est.params / 1e9:.3f} B parameters"
    if isinstance(m, ModelConfig):
        counts = count_params(m)
        if counts.active != counts.total:
            head += f", {counts.active / 1e9:.3f} B active per token"
        if counts.vision:
            head += f" (vision tower {counts.vision / 1e9:.3f} B)"
    if est.trainable_params and est.trainable_params != est.params:
        head += f" ({est.trainable_params / 1e6:.2f} M trainable)"
    lines = [head, *(f"  {d}" for d in describe(est)), "", *_ledger_lines(est)]
    if fit is not None:
        lines += ["", *_fit_lines(fit)]
    lines += [f"  note: {n}" for n in est.notes]
    if plans is not None:
        lines.append("")
        if not plans:
            lines.append("OOM ladder: nothing to do, it fits" if fit and fit.fits else "OOM ladder: no plan")
        for p in plans:
            lines += ["", f"rung {p.rung}: {p.title} -> {'FITS' if p.fit.fits else 'still too big'}",
                      f"  change: {p.change}", f"  cost: {p.cost}", *_ledger_lines(p.estimate, "    "),
                      f"    usable {human(p.fit.usable_bytes)}, headroom {human(p.fit.headroom_bytes)}"]
        if plans and not plans[-1].fit.fits:
            lines.append("no rung fits: a smaller model, a shorter sequence, or more GPUs")
    return "\n".join(lines)
