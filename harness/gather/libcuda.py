"""What the driver's user-mode library says: does libcuda.so.1 load, its version, cuInit (ctypes)."""

from __future__ import annotations

import ctypes
import json
from typing import cast

from harness.facts import LibcudaFact, SimulatedLibrary

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


def probe() -> tuple[LibcudaFact, SimulatedLibrary | None]:
    """Load libcuda.so.1 and ask it for its version, cuInit(0) and the device count."""
    fact: LibcudaFact = {"loaded": False, "path": None, "error": None, "driver_version": None,
                         "cuinit": None, "cuinit_name": None, "cuinit_message": None, "device_count": None}
    try:
        lib = ctypes.CDLL(LIBCUDA)
    except OSError as exc:
        fact["error"] = str(exc)
        return fact, None
    fact["loaded"] = True
    fact["path"] = loaded_path("libcuda.so")
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
        fact["driver_version"] = version.value
    rc = int(lib.cuInit(0))
    fact["cuinit"] = rc
    fact["cuinit_name"], fact["cuinit_message"] = _error_text(lib, rc)
    if rc == 0:
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) == 0:
            fact["device_count"] = count.value
    return fact, simulated_info(lib)
