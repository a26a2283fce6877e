"""A run stopped from outside: Ctrl-C (SIGINT) or a polite kill (SIGTERM) ends it the same way.

A CI runner cancelling a job, `timeout`, `kill`, Slurm's `scancel` and Kubernetes all stop a process with
SIGTERM, not SIGINT (GitHub Actions sends SIGINT, then SIGTERM 7.5 s later; `docker stop` and systemd send
SIGTERM). Python's default for SIGTERM is to die at once, which would leave the run's containers and jobs
behind and no partial report. Inside `stop_on_term()` SIGTERM raises KeyboardInterrupt in the main thread,
so the one path that cancels what the run started and writes the partial report serves both signals; the
exit status then says which signal stopped the run (128 + its number: 130 for SIGINT, 143 for SIGTERM, as
shells report it).

Once the run is stopping, a further SIGTERM is let pass: a runner that sends SIGINT and then SIGTERM would
otherwise cut short the cleanup the first signal began (a second Ctrl-C still interrupts, as a user typing it
twice means). A SIGINT that was ignored when the process started (a shell's background job, `nohup`) stays
ignored: that is what whoever started it asked for.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Stopped:
    """Which signal stopped the run, once one has: read after KeyboardInterrupt was handled."""

    def __init__(self) -> None:
        self.signum: int = signal.SIGINT
        self.seen = False

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


@contextlib.contextmanager
def stop_on_term() -> Iterator[Stopped]:
    """Within the block SIGTERM interrupts the main thread as Ctrl-C does; the old handler is back after."""
    stopped = Stopped()
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield stopped
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if stopped.seen and signum == signal.SIGTERM:
            return
        if not stopped.seen:
            stopped.signum = signum
        stopped.seen = True
        raise KeyboardInterrupt

    before_term = signal.signal(signal.SIGTERM, interrupt)
    before_int = signal.getsignal(signal.SIGINT)
    if before_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGTERM, before_term)
        if before_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, before_int)
