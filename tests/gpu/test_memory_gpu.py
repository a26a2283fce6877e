"""The memory arithmetic against a real GPU's caching allocator (run on the lent device; needs CUDA).

State ledgers must fall between the raw bytes and the 512 B-rounded blocks; activations within 5%.
This tier asserts the GPU: on a machine without one it fails rather than quietly measuring the CPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.memory import run_verification
from harness.memory.verify import render_verification
from harness.schema import encode

pytestmark = pytest.mark.gpu


def _failures(doc: dict[str, Any]) -> list[str]:
    out = []
    for case in doc["cases"]:
        if case["status"] != "PASS":
            bad = {k: (v["predicted_bytes"], v["measured_bytes"]) for k, v in case["ledgers"].items()
                   if v["status"] != "PASS"}
            out.append(f"{case['name']}: {case.get('error') or bad} {case.get('detail') or ''}")
    return out


def _keep(doc: dict[str, Any], name: str) -> None:
    """Write the document where REFENV_ARTIFACTS points, so a device run brings it back."""
    folder = os.environ.get("REFENV_ARTIFACTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(json.dumps(doc, indent=2))


@pytest.fixture(scope="module")
def gpu_doc() -> dict[str, Any]:
    torch = pytest.importorskip("torch")
    assert torch.cuda.is_available(), "the gpu tier needs a real NVIDIA GPU; torch.cuda.is_available() is False"
    verification = run_verification(quick=True, device="cuda")
    print(render_verification(verification))
    doc: dict[str, Any] = encode(verification)  # as the harness writes it
    _keep(doc, "memory-verify-gpu-quick.json")
    return doc


def test_gpu_verification_passes(gpu_doc: dict[str, Any]) -> None:
    assert gpu_doc["error"] is None, gpu_doc["error"]
    assert gpu_doc["device"] == "cuda" and "expandable_segments:True" in gpu_doc["alloc_conf"]
    assert _failures(gpu_doc) == [] and gpu_doc["status"] == "PASS"


def test_gpu_cases_cover_the_sizes_and_regimes(gpu_doc: dict[str, Any]) -> None:
    assert len({c["model"] for c in gpu_doc["cases"]}) >= 3
    assert {"fp32-adamw", "bf16-adamw", "sgd-momentum", "mixed-adamw", "lora"} <= {c["regime"] for c in gpu_doc["cases"]}


def test_gpu_state_ledgers_are_within_block_rounding(gpu_doc: dict[str, Any]) -> None:
    for case in gpu_doc["cases"]:
        for name in ("weights", "gradients", "optimizer_state", "master_weights"):
            entry = case["ledgers"][name]
            assert entry["predicted_bytes"] <= entry["measured_bytes"] <= entry["predicted_rounded_bytes"], (
                case["name"], name, entry)
        assert 0 < case["ledgers"]["activations"]["measured_bytes"] <= case["peak_bytes"]


@pytest.mark.slow
def test_gpu_full_verification_passes() -> None:
    doc = encode(run_verification(quick=False, device="cuda"))
    _keep(doc, "memory-verify-gpu-full.json")
    assert _failures(doc) == [] and doc["status"] == "PASS"


def test_gpu_phase_peaks_match_the_allocator(gpu_doc: dict[str, Any]) -> None:
    # Each phase's high point from max_memory_allocated, against the CLI's peak model (within 10%).
    for case in gpu_doc["cases"]:
        assert set(case["peaks"]) == {"forward", "backward", "optimizer_step"}, case["name"]
        for phase, entry in case["peaks"].items():
            assert entry["status"] == "PASS", (case["name"], phase, entry)


def test_gpu_cases_include_checkpointing_moe_and_autocast(gpu_doc: dict[str, Any]) -> None:
    names = [c["name"] for c in gpu_doc["cases"]]
    assert any(n.endswith("/checkpointed") for n in names)
    assert any(n.startswith("gpu-moe/") for n in names) and any("/amp-adamw/" in n for n in names)
