"""Driver calls that may never return, run so that a probe can give up on them after a bound and still report.

A GPU that has fallen off the bus (Xid 79) or a driver hung after an error makes cuInit block, and
torch.cuda.is_available() with it (it asks cudaGetDeviceCount, which initialises the driver), often inside the
kernel where no signal reaches the thread. The driver-library probe (harness/gather/native.py) runs such calls
in a daemon thread (ctypes lets go of the interpreter while a foreign call runs), waits for them up to a bound,
and then reports what was reached and which call had not returned after how long; the process then ends with
os._exit, since a thread stuck in the kernel cannot be joined. torch's binding keeps the interpreter while it
waits, so torch's calls are bounded from the parent instead (harness/gather/collect.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

# How long the driver's initialisation may take before it is reported hung. cuInit of a machine with many GPUs
# and no persistence daemon takes seconds per GPU (it brings each one up: NVIDIA's driver persistence
# documentation), so the bound is generous; `diagnose --init-timeout` and `cell --init-timeout` set another.
INIT_TIMEOUT_S = 60.0


class Step:
    """Where a probe is: the call it is in (`None` between calls) and since when (time.monotonic)."""

    def __init__(self) -> None:
        self.calling: str | None = None
        self.since = time.monotonic()

    def enter(self, call: str) -> None:
        self.since = time.monotonic()
        self.calling = call

    def leave(self) -> None:
        self.calling = None


class Bounded:
    """`work(step)` running in a daemon thread from construction; `wait` gives it until a deadline."""

    def __init__(self, work: Callable[[Step], Any], name: str) -> None:
        self.step = Step()
        self._box: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[Step], Any]) -> None:
        try:
            self._box["value"] = work(self.step)
        except BaseException as exc:  # handed to the waiting thread, which raises it as the call's own
            self._box["error"] = exc

    def wait(self, deadline: float) -> bool:
        """Whether the work finished by `deadline` (time.monotonic); its exception is raised here."""
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            return False
        if "error" in self._box:
            raise self._box["error"]
        return True

    @property
    def value(self) -> Any:
        return self._box.get("value")

    def blocked(self) -> tuple[str, float]:
        """The call that has not returned, and for how many seconds it has not (the facts' `blocked_in` and
        `blocked_s`)."""
        return self.step.calling or "the probe", round(time.monotonic() - self.step.since, 1)


def bound_of(argv: list[str], default: float = INIT_TIMEOUT_S) -> float:
    """`--bound S` of a probe child's command line (the parent passes its --init-timeout)."""
    if "--bound" in argv:
        at = argv.index("--bound") + 1
        if at < len(argv):
            try:
                value = float(argv[at])
            except ValueError:
                return default
            if value > 0:
                return value
    return default
