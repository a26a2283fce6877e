"""`python -m harness measure` (harness/commands/measure.py) on this machine: the CPU measured, a GPU honestly waived
where torch has none, a document the host judges (refenv.run.measurements)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from refenv.model import codec
from refenv.model.records import MeasurementRecord
from refenv.run.measurements import judge_measurement

ROOT = Path(__file__).resolve().parents[2]


def measure(tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "m.json"
    done = subprocess.run([sys.executable, "-m", "harness", "measure", "--out", str(out), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert isinstance(data, dict) and data["schema"] == "refenv.measure"
    return data


def test_without_a_gpu_the_gpu_measurement_is_waived_with_the_reason(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/gpu covers it")
    doc = measure(tmp_path, "--device", "cuda")
    assert isinstance(doc["waived"], str) and "waived" in doc["waived"] and doc["memory"] is None
    probes = doc["probes"]
    assert isinstance(probes, dict) and probes["gpu"]["waived"] == doc["waived"]
    judged = judge_measurement(MeasurementRecord("e/real", "e", "real", "cuda"), doc, 0, False, False, "")
    assert judged.status == "PASS" and judged.reason.startswith("waived")


def test_the_cpu_memory_verification_runs_and_is_judged(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    doc = measure(tmp_path, "--device", "cpu", "--probes", "off", "--memory", "quick")
    memory = doc["memory"]
    assert doc["probes"] is None and isinstance(memory, dict) and memory.get("cases")
    judged = judge_measurement(MeasurementRecord("e/cpu", "e"), doc, 0, False, False, "")
    assert judged.status == ("PASS" if memory["status"] == "PASS" else "FAIL")
    assert codec.encode(judged.memory) == memory  # read as its record, it writes back what the harness wrote


def test_a_command_imports_its_own_modules_only() -> None:
    """A matrix cell runs `python -m harness cell` once per container: it must not pay for the probes' and the
    memory model's imports, nor import the classifier before the child probes are started."""
    code = ("import sys; from harness.__main__ import build_parser; build_parser('cell');"
            "print(sorted(m for m in sys.modules if m.startswith(('harness.probe', 'harness.memory', "
            "'harness.classify', 'harness.roofline'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    everything = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout
    assert all(name in everything for name in ("diagnose", "probe", "roofline", "memory", "cell", "measure"))
