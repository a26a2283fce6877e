"""Prediction against measurement: run the probe cases, judge each ledger, write the versioned document.

State ledgers must match exactly on the CPU and within the caching allocator's 512 B block rounding on a
GPU; activations within 5%. The GPU runs in a child process with `expandable_segments:True`, so every
block is split to its rounded size (no cached remainder is counted as allocated) and the baseline is clean.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.memory import torch_traits
from harness.memory.cases import cases
from harness.memory.params import param_tensors
from harness.memory.probe_predict import (
    LEDGERS,
    ProbeCase,
    activation_prediction,
    phase_prediction,
    rounded,
    state_allocations,
    state_prediction,
)
from harness.memory.verify_sections import cpu_sections, not_measured
from harness.schema.jsondata import decode, encode
from harness.schema.memory_document import (
    CudaMeasurements,
    LedgerCheck,
    MemoryCase,
    MemoryVerification,
    PeakCheck,
    StepMeasurement,
)
from harness.schema.outcomes import ERROR, FAIL, PASS, SKIP, worst

ACTIVATION_TOLERANCE = 0.05
# A phase's high point: on the CPU every allocation is seen, so within 2% (the optimizer step exactly, up to
# its per-tensor scalars); on a GPU within 10% (block rounding, kernels' workspaces).
PEAK_TOLERANCE = {"cpu": 0.02, "cuda": 0.10}
STEP_SCALAR_SLACK = 16   # bytes per parameter tensor: foreach's step and bias-correction scalars
ACTIVATION_MODEL = (
    "the CLI's own activation model (harness/memory/activations.py: Korthikanti et al. 2022 term by term, "
    "generalised to RMSNorm, SwiGLU, rotary, GQA, MoE routing, flash/eager attention, LoRA, autocast and "
    "checkpointing), set up as the probe runs"
)
CHILD_TIMEOUT_S = 600


def predict(case: ProbeCase, device: str) -> dict[str, tuple[int, int]]:
    """(lowest, highest) acceptable bytes per ledger: equal on the CPU, raw..rounded on a GPU."""
    state = state_prediction(case, step_scalars=device == "cpu")
    allocs = state_allocations(case)
    act = activation_prediction(case, device)
    out: dict[str, tuple[int, int]] = {}
    for ledger in LEDGERS:
        if ledger == "activations":
            out[ledger] = (act, act)
            continue
        raw = getattr(state, ledger)
        out[ledger] = (raw, sum(rounded(n) for n in allocs[ledger] if n) if device == "cuda" else raw)
    return out


def _ledger(ledger: str, low: int, high: int, got: int, device: str) -> LedgerCheck:
    if ledger == "activations":
        ratio = got / low if low else (1.0 if got == 0 else float("inf"))
        return LedgerCheck(low, got, PASS if abs(ratio - 1) <= ACTIVATION_TOLERANCE else FAIL,
                           f"within {ACTIVATION_TOLERANCE:.0%}", ratio=round(ratio, 4))
    status = PASS if low <= got <= high else FAIL
    if device == "cuda":
        return LedgerCheck(low, got, status, "between raw and 512 B-rounded blocks", predicted_rounded_bytes=high)
    return LedgerCheck(low, got, status, "exact")


def judge_case(case: ProbeCase, device: str, measured: StepMeasurement) -> MemoryCase:
    """Per-ledger predicted / measured / status for one case."""
    ledgers = {ledger: _ledger(ledger, low, high, int(measured.ledgers[ledger]), device)
               for ledger, (low, high) in predict(case, device).items()}
    detail = []
    expected = [(t.name, t.shape) for t in param_tensors(case.cfg)]
    got_names = [(n, tuple(s)) for n, s in measured.parameters if ".lora_" not in n]
    if got_names != expected:
        missing = sorted(set(expected) - set(got_names))[:5]
        extra = sorted(set(got_names) - set(expected))[:5]
        detail.append(f"parameter tensors differ from the count: missing {missing}, unexpected {extra}")
        ledgers["weights"] = dataclasses.replace(ledgers["weights"], status=FAIL)
    peaks = judge_peaks(case, device, measured.phase_deltas)
    judged = [v.status for v in ledgers.values()] + [p.status for p in peaks.values()]
    status = PASS if all(s in (PASS, SKIP) for s in judged) else FAIL
    return MemoryCase(case.name, status, ledgers, model=case.cfg.name, regime=case.regime, attention=case.attention,
                      micro_batch=case.micro_batch, seq_len=case.seq_len,
                      params=sum(t.numel for t in param_tensors(case.cfg)), peaks=peaks, detail=tuple(detail),
                      peak_bytes=measured.peak_bytes, phases=measured.phases)


def judge_peaks(case: ProbeCase, device: str, deltas: Mapping[str, Mapping[str, int]]) -> dict[str, PeakCheck]:
    """Per phase: what it added at its high point, predicted (a band) against measured."""
    out: dict[str, PeakCheck] = {}
    tol = PEAK_TOLERANCE["cuda" if device == "cuda" else "cpu"]
    for name, band in phase_prediction(case, device).items():
        if band is None or name not in deltas:
            out[name] = PeakCheck(SKIP, why="not modelled" if band is None else "no profiler")
            continue
        low, high = band
        got = int(deltas[name]["peak_bytes"])
        if name == "optimizer_step" and device != "cuda":
            lo, hi = low, high + STEP_SCALAR_SLACK * len(param_tensors(case.cfg)) + STEP_SCALAR_SLACK
            how = "exact, up to the optimizer's per-tensor scalars"
        else:
            lo, hi = round(low * (1 - tol)), round(high * (1 + tol))
            how = f"within {tol:.0%}" + ("" if low == high else f" of {low:,d}..{high:,d}")
        out[name] = PeakCheck(PASS if lo <= got <= hi else FAIL, predicted_bytes=high, predicted_low_bytes=low,
                              measured_bytes=got, tolerance=how)
    return out


def _document(device: str, quick: bool, started: float, **extra: Any) -> MemoryVerification:
    """The document; one that stops with an `error` before any case is measured is ERROR (no answer)."""
    return MemoryVerification(device=device, quick=quick, activation_tolerance=ACTIVATION_TOLERANCE,
                              activation_model=ACTIVATION_MODEL, wall_s=round(time.monotonic() - started, 3),
                              **{"status": ERROR, **extra})


def _run_cuda_child(quick: bool) -> CudaMeasurements:
    """Measure the GPU cases in a fresh process with expandable segments; its JSON on stdout."""
    env = dict(os.environ)
    env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    code = "import sys; from harness.memory.verify import child_main; sys.exit(child_main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "quick" if quick else "full"], env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"GPU measurement exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return decode(CudaMeasurements, json.loads(lines[-1]))


def child_main(argv: list[str]) -> int:
    """In the child: measure each GPU case and print one JSON object."""
    import torch

    from harness.memory.measure_step import measure_cuda

    results: dict[str, StepMeasurement] = {}
    for case in cases("cuda", quick=argv[:1] != ["full"], traits=torch_traits.probe()):
        try:
            results[case.name] = measure_cuda(case)
        except Exception as exc:  # one failing case is recorded and the others still run
            results[case.name] = StepMeasurement(error=f"{type(exc).__name__}: {exc}")
    print(json.dumps(encode(CudaMeasurements(torch.__version__, torch.cuda.get_device_name(0),
                                             os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), results))))
    return 0


def _measure_cpu(quick: bool) -> dict[str, StepMeasurement]:
    import torch

    from harness.memory.measure_step import measure_cpu

    measured = {}
    threads = torch.get_num_threads()
    # The probe's tensors are tiny: one thread is faster, and on a busy 2-core machine several times so.
    torch.set_num_threads(1)
    try:
        for case in cases("cpu", quick, torch_traits.probe()):
            try:
                measured[case.name] = measure_cpu(case)
            except Exception as exc:  # recorded per case; the others still run
                measured[case.name] = StepMeasurement(error=f"{type(exc).__name__}: {exc}")
    finally:
        torch.set_num_threads(threads)
    return measured


def run_verification(quick: bool = True, device: str = "auto") -> MemoryVerification:
    """Measure the probe on `device` (auto: cuda when available) and compare with the prediction."""
    started = time.monotonic()
    try:
        import torch
    except Exception as exc:  # a missing or broken torch is a result, not a crash
        return _document(device, quick, started, error=f"torch is not importable: {exc}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        return _document(device, quick, started, error=f"device {device!r}: expected auto, cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        return _document(device, quick, started, torch=torch.__version__,
                         error="device cuda was asked for but torch.cuda.is_available() is False")
    alloc_conf = None
    if device == "cuda":
        try:
            child = _run_cuda_child(quick)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
            return _document(device, quick, started, torch=torch.__version__, error=str(exc))
        measured, name, alloc_conf = child.results, child.device_name, child.alloc_conf
    else:
        measured, name = _measure_cpu(quick), "cpu"
    judged = []
    for case in cases(device, quick, torch_traits.probe()):
        m = measured.get(case.name, StepMeasurement(error="not measured"))
        # A case that could not be measured gave no answer (ERROR): only a measured number outside its band is
        # a disagreement (FAIL).
        judged.append(MemoryCase(case.name, ERROR, error=m.error) if m.error is not None
                      else judge_case(case, device, m))
    sections = cpu_sections(quick) if device == "cpu" else {}
    status = worst([c.status for c in judged] + [s.status for s in sections.values()]) if judged else ERROR
    return _document(device, quick, started, status=status, torch=torch.__version__, device_name=name,
                     cases=tuple(judged), alloc_conf=alloc_conf,
                     not_measured=not_measured(device, quick, torch_traits.probe()),
                     **sections)


def render_verification(doc: MemoryVerification) -> str:
    """The verification as a table: case, ledger, predicted, measured, status."""
    lines = [f"memory verification on {doc.device} ({doc.device_name}), torch {doc.torch}: "
             f"{doc.status} in {doc.wall_s} s"]
    if doc.error:
        lines.append(f"  error: {doc.error}")
    for case in doc.cases:
        lines.append(f"  {case.status}  {case.name}" + (f"  ({case.error})" if case.error else ""))
        for ledger, v in case.ledgers.items():
            extra = f" ratio {v.ratio}" if v.ratio is not None else ""
            lines.append(f"      {v.status}  {ledger:<16} predicted {v.predicted_bytes:>13,d}  "
                         f"measured {v.measured_bytes:>13,d}{extra}")
        for phase, p in (case.peaks or {}).items():
            if p.measured_bytes is None or p.predicted_bytes is None:
                lines.append(f"      {p.status}  peak of {phase} ({p.why})")
                continue
            lines.append(f"      {p.status}  {'peak of ' + phase:<16} predicted {p.predicted_bytes:>13,d}  "
                         f"measured {p.measured_bytes:>13,d} ({p.tolerance})")
        lines += [f"      {d}" for d in case.detail or ()]
    titles = {"kv_cache": "KV cache grown token by token",
              "transformers": "transformers' LlamaForCausalLM, activations",
              "families": "transformers' own classes, family by family: parameters and KV cache (exact)",
              "moe_training": "a Qwen3-MoE training step against the predicted peak",
              "sharding": "sharding over gloo, what each rank holds"}
    for name, sec in doc.sections():
        error = getattr(sec, "error", None)
        lines.append(f"  {sec.status}  {titles[name]}" + (f"  ({error})" if error else ""))
        lines += [f"      {c.status}  {c.name:<44} predicted {c.predicted_bytes:>11,d}  "
                  f"measured {c.measured_bytes:>11,d}" + (f" ratio {c.ratio}" if c.ratio is not None else "")
                  for c in sec.checks]
    for what, why in (doc.not_measured or {}).items():
        lines.append(f"  not measured: {what}: {why}")
    return "\n".join(lines)
