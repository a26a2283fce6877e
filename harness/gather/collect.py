"""Gather every fact, running the two child probes (driver libraries, torch) side by side.

Each child bounds its own driver calls (`--bound`, harness.gather.bounded) and reports a call that never
returned as a fact; the deadlines here are the backstop for a child that prints nothing at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from harness.facts import Facts, TorchFacts, empty_facts
from harness.gather import system
from harness.gather.bounded import INIT_TIMEOUT_S

if TYPE_CHECKING:  # the parent only reads what the child printed; it need not load the driver probes
    from harness.gather.native import NativeFacts

TORCH_TIMEOUT_S = 180.0   # a cold import of a CUDA torch wheel from a slow disk takes tens of seconds
NATIVE_TIMEOUT_S = 60.0   # beyond the bound on its driver calls: loading the libraries, printing
KILLED_WAIT_S = 5.0       # a child stuck in the kernel outlives SIGKILL until its call returns: do not wait for it


def spawn(module: str, args: Sequence[str] = (), extra_env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`python -m module args...` with this interpreter, its output piped, able to import this harness."""
    env = dict(os.environ)
    env.update(extra_env or {})
    # The children import the harness by name: give them the folder this copy was imported from.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen([sys.executable, "-m", module, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)


def _collect(proc: subprocess.Popen[bytes], deadline: float, what: str) -> tuple[dict[str, object] | None, str | None]:
    """The child's JSON object, or why there is none (timeout, crash, garbage); never raises."""
    try:
        out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=KILLED_WAIT_S)
        return None, f"the {what} probe timed out"
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        return None, f"the {what} probe exited with {proc.returncode}: {' | '.join(tail)}"
    try:
        data = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        return None, f"the {what} probe printed no JSON"
    return (data, None) if isinstance(data, dict) else (None, f"the {what} probe printed no JSON object")


def gather(torch_timeout: float = TORCH_TIMEOUT_S, then: Callable[[], None] | None = None,
           init_timeout: float = INIT_TIMEOUT_S) -> tuple[Facts, list[str]]:
    """All facts of this machine, and the probe errors met on the way; `then` runs while the children work.
    `init_timeout`: how long the driver's initialisation may take before the children report it hung."""
    start = time.monotonic()
    bound = ("--bound", f"{init_timeout:g}")
    torch_proc = spawn("harness.gather.torch_probe", bound)
    native_proc = spawn("harness.gather.native", bound)
    if then is not None:
        then()
    facts = empty_facts("probed")
    errors: list[str] = []

    facts["host"] = system.host()
    facts["visibility"] = system.visibility()
    driver = facts["driver"]
    driver["dev_nodes"] = system.dev_nodes()
    driver["dev_access"] = system.dev_access(driver["dev_nodes"] or [])
    driver["proc_version"], driver["kernel_module_version"] = system.proc_version()
    driver["nvidia_smi"] = system.nvidia_smi()

    printed, err = _collect(native_proc, start + init_timeout + NATIVE_TIMEOUT_S, "driver library")
    if printed is None:
        errors.append(str(err))
        driver["libcuda"]["error"] = err
    else:
        native = cast("NativeFacts", printed)  # the child's own shape (harness/gather/native.py)
        driver["libcuda"] = native["libcuda"]
        driver["nvml"] = native["nvml"]
        driver["simulated"] = native.get("simulated")

    torch_facts, err = _collect(torch_proc, start + torch_timeout, "torch")
    if torch_facts is None:
        errors.append(str(err))
        facts["torch"] = {"error": err}
    else:
        facts["torch"] = cast(TorchFacts, torch_facts)  # the child's own shape (harness/gather/torch_probe.py)
    return facts, errors
