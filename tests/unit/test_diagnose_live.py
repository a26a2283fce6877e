"""`python -m harness diagnose` on this very machine: a bare host with no NVIDIA driver and a CPU wheel.

This machine is not a container even though /.dockerenv exists (its root is ext4, not an overlay),
so the answer is NO_DRIVER, not NOT_VISIBLE; the dev venv's torch is a CPU build, so CPU_WHEEL too.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.schema import CPU_WHEEL, EXIT_FAILING, NO_DRIVER

ROOT = Path(__file__).resolve().parents[2]


def has_nvidia_driver() -> bool:
    """Whether this machine has a driver of its own (then it is not the bare host this test is about)."""
    if Path("/proc/driver/nvidia").exists():
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver; the bare-host case needs none")
def test_a_bare_host_with_a_cpu_wheel() -> None:
    proc = subprocess.run([sys.executable, "-m", "harness", "diagnose", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == EXIT_FAILING, proc.stderr
    doc = json.loads(proc.stdout)
    diagnosis, facts = doc["diagnosis"], doc["facts"]
    assert diagnosis["verdict"] == NO_DRIVER
    failing = [f["verdict"] for f in diagnosis["findings"] if f["severity"] == "error"]
    assert failing[:2] == [NO_DRIVER, CPU_WHEEL]
    assert diagnosis["simulated"] is False
    assert facts["visibility"]["in_container"] is False
    assert facts["driver"]["libcuda"]["loaded"] is False
    assert facts["torch"]["cuda"] is None and facts["torch"]["is_available"] is False
    assert facts["torch"]["init_error"] == "Torch not compiled with CUDA enabled"
