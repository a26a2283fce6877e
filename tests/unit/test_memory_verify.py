"""Prediction against measurement on the CPU with real torch: exact state ledgers, activations within 5%."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest

from harness.memory import run_verification
from harness.memory.activations import training_activations
from harness.memory.cases import cases
from harness.memory.measure_step import measure_cpu
from harness.memory.probe_predict import (
    LEDGERS,
    activation_setup,
    phase_prediction,
    state_allocations,
    state_prediction,
)
from harness.memory.verify import judge_case, judge_peaks, predict
from harness.schema import encode
from harness.schema.memory_document import StepMeasurement

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def quick_doc() -> dict[str, Any]:
    doc: dict[str, Any] = encode(run_verification(quick=True, device="cpu"))  # as the harness writes it
    return doc


def test_quick_cpu_verification_passes(quick_doc: dict[str, Any]) -> None:
    assert (quick_doc["schema"], quick_doc["version"], quick_doc["kind"]) == ("refenv.memory", 1, "verification")
    assert quick_doc["device"] == "cpu" and quick_doc["error"] is None
    failing = [(c["name"], {k: v for k, v in c["ledgers"].items() if v["status"] != "PASS"}, c.get("error"))
               for c in quick_doc["cases"] if c["status"] != "PASS"]
    assert failing == [] and quick_doc["status"] == "PASS"


def test_quick_set_covers_three_sizes_and_three_regimes(quick_doc: dict[str, Any]) -> None:
    sizes = {c["model"] for c in quick_doc["cases"]}
    regimes = {c["regime"] for c in quick_doc["cases"]}
    assert len(sizes) >= 3
    assert {"fp32-adamw", "bf16-adamw", "sgd-momentum", "mixed-adamw", "lora"} <= regimes
    assert {c["attention"] for c in quick_doc["cases"]} == {"eager", "sdpa"}


def test_state_ledgers_are_exact_on_the_cpu(quick_doc: dict[str, Any]) -> None:
    for case in quick_doc["cases"]:
        for name in ("weights", "gradients", "optimizer_state", "master_weights"):
            entry = case["ledgers"][name]
            assert entry["measured_bytes"] == entry["predicted_bytes"], (case["name"], name)
        assert case["ledgers"]["weights"]["measured_bytes"] > 0
        assert case["ledgers"]["activations"]["measured_bytes"] > 0


def test_every_regime_leaves_its_own_mark(quick_doc: dict[str, Any]) -> None:
    by = {c["name"]: c["ledgers"] for c in quick_doc["cases"]}
    mixed = by["small-llama/mixed-adamw/eager"]
    assert mixed["master_weights"]["measured_bytes"] == 2 * mixed["weights"]["measured_bytes"]
    lora = by["small-llama/lora/sdpa"]
    assert 0 < lora["gradients"]["measured_bytes"] < lora["weights"]["measured_bytes"] / 2
    sgd = by["tiny-gpt/sgd-momentum/sdpa"]
    assert sgd["optimizer_state"]["measured_bytes"] == sgd["gradients"]["measured_bytes"]


def test_judge_fails_a_wrong_measurement() -> None:
    case = cases("cpu")[0]
    measured = measure_cpu(case)
    assert judge_case(case, "cpu", measured).status == "PASS"
    ledgers = measured.ledgers
    off_by_one = dataclasses.replace(measured, ledgers={**ledgers, "gradients": ledgers["gradients"] + 1})
    assert judge_case(case, "cpu", off_by_one).ledgers["gradients"].status == "FAIL"
    for factor, status in ((1.04, "PASS"), (1.06, "FAIL")):
        drifted = dataclasses.replace(measured, ledgers={**ledgers, "activations": int(ledgers["activations"] * factor)})
        assert judge_case(case, "cpu", drifted).ledgers["activations"].status == status
    first = measured.parameters[0]
    renamed = dataclasses.replace(measured, parameters=(("wte.weight", first[1]), *measured.parameters[1:]))
    judged = judge_case(case, "cpu", renamed)
    assert judged.status == "FAIL" and judged.detail is not None and "differ from the count" in judged.detail[0]


@pytest.mark.parametrize("case", cases("cuda", quick=False), ids=lambda c: c.name)
def test_gpu_prediction_is_the_ledger_arithmetic_plus_block_rounding(case: Any) -> None:
    state = state_prediction(case, step_scalars=False)
    allocs = state_allocations(case)
    bounds = predict(case, "cuda")
    for ledger in ("weights", "gradients", "optimizer_state", "master_weights"):
        assert sum(allocs[ledger]) == getattr(state, ledger), ledger
        low, high = bounds[ledger]
        assert low <= high <= low + 511 * len(allocs[ledger]) + (512 if not allocs[ledger] else 0)
    # The activations are the CLI's own model, set up as the probe runs on a GPU.
    assert bounds["activations"] == (training_activations(case.cfg, activation_setup(case, "cuda")).total,) * 2
    assert set(bounds) == set(LEDGERS)


def test_cuda_asked_for_without_a_gpu_is_a_document_with_no_answer() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    doc = run_verification(device="cuda")
    assert doc.status == "ERROR" and doc.error is not None and "is_available() is False" in doc.error


def test_a_case_that_could_not_be_measured_is_an_error_not_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.memory import verify

    lost = {c.name: StepMeasurement(error="RuntimeError: boom") for c in cases("cpu")}
    monkeypatch.setattr(verify, "_measure_cpu", lambda quick: lost)
    monkeypatch.setattr(verify, "cpu_sections", lambda quick: {})
    doc = verify.run_verification(quick=True, device="cpu")
    assert doc.status == "ERROR" and {c.status for c in doc.cases} == {"ERROR"}
    assert all(c.error == "RuntimeError: boom" for c in doc.cases)


def test_the_command_modules_do_not_import_torch() -> None:
    code = ("import sys, harness.commands.memory, harness.memory.verify, harness.memory.probe_model, "
            "harness.memory.measure_step, harness.memory.verify_dist, harness.memory.verify_infer, "
            "harness.memory.peak, harness.memory.alloc_trace, harness.memory.verify_sections, "
            "harness.memory.verify_hf; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_phase_peak_is_judged_and_passes(quick_doc: dict[str, Any]) -> None:
    for case in quick_doc["cases"]:
        assert set(case["peaks"]) == {"forward", "backward", "optimizer_step"}, case["name"]
        for phase, entry in case["peaks"].items():
            assert entry["status"] == "PASS", (case["name"], phase, entry)
        step = case["peaks"]["optimizer_step"]
        assert 0 <= step["measured_bytes"] - step["predicted_bytes"] <= 16 * 64, case["name"]  # exact, but scalars


def test_checkpointing_is_measured_with_torch_utils_checkpoint(quick_doc: dict[str, Any]) -> None:
    by = {c["name"]: c for c in quick_doc["cases"]}
    ckpt = by["small-llama/mixed-adamw/sdpa/checkpointed"]["ledgers"]["activations"]
    plain = by["small-llama/mixed-adamw/eager"]["ledgers"]["activations"]
    assert ckpt["status"] == "PASS" and ckpt["measured_bytes"] < plain["measured_bytes"] / 2


def test_judge_fails_a_wrong_peak() -> None:
    case = cases("cpu")[0]
    measured = measure_cpu(case)
    assert judge_case(case, "cpu", measured).status == "PASS"
    step = measured.phase_deltas["optimizer_step"]
    bigger = dataclasses.replace(measured, phase_deltas={  # one stray fp32 copy of 1024 values
        **measured.phase_deltas, "optimizer_step": {**step, "peak_bytes": step["peak_bytes"] + 4096}})
    judged = judge_case(case, "cpu", bigger)
    assert judged.status == "FAIL" and judged.peaks is not None and judged.peaks["optimizer_step"].status == "FAIL"


@pytest.mark.parametrize("case", [c for c in cases("cuda") if c.regime != "adafactor"], ids=lambda c: c.name)
def test_gpu_peaks_are_judged_within_ten_percent(case: Any) -> None:
    # The GPU tier's judgement, fed the prediction itself and then 20% more (no GPU needed to judge).
    bands = phase_prediction(case, "cuda")
    exact = {name: {"peak_bytes": band[1]} for name, band in bands.items() if band is not None}
    assert all(v.status == "PASS" for v in judge_peaks(case, "cuda", exact).values())
    off = {name: {"peak_bytes": round(v["peak_bytes"] * 1.2)} for name, v in exact.items()}
    assert all(v.status == "FAIL" for v in judge_peaks(case, "cuda", off).values())


def test_peft_lora_is_measured_and_matches(quick_doc: dict[str, Any]) -> None:
    # peft is a dev dependency: LoRA made by PEFT itself, on a module built here (no hub download).
    peft_cases = [c for c in quick_doc["cases"] if c["regime"] == "peft-lora"]
    assert len(peft_cases) == 2 and all(c["status"] == "PASS" for c in peft_cases)
    by = {c["name"]: c["ledgers"] for c in quick_doc["cases"]}
    own, peft = by["small-llama/lora/sdpa"], by["small-llama/peft-lora/sdpa"]
    assert all(own[k]["measured_bytes"] == peft[k]["measured_bytes"] for k in own)


@pytest.mark.parametrize(("name", "regime"), [("gpu-llama/bf16-adamw/sdpa", "bf16"), ("gpu-gpt/fp32-adamw/eager", "fp32"),
                                              ("gpu-moe/bf16-adamw/sdpa", "bf16"), ("gpu-llama/amp-adamw/sdpa", "amp")])
def test_the_cli_prints_the_model_verify_measures(name: str, regime: str) -> None:
    # One activation model: what `memory` prints (and --fit judges) for the probe's shape and batch is
    # exactly what `--verify` compares with the measurement on a GPU.
    from harness.memory.estimate import TrainSetup, estimate_training

    case = next(c for c in cases("cuda", quick=False) if c.name == name)
    setup = TrainSetup(regime=regime, micro_batch=case.micro_batch, seq_len=case.seq_len,
                       attention="eager" if case.attention == "eager" else "flash")
    printed = estimate_training(case.cfg, setup).ledgers.activations
    assert printed == training_activations(case.cfg, activation_setup(case, "cuda")).total


def test_the_gpu_childs_report_reads_back_as_it_was_written() -> None:
    # The CUDA cases are measured in a child process that prints JSON (verify.child_main); the parent reads it
    # through the codec. A step measured on the CPU stands in for the GPU's: the same record either way.
    import json

    from harness.schema import decode
    from harness.schema.memory_document import CudaMeasurements

    case = cases("cpu")[0]
    step = dataclasses.replace(measure_cpu(case), peak_bytes=123, phases={"after_forward": {"peak_bytes": 9}})
    report = CudaMeasurements("2.x", "NVIDIA H200", "expandable_segments:True",
                              {case.name: step, "lost": StepMeasurement(error="RuntimeError: boom")})
    back = decode(CudaMeasurements, json.loads(json.dumps(encode(report))))
    assert back == report and back.results[case.name].parameters == step.parameters


def test_every_architecture_family_matches_its_transformers_class(quick_doc: dict[str, Any]) -> None:
    from harness.memory.verify_families import FAMILIES

    section = quick_doc["families"]
    failing = [c["name"] for c in section["checks"] if c["status"] != "PASS"]
    assert failing == [] and section["status"] == "PASS"
    names = " ".join(c["name"] for c in section["checks"])
    for family, raw in FAMILIES.items():
        assert f"{family} (" in names, family                       # its parameters
        if "vision_config" not in raw:
            assert f"{family}: KV cache" in names, family           # and its cache, past its windows
    assert all(c["predicted_bytes"] == c["measured_bytes"] > 0 for c in section["checks"])


def test_a_small_moe_training_step_is_within_five_percent_of_its_peak(quick_doc: dict[str, Any]) -> None:
    section = quick_doc["moe_training"]
    assert section["status"] == "PASS" and len(section["checks"]) == 2
    assert all(abs(c["ratio"] - 1) <= 0.05 for c in section["checks"])
