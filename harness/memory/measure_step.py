"""Measure one probe training step: exact storage accounting on the CPU, the caching allocator on a GPU.

CPU: unique storages (deduplicated by data pointer) of parameters, master copies, `.grad`s and optimizer
state, and of what autograd saves for backward (`torch.autograd.graph.saved_tensors_hooks`), excluding
parameters and the inputs. GPU: `torch.cuda.memory_allocated()` after weights, forward, backward and step,
relative to a baseline taken after a warm-up step (so cuBLAS workspaces are excluded: facts/memory.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from harness.memory.alloc_trace import allocation_trace
from harness.memory.probe_model import build_probe
from harness.memory.probe_predict import ProbeCase, expand_kv
from harness.schema.memory_document import StepMeasurement

_PHASES = {"master_weights": "after_master_weights", "activations": "after_forward",
           "gradients": "after_backward", "optimizer_state": "after_step"}


def _storages(tensors: Iterable[Any]) -> dict[int, int]:
    """data pointer -> bytes, one entry per distinct storage."""
    out: dict[int, int] = {}
    for t in tensors:
        if t is None:
            continue
        st = t.untyped_storage()
        out[st.data_ptr()] = st.nbytes()
    return out


def _optimizer(name: str, params: list[Any]) -> Any:
    """The optimizer as torch runs it on a GPU: foreach (its CUDA default) on every device."""
    import torch

    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-3, foreach=True)
    raise ValueError(f"the probe has no optimizer {name!r}")


def _state_tensors(opt: Any) -> Iterator[Any]:
    import torch

    for state in opt.state.values():
        yield from (v for v in state.values() if isinstance(v, torch.Tensor))


def _dtype(case: ProbeCase) -> Any:
    import torch

    return torch.float32 if case.precision in ("fp32", "amp") else torch.bfloat16


def _inputs(case: ProbeCase, device: str) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1)
    shape = (case.micro_batch, case.seq_len)
    ids = torch.randint(0, case.cfg.vocab_size, shape, generator=g)
    tgt = torch.randint(0, case.cfg.vocab_size, shape, generator=g)
    return ids.to(device), tgt.to(device)


@dataclass(frozen=True)
class Held:
    """What a phase of the step leaves alive, for the measurement to count (torch objects)."""

    masters: Any = None
    loss: Any = None
    params: Any = None
    opt: Any = None


def _run(name: str, fn: Callable[[], Any]) -> Any:
    return fn()


def _step(case: ProbeCase, model: Any, ids: Any, tgt: Any, phase: Callable[[str, Held], None],
          saved: contextlib.AbstractContextManager[Any],
          run: Callable[[str, Callable[[], Any]], Any] = _run) -> None:
    """Forward, backward, optimizer step; `phase(name, objects)` is called after each, `run` runs each."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    masters: list[Any] = []
    if case.precision == "mixed" and case.lora is None:
        masters = [p.detach().float() for p in params]  # fp32 master weights, stepped by the optimizer
    phase("master_weights", Held(masters=masters))
    opt = _optimizer(case.optimizer, masters or params)

    def forward() -> Any:
        # torch's own mixed-precision recipe: fp32 parameters, the forward under bf16 autocast.
        amp = torch.autocast(ids.device.type, dtype=torch.bfloat16) if case.precision == "amp" else None
        with saved, amp or contextlib.nullcontext():
            return model(ids, tgt)

    loss = run("forward", forward)
    phase("activations", Held(loss=loss))
    run("backward", loss.backward)
    phase("gradients", Held(loss=loss, params=params))
    del loss

    def step() -> None:
        if masters:
            for m, p in zip(masters, params):  # noqa: B905  (strict= is 3.10+)
                m.grad = p.grad.float()
        opt.step()
        if masters:
            for m, p in zip(masters, params):  # noqa: B905
                m.grad = None  # the fp32 gradient copies live only for the step
                p.detach().copy_(m)

    run("optimizer_step", step)
    phase("optimizer_state", Held(opt=opt, params=params))


def _build(case: ProbeCase, device: str) -> Any:
    """The probe for a case: LoRA by the probe's own layer, or by PEFT for the peft-lora regime."""
    if case.regime == "peft-lora":
        from harness.memory.probe_model import build_peft_probe

        lora = case.lora
        assert lora is not None
        return build_peft_probe(case.cfg, attention=case.attention, dtype=_dtype(case), rank=lora.rank,
                                targets=lora.targets)
    return build_probe(case.cfg, attention=case.attention, dtype=_dtype(case),
                       lora_rank=case.lora_rank if case.lora else 0, expand_kv=expand_kv(case, device),
                       checkpointing=case.checkpointing == "full")


