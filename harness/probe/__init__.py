"""Bandwidth and compute probes against the spec sheet and the roofline, on a GPU or on the CPU.

`run_probes(mode, device)` returns the versioned `refenv.probe` document; `waived_gpu(reason)` is the
document for a host whose GPU probes cannot run (a simulated driver). torch is imported only when a
probe runs.
"""

from __future__ import annotations

from harness.probe.devices import ProbeError
from harness.probe.results import SCHEMA, VERSION, waived_gpu
from harness.probe.suite import run_probes

__all__ = ["SCHEMA", "VERSION", "ProbeError", "run_probes", "waived_gpu"]
