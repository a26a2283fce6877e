"""Allocations on the CPU, seen through the profiler: the peak and the net of what a piece of code allocates.

The CPU allocator reports every allocation and free to torch's profiler (`profile_memory=True`); walking the
event tree in time order gives the live bytes at every moment, so a phase's high point is exact on the CPU,
where a GPU has `max_memory_allocated`. torch is imported inside the function only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null for a moment (the profiler's C++ logging bypasses sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def allocation_trace(fn: Callable[[], Any]) -> tuple[Any, int, int] | None:
    """Run `fn` under the profiler's memory tracking: (its result, peak bytes over the start, net bytes).

    The CPU allocator reports every allocation and free to the profiler (profile_memory=True); the walk over
    its event tree uses torch._C._profiler, so a torch without it gives None (peaks not measured).
    """
    try:
        from torch._C._profiler import _EventType
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_stderr():  # kineto logs a line at each start and stop on the process's stderr
        prof.start()
    try:
        out = fn()
    finally:
        with _quiet_stderr():
            prof.stop()
    sizes: list[tuple[int, int]] = []
    results: Any = prof.profiler.kineto_results if prof.profiler is not None else None
    if results is None:
        return None
    stack = list(results.experimental_event_tree())
    while stack:
        node = stack.pop()
        if node.tag == _EventType.Allocation:
            sizes.append((node.start_time_ns, node.extra_fields.alloc_size))
        stack.extend(node.children)
    live = peak = 0
    for _, size in sorted(sizes):
        live += size
        peak = max(peak, live)
    return out, peak, live