def measure_cpu(case: ProbeCase) -> StepMeasurement:
    """Exact bytes of every ledger on the CPU, by storage, and what each phase adds at its high point."""
    import torch

    model = _build(case, "cpu")
    ids, tgt = _inputs(case, "cpu")
    all_params = list(model.parameters())
    ledgers: dict[str, int] = {"weights": sum(_storages(all_params).values())}
    excluded = set(_storages([*all_params, ids, tgt]))
    saved: dict[int, int] = {}
    phases: dict[str, dict[str, int]] = {}

    def pack(x: Any) -> Any:
        st = x.untyped_storage()
        if st.data_ptr() not in excluded:
            saved[st.data_ptr()] = st.nbytes()
        return x

    def phase(name: str, objs: Held) -> None:
        if name == "master_weights":
            ledgers[name] = sum(_storages(objs.masters).values())
            excluded.update(_storages(objs.masters))
        elif name == "activations":
            if case.checkpointing == "full":
                # What checkpointed blocks keep is not saved through the hooks: count what forward left
                # allocated, less the 0-dim fp32 loss.
                ledgers[name] = phases["forward"]["net_bytes"] - objs.loss.untyped_storage().nbytes()
            else:
                ledgers[name] = sum(saved.values())
        elif name == "gradients":
            ledgers[name] = sum(_storages(p.grad for p in objs.params).values())
        else:
            ledgers[name] = sum(_storages(_state_tensors(objs.opt)).values())

    def run(name: str, fn: Callable[[], Any]) -> Any:
        traced = allocation_trace(fn)
        if traced is None:
            return fn()
        out, peak, net = traced
        phases[name] = {"peak_bytes": peak, "net_bytes": net}
        return out

    _step(case, model, ids, tgt, phase, torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x), run)
    # PEFT wraps each adapted Linear: its base weight is `<module>.base_layer.weight`.
    names = [(n.replace(".base_layer.", "."), tuple(p.shape)) for n, p in model.named_parameters()]
    return StepMeasurement(ledgers, tuple(names), phases, saved_storages=len(saved))


def measure_cuda(case: ProbeCase) -> StepMeasurement:
    """Bytes of every ledger on the current GPU by `memory_allocated`, and the step's peak."""
    import torch

    dev = "cuda"
    ids, tgt = _inputs(case, dev)
    # A warm-up step on a throwaway copy allocates cuBLAS workspaces and kernels' one-time buffers.
    warm = _build(case, dev).to(dev)
    _step(case, warm, ids, tgt, lambda name, objs: None, contextlib.nullcontext())
    del warm
    gc.collect()
    torch.cuda.synchronize()
    model = _build(case, dev)
    base = torch.cuda.memory_allocated()
    model.to(dev)
    torch.cuda.synchronize()
    marks = {"weights": torch.cuda.memory_allocated() - base}
    # memory_allocated and the peak since the previous phase, both relative to the baseline.
    phases = {"after_weights": {"allocated_bytes": marks["weights"],
                                "peak_bytes": torch.cuda.max_memory_allocated() - base}}
    last = [torch.cuda.memory_allocated()]
    torch.cuda.reset_peak_memory_stats()
    loss_block = 512  # the 0-dim loss, alive from forward until after backward

    def phase(name: str, objs: Held) -> None:
        torch.cuda.synchronize()
        now = torch.cuda.memory_allocated()
        phases[_PHASES[name]] = {"allocated_bytes": now - base, "peak_bytes": torch.cuda.max_memory_allocated() - base}
        torch.cuda.reset_peak_memory_stats()
        if name == "activations":
            marks[name] = now - last[0] - loss_block
            return  # the next delta (gradients) is measured from before the forward
        if name == "gradients":
            marks[name] = now - last[0] - loss_block
            last[0] = now - loss_block  # the loss is released right after this phase
        else:
            marks[name] = now - last[0]
            last[0] = now

    _step(case, model, ids, tgt, phase, contextlib.nullcontext())
    peak = max(p["peak_bytes"] for p in phases.values())
    # What each phase added at its high point over what was allocated when it began.
    order = [("forward", "after_master_weights", "after_forward"), ("backward", "after_forward", "after_backward"),
             ("optimizer_step", "after_backward", "after_step")]
    deltas = {name: {"peak_bytes": phases[end]["peak_bytes"] - phases[start]["allocated_bytes"]}
              for name, start, end in order}
    names = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    del model
    gc.collect()
    return StepMeasurement(marks, tuple(names), deltas, peak_bytes=peak, phases=phases)
