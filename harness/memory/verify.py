"""Prediction against measurement: run the probe cases, judge each ledger, write the versioned document.

State ledgers must match exactly on the CPU and within the caching allocator's 512 B block rounding on a
GPU; activations within 5%. The GPU runs in a child process with `expandable_segments:True`, so every
block is split to its rounded size (no cached remainder is counted as allocated) and the baseline is clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
PASS, FAIL, ERROR, NOT_MEASURED = "PASS", "FAIL", "ERROR", "NOT MEASURED"


def overall(statuses: list[str]) -> str:
    """FAIL when a measured number fell outside its band; else ERROR when something could not be measured (its
    exception is kept beside it); else PASS. Nothing measured at all is an ERROR, never a pass."""
    if FAIL in statuses:
        return FAIL
    if ERROR in statuses or not statuses:
        return ERROR
    return PASS


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


def judge_case(case: ProbeCase, device: str, measured: dict[str, Any]) -> dict[str, Any]:
    """Per-ledger predicted / measured / status for one case."""
    ledgers: dict[str, Any] = {}
    for ledger, (low, high) in predict(case, device).items():
        got = int(measured["ledgers"][ledger])
        if ledger == "activations":
            ratio = got / low if low else (1.0 if got == 0 else float("inf"))
            ok = abs(ratio - 1) <= ACTIVATION_TOLERANCE
            ledgers[ledger] = {"predicted_bytes": low, "measured_bytes": got, "ratio": round(ratio, 4),
                               "tolerance": f"within {ACTIVATION_TOLERANCE:.0%}", "status": PASS if ok else FAIL}
        else:
            ok = low <= got <= high
            entry: dict[str, Any] = {"predicted_bytes": low, "measured_bytes": got,
                                     "status": PASS if ok else FAIL}
            if device == "cuda":
                entry.update(predicted_rounded_bytes=high, tolerance="between raw and 512 B-rounded blocks")
            else:
                entry["tolerance"] = "exact"
            ledgers[ledger] = entry
    detail = []
    expected = [(t.name, t.shape) for t in param_tensors(case.cfg)]
    got_names = [(n, tuple(s)) for n, s in measured["parameters"] if ".lora_" not in n]
    if got_names != expected:
        missing = sorted(set(expected) - set(got_names))[:5]
        extra = sorted(set(got_names) - set(expected))[:5]
        detail.append(f"parameter tensors differ from the count: missing {missing}, unexpected {extra}")
        ledgers["weights"]["status"] = FAIL
    peaks = judge_peaks(case, device, measured.get("phase_deltas") or {})
    status = PASS if all(v["status"] in (PASS, NOT_MEASURED) for v in (*ledgers.values(), *peaks.values())) else FAIL
    out = {"name": case.name, "model": case.cfg.name, "regime": case.regime, "attention": case.attention,
           "micro_batch": case.micro_batch, "seq_len": case.seq_len,
           "params": sum(t.numel for t in param_tensors(case.cfg)),
           "status": status, "ledgers": ledgers, "peaks": peaks, "detail": detail}
    if "peak_bytes" in measured:
        out.update(peak_bytes=measured["peak_bytes"], phases=measured["phases"])
    return out


def judge_peaks(case: ProbeCase, device: str, deltas: dict[str, Any]) -> dict[str, Any]:
    """Per phase: what it added at its high point, predicted (a band) against measured."""
    out: dict[str, Any] = {}
    tol = PEAK_TOLERANCE["cuda" if device == "cuda" else "cpu"]
    for name, band in phase_prediction(case, device).items():
        if band is None or name not in deltas:
            out[name] = {"status": NOT_MEASURED, "why": "not modelled" if band is None else "no profiler"}
            continue
        low, high = band
        got = int(deltas[name]["peak_bytes"])
        if name == "optimizer_step" and device != "cuda":
            lo, hi = low, high + STEP_SCALAR_SLACK * len(param_tensors(case.cfg)) + STEP_SCALAR_SLACK
            how = "exact, up to the optimizer's per-tensor scalars"
        else:
            lo, hi = round(low * (1 - tol)), round(high * (1 + tol))
            how = f"within {tol:.0%}" + ("" if low == high else f" of {low:,d}..{high:,d}")
        out[name] = {"predicted_bytes": high, "predicted_low_bytes": low, "measured_bytes": got,
                     "tolerance": how, "status": PASS if lo <= got <= hi else FAIL}
    return out


def _document(device: str, quick: bool, started: float, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema": "refenv.memory", "version": 1, "kind": "verification", "device": device,
                           "quick": quick, "status": FAIL, "error": None, "torch": None, "device_name": None,
                           "activation_tolerance": ACTIVATION_TOLERANCE, "activation_model": ACTIVATION_MODEL,
                           "cases": []}
    doc.update(extra)
    if doc["error"] and "status" not in extra:
        doc["status"] = ERROR  # the verification could not run: no number was measured, none disagreed
    doc["wall_s"] = round(time.monotonic() - started, 3)
    return doc


def _run_cuda_child(quick: bool) -> dict[str, Any]:
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
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def child_main(argv: list[str]) -> int:
    """In the child: measure each GPU case and print one JSON object."""
    import torch

    from harness.memory.measure_step import measure_cuda

    results: dict[str, Any] = {}
    for case in cases("cuda", quick=argv[:1] != ["full"], traits=torch_traits.probe()):
        try:
            results[case.name] = measure_cuda(case)
        except Exception as exc:  # one failing case is recorded and the others still run
            results[case.name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps({"torch": torch.__version__, "device_name": torch.cuda.get_device_name(0),
                      "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), "results": results}))
    return 0


def run_verification(quick: bool = True, device: str = "auto") -> dict[str, Any]:
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
    extra: dict[str, Any] = {"torch": torch.__version__}
    if device == "cuda":
        try:
            child = _run_cuda_child(quick)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
            return _document(device, quick, started, torch=torch.__version__, error=str(exc))
        measured = child["results"]
        extra.update(device_name=child["device_name"], alloc_conf=child["alloc_conf"])
    else:
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
                    measured[case.name] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            torch.set_num_threads(threads)
        extra["device_name"] = "cpu"
    judged = []
    for case in cases(device, quick, torch_traits.probe()):
        m = measured.get(case.name, {"error": "not measured"})
        if "error" in m:
            judged.append({"name": case.name, "status": ERROR, "error": m["error"], "ledgers": {}})
        else:
            judged.append(judge_case(case, device, m))
    statuses = [c["status"] for c in judged]
    if device == "cpu":
        extra.update(cpu_sections(quick))
        statuses += [extra[k]["status"] for k in ("kv_cache", "transformers", "sharding") if k in extra]
    status = overall(statuses)
    extra["not_measured"] = not_measured(device, quick, torch_traits.probe())
    return _document(device, quick, started, status=status, cases=judged, **extra)


def render_verification(doc: dict[str, Any]) -> str:
    """The verification as a table: case, ledger, predicted, measured, status."""
    lines = [f"memory verification on {doc['device']} ({doc.get('device_name')}), torch {doc.get('torch')}: "
             f"{doc['status']} in {doc['wall_s']} s"]
    if doc.get("error"):
        lines.append(f"  error: {doc['error']}")
    for case in doc["cases"]:
        lines.append(f"  {case['status']}  {case['name']}" + (f"  ({case['error']})" if case.get("error") else ""))
        for ledger, v in case["ledgers"].items():
            extra = f" ratio {v['ratio']}" if "ratio" in v else ""
            lines.append(f"      {v['status']}  {ledger:<16} predicted {v['predicted_bytes']:>13,d}  "
                         f"measured {v['measured_bytes']:>13,d}{extra}")
        for phase, v in case.get("peaks", {}).items():
            if "measured_bytes" not in v:
                lines.append(f"      {v['status']}  peak of {phase} ({v.get('why')})")
                continue
            lines.append(f"      {v['status']}  {'peak of ' + phase:<16} predicted {v['predicted_bytes']:>13,d}  "
                         f"measured {v['measured_bytes']:>13,d} ({v['tolerance']})")
        lines += [f"      {d}" for d in case.get("detail", [])]
    for section, title in (("kv_cache", "KV cache grown token by token"),
                           ("transformers", "transformers' LlamaForCausalLM, activations"),
                           ("sharding", "sharding over gloo, what each rank holds")):
        if section in doc:
            sec = doc[section]
            lines.append(f"  {sec['status']}  {title}" + (f"  ({sec['error']})" if sec.get("error") else ""))
            lines += [f"      {c['status']}  {c['name']:<44} predicted {c['predicted_bytes']:>11,d}  "
                      f"measured {c['measured_bytes']:>11,d}" for c in sec["checks"]]
    for what, why in doc.get("not_measured", {}).items():
        lines.append(f"  not measured: {what}: {why}")
    return "\n".join(lines)
