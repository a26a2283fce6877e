"""Gather every fact, running the two child probes (driver libraries, torch) side by side.

A driver whose initialisation never returns (a GPU fallen off the bus, a hung driver) is reported as the call
that had not returned and for how long, after `init_timeout` seconds. The driver-library child bounds its own
calls (`--bound`, harness.gather.bounded: ctypes lets go of the interpreter while it waits). torch's binding
does not, so the torch child announces each call that initialises the driver before it makes it, and this
process bounds them from the first announcement (harness/gather/torch_probe.py). The other deadlines here are
the backstop for a child that prints nothing at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from harness.facts import Facts, TorchFacts, empty_facts
from harness.gather import pci, system
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


class Announced:
    """A child's stdout read as it comes, one JSON line at a time ({"facts": ..., "calling": ...}): the last facts,
    the call it announced last and when that line came (time.monotonic), when the first call was announced, and
    whether the output has ended. A thread reads each stream, from the moment the child starts."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.facts: dict[str, Any] | None = None
        self.calling: str | None = None
        self.since = 0.0
        self.first_call: float | None = None
        self.ended = False
        self.garbled = False
        self.err = b""
        self.changed = threading.Condition()
        threading.Thread(target=self._read_out, name="refenv-child-out", daemon=True).start()
        self._err_reader = threading.Thread(target=self._read_err, name="refenv-child-err", daemon=True)
        self._err_reader.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            try:
                line = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                line = None
            with self.changed:
                if isinstance(line, dict) and isinstance(line.get("facts"), dict):
                    now = time.monotonic()
                    self.facts, self.calling = line["facts"], line.get("calling")
                    self.since = now
                    if self.calling and self.first_call is None:
                        self.first_call = now
                else:
                    self.garbled = True
                self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.err = self.proc.stderr.read()

    def collect(self, deadline: float, bound: float, what: str) -> tuple[dict[str, Any] | None, str | None]:
        """The child's facts, with `blocked_in` and `blocked_s` when a call it announced had not returned `bound`
        seconds after the first announcement; or why there are none (timeout, crash, garbage). Never raises."""
        with self.changed:
            while not self.ended:
                limit = deadline if self.first_call is None else min(deadline, self.first_call + bound)
                left = limit - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            ended, facts, calling, since = self.ended, self.facts, self.calling, self.since
        if not ended:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=KILLED_WAIT_S)
            if facts is None or not calling:
                return None, f"the {what} probe timed out"
            return {**facts, "blocked_in": calling, "blocked_s": round(time.monotonic() - since, 1)}, None
        try:
            code = self.proc.wait(timeout=KILLED_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        if code != 0:
            # The child has exited, but its stderr may still be in the pipe: the reader sets `err` only at its end.
            # (A grandchild that kept the pipe open would hold it: the wait is bounded.)
            self._err_reader.join(KILLED_WAIT_S)
            tail = self.err.decode("utf-8", "replace").strip().splitlines()[-3:]
            return None, f"the {what} probe exited with {code}: {' | '.join(tail)}"
        if facts is None:
            return None, f"the {what} probe printed no JSON" + (" it could read" if self.garbled else "")
        if calling:
            return None, f"the {what} probe ended inside {calling} without its last line"
        return facts, None


def gather(torch_timeout: float = TORCH_TIMEOUT_S, then: Callable[[], None] | None = None,
           init_timeout: float = INIT_TIMEOUT_S) -> tuple[Facts, list[str]]:
    """All facts of this machine, and the probe errors met on the way; `then` runs while the children work.
    `init_timeout`: how long the driver's initialisation may take before the children report it hung."""
    start = time.monotonic()
    torch_out = Announced(spawn("harness.gather.torch_probe"))
    native_proc = spawn("harness.gather.native", ("--bound", f"{init_timeout:g}"))
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
    driver["pci_root"] = pci.root()
    driver["pci"] = pci.devices(driver["pci_root"])

    printed, err = _collect(native_proc, start + init_timeout + NATIVE_TIMEOUT_S, "driver library")
    if printed is None:
        errors.append(str(err))
        driver["libcuda"]["error"] = err
    else:
        native = cast("NativeFacts", printed)  # the child's own shape (harness/gather/native.py)
        driver["libcuda"] = native["libcuda"]
        driver["nvml"] = native["nvml"]
        driver["simulated"] = native.get("simulated")

    torch_facts, err = torch_out.collect(start + torch_timeout, init_timeout, "torch")
    if torch_facts is None:
        errors.append(str(err))
        facts["torch"] = {"error": err}
    else:
        facts["torch"] = cast(TorchFacts, torch_facts)  # the child's own shape (harness/gather/torch_probe.py)
    return facts, errors
