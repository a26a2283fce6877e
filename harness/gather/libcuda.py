"""What the driver's user-mode library says: does libcuda.so.1 load, its version, cuInit (ctypes)."""

from __future__ import annotations

import ctypes
import glob
import json
import os
from typing import cast

from harness.facts import LibcudaFact, SimulatedLibrary
from harness.gather.bounded import Step

LIBCUDA = "libcuda.so.1"


def loaded_path(fragment: str) -> str | None:
    """The file a loaded shared library was mapped from, read from /proc/self/maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ")[-1]
                if fragment in path.rsplit("/", 1)[-1]:
                    return path
    except OSError:
        return None
    return None


# Where the loader looks when no LD_LIBRARY_PATH or ld.so.conf entry names the file (ld.so(8): the trusted
# directories; Debian's multiarch folder first, as its ld.so.conf.d lists it).
DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")


def _conf_dirs(path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    """The folders ld.so.conf names, following its `include` lines (one level of globs, as ldconfig does)."""
    dirs: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as conf:
            lines = conf.read(1 << 16).splitlines()
    except OSError:
        return dirs
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include ") and depth < 2:
            for included in sorted(glob.glob(line[len("include "):].strip())):
                dirs.extend(_conf_dirs(included, depth + 1))
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


def on_loader_path(name: str) -> str | None:
    """A file of that name where the dynamic loader would look, or None: tells a library that is absent from
    one that is there but failed to load."""
    env = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for folder in (*env, *_conf_dirs(), *DEFAULT_DIRS):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def _error_text(lib: ctypes.CDLL, rc: int) -> tuple[str | None, str | None]:
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(rc, ctypes.byref(name)) != 0:
            name = ctypes.c_char_p()
        if lib.cuGetErrorString(rc, ctypes.byref(text)) != 0:
            text = ctypes.c_char_p()
    except AttributeError:
        return None, None
    return _decode(name), _decode(text)


def _decode(value: ctypes.c_char_p) -> str | None:
    return value.value.decode("utf-8", "replace") if value.value else None


def simulated_info(lib: ctypes.CDLL, symbol: str = "refenvSimulatedDriverInfo") -> SimulatedLibrary | None:
    """refenv's simulated driver describes itself (profile, stage reached); a real driver has no such symbol."""
    try:
        func = getattr(lib, symbol)
    except AttributeError:
        return None
    func.restype = ctypes.c_char_p
    raw = func()
    try:
        info = json.loads(raw.decode("utf-8", "replace")) if raw else None
    except ValueError:
        return {"unparsable": raw.decode("utf-8", "replace")}
    return cast(SimulatedLibrary, info) if isinstance(info, dict) else None


class Probe:
    """Load libcuda.so.1 and ask it for its version, cuInit(0) and the device count. `fact` fills as it goes and
    `lib` holds the library once loaded, so a probe whose cuInit never returns (harness.gather.bounded) still
    says what it reached."""

    def __init__(self) -> None:
        self.fact: LibcudaFact = {"loaded": False, "path": None, "error": None, "file": None, "driver_version": None,
                                  "cuinit": None, "cuinit_name": None, "cuinit_message": None, "device_count": None}
        self.lib: ctypes.CDLL | None = None

    def run(self, step: Step) -> tuple[LibcudaFact, SimulatedLibrary | None]:
        fact = self.fact
        step.enter("loading libcuda.so.1")
        try:
            lib = ctypes.CDLL(LIBCUDA)
        except OSError as exc:
            fact["error"] = str(exc)
            fact["file"] = on_loader_path(LIBCUDA)
            return fact, None
        self.lib = lib
        fact["loaded"] = True
        fact["path"] = loaded_path("libcuda.so")
        version = ctypes.c_int(0)
        step.enter("cuDriverGetVersion")
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            fact["driver_version"] = version.value
        step.enter("cuInit(0)")
        rc = int(lib.cuInit(0))
        step.leave()
        fact["cuinit"] = rc
        fact["cuinit_name"], fact["cuinit_message"] = _error_text(lib, rc)
        if rc == 0:
            count = ctypes.c_int(0)
            step.enter("cuDeviceGetCount")
            if lib.cuDeviceGetCount(ctypes.byref(count)) == 0:
                fact["device_count"] = count.value
            step.leave()
        return fact, simulated_info(lib)


def probe() -> tuple[LibcudaFact, SimulatedLibrary | None]:
    """Load libcuda.so.1 and ask it for its version, cuInit(0) and the device count (in this thread, unbounded)."""
    return Probe().run(Step())
