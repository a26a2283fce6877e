"""Import every module of the stack in child processes (harness/stack/trial.py) and collect what each said.

One child imports them all in turn, so torch is imported once; a module that crashes or hangs its child is
recorded as such (the exit status or signal, the last lines it wrote to stderr) and the rest go on in a
fresh child, within one deadline.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

from harness.gather.collect import spawn
from harness.schema.jsondata import DecodeError, decode
from harness.schema.stack_document import ImportTrial
from harness.stack.trial import PREFIX

# Switches that make extensions say why their compiled part did not load, instead of swallowing it:
# torchvision/extension.py warns the loader's error; xformers/_cpp_lib.py logs the OSError with the build
# it expected; bitsandbytes skips its welcome banner (cextension.py).
TELL_ME_WHY = {
    "TORCHVISION_WARN_WHEN_EXTENSION_LOADING_FAILS": "1",
    "XFORMERS_MORE_DETAILS": "1",
    "BITSANDBYTES_NOWELCOME": "1",
}
TIMEOUT_S = 180.0


def _read(out: bytes) -> tuple[list[ImportTrial], str | None]:
    """The results in a child's output, and the module it had begun and not finished, if any."""
    results: list[ImportTrial] = []
    begun = None
    for line in out.decode("utf-8", "replace").splitlines():
        at = line.find(PREFIX)
        if at < 0:
            continue
        try:
            payload = json.loads(line[at + len(PREFIX):])
        except ValueError:
            continue
        if not isinstance(payload, dict):
            continue
        if "begin" in payload:
            begun = str(payload["begin"])
        elif "module" in payload:
            try:
                results.append(decode(ImportTrial, payload))
            except DecodeError:
                continue  # a line that only looks like the protocol's (a module printing the prefix)
            begun = None
    return results, begun


def _how_it_ended(rc: int | None, err: bytes) -> str:
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        how = f"killed by {name}"
    else:
        how = f"exited with {rc}"
    tail = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()][-3:]
    return how + (f": {' | '.join(tail)}" if tail else "")


def _failed(module: str, error: str) -> ImportTrial:
    return ImportTrial(module, False, error)


def import_all(plan: list[tuple[str, list[str]]], timeout: float = TIMEOUT_S) -> dict[str, ImportTrial]:
    """Each module's import result, by module, for (module, its own shared objects) in order; a module not reached
    in time says so."""
    deadline = time.monotonic() + timeout
    done: dict[str, ImportTrial] = {}
    libraries = dict(plan)
    todo = [module for module, _ in plan]
    while todo:
        left = deadline - time.monotonic()
        if left <= 0:
            for module in todo:
                done[module] = _failed(module, f"not tried: the imports ran out of their {timeout:g} s")
            break
        steps = [{"module": m, "libraries": libraries[m]} for m in todo]
        proc = spawn("harness.stack.trial", [json.dumps(steps)], TELL_ME_WHY)
        try:
            out, err = proc.communicate(timeout=left)
            ended = _how_it_ended(proc.returncode, err)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            ended = f"timed out after {timeout:g} s"
        results, begun = _read(out)
        for r in results:
            done[r.module] = r
        if begun is not None:
            done[begun] = _failed(begun, f"importing it ended the process: {ended}")
        todo = [m for m in todo if m not in done]
        if begun is None and todo:  # the child stopped between modules: nothing to blame, nothing more to try
            for module in todo:
                done[module] = _failed(module, f"not tried: the import process {ended}")
            break
    return done
