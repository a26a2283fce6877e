"""The prediction as its versioned document, `refenv.memory` version 1 of kind "training" or "inference".

Records of what `python -m harness memory --json` prints: the model and the run's settings, each ledger
per GPU, the peak and each phase's high point, the budget's judgement and the OOM ladder's plans.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from harness.memory import sharding
from harness.memory.budget import CUDA_CONTEXT_BYTES, FRAGMENTATION, Fit
from harness.memory.estimate import Estimate, InferSetup, Ledgers, TrainSetup
from harness.memory.ladder import Plan
from harness.memory.params import count_params
from harness.memory.shape import BareModel, Model, layer_groups
from harness.schema.jsondata import encode, optional_key
from harness.schema.memory_document import MEMORY_SCHEMA, MEMORY_VERSION

# ModelConfig's fields the document writes in brief (per kind of layer, by name) rather than whole.
_STRUCTURED = frozenset({"layer_plan", "vision", "quantization", "keep_fp32", "keep_fp32_fp16", "notes",
                         "fused_experts"})
LEDGER_NAMES = ("weights", "gradients", "optimizer_state", "master_weights", "activations", "kv_cache")


@dataclass(frozen=True)
class ModelShape:
    """The model's shape and counts, as its configuration has them (a bare count has only its parameters)."""

    model: Model

    def to_dict(self) -> dict[str, object]:
        if isinstance(self.model, BareModel):
            return {"name": self.model.name, "source": self.model.source, "params": self.model.params}
        m = self.model
        counts = count_params(m)
        plain = {f.name: encode(getattr(m, f.name)) for f in fields(m) if f.name not in _STRUCTURED}
        layers = [{"layers": n, "attention": layer.attention.kind, "window": layer.attention.window or None,
                   "mlp": layer.mlp.kind, "experts": layer.mlp.experts or None, "description": layer.label}
                  for layer, n in layer_groups(m)]
        return {**plain, "layer_kinds": layers, "quantization": m.quantization.name if m.quantization else None,
                "keep_fp32": sorted(m.keep_fp32), "keep_fp32_fp16": sorted(m.keep_fp32_fp16), "notes": list(m.notes),
                "params": counts.total, "active_params": counts.active, "vision_params": counts.vision}


@dataclass(frozen=True)
class Settings:
    """The run's settings as given; training adds its effective batch, its sharding's implementation and LoRA."""

    setup: TrainSetup | InferSetup

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = encode(self.setup)
        if isinstance(self.setup, TrainSetup):
            impl = sharding.implementation(self.setup.sharding, self.setup.impl)
            lora = self.setup.lora
            d.update(effective_batch=self.setup.effective_batch, implementation=impl,
                     implementation_source=sharding.IMPL_SOURCES.get(impl),
                     lora=None if lora is None else {"rank": lora.rank, "targets": list(lora.targets),
                                                     "qlora": lora.qlora})
        return d


@dataclass(frozen=True)
class Peak:
    """The peak a budget is judged against, and (training) each phase's high point."""

    peak_bytes: int
    phase: str
    forward_bytes: int | None = optional_key()
    backward_bytes: int | None = optional_key()
    optimizer_step_bytes: int | None = optional_key()
    logits_bytes: int | None = optional_key()
    logits_grad_bytes: int | None = optional_key()
    recompute_bytes: int | None = optional_key()
    fp32_grad_copy_bytes: int | None = optional_key()
    optimizer_temp_bytes: int | None = optional_key()

    @classmethod
    def of(cls, est: Estimate) -> Peak:
        ph = est.phases
        if ph is None:
            return cls(est.peak_bytes, "serving")
        return cls(est.peak_bytes, ph.phase, ph.forward, ph.backward, ph.optimizer_step, ph.logits_bytes,
                   ph.logits_grad_bytes, ph.recompute_bytes, ph.fp32_grad_copy_bytes, ph.optimizer_temp_bytes)


@dataclass(frozen=True)
class BudgetFit:
    """The budget judgement, bytes as integers."""

    name: str
    source: str
    total_bytes: int
    cuda_context_bytes: int
    fragmentation_margin_bytes: int
    usable_bytes: int
    required_bytes: int
    headroom_bytes: int
    fits: bool

    @classmethod
    def of(cls, fit: Fit | None) -> BudgetFit | None:
        if fit is None:
            return None
        return cls(fit.budget.name, fit.budget.source, fit.budget.total_bytes, fit.cuda_context_bytes,
                   fit.fragmentation_margin_bytes, fit.usable_bytes, fit.required_bytes, fit.headroom_bytes, fit.fits)


def ledgers_dict(led: Ledgers) -> dict[str, int | None]:
    """Each ledger as `<name>_bytes`, and the total."""
    out: dict[str, int | None] = {f"{key}_bytes": getattr(led, key) for key in LEDGER_NAMES}
    out["total_bytes"] = led.total
    return out


@dataclass(frozen=True)
class Assumptions:
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES
    fragmentation_margin: float = FRAGMENTATION
    cuda_context_source: str = "facts/memory.md: ~300 MB with lazy module loading"


@dataclass(frozen=True)
class PlanRung:
    """One rung of the OOM ladder: the change, its cost, and what it predicts."""

    rung: int
    title: str
    change: str
    cost: str
    setup: Settings
    ledgers: dict[str, int | None]
    peak: Peak
    budget: BudgetFit | None
    fits: bool


@dataclass(frozen=True)
class Prediction:
    """The whole prediction document."""

    schema: str
    version: int
    kind: str
    model: ModelShape
    setup: Settings
    params: int
    trainable_params: int
    ledgers: dict[str, int | None]
    peak: Peak
    budget: BudgetFit | None
    assumptions: Assumptions
    notes: tuple[str, ...]
    plans: tuple[PlanRung, ...] | None


def document(est: Estimate, fit: Fit | None, plans: tuple[Plan, ...] | None = None) -> Prediction:
    """The versioned document `{"schema": "refenv.memory", "version": 1, "kind": "training", ...}`."""
    rungs = None if plans is None else tuple(
        PlanRung(p.rung, p.title, p.change, p.cost, Settings(p.estimate.setup), ledgers_dict(p.estimate.ledgers),
                 Peak.of(p.estimate), BudgetFit.of(p.fit), p.fit.fits) for p in plans)
    return Prediction(MEMORY_SCHEMA, MEMORY_VERSION, est.mode, ModelShape(est.model), Settings(est.setup), est.params,
                      est.trainable_params, ledgers_dict(est.ledgers), Peak.of(est), BudgetFit.of(fit), Assumptions(),
                      tuple(est.notes), rungs)
