"""The CDI spec's own rules, as a pure validator: each problem names where in the spec it is.

From the Container Device Interface specification (cncf-tags/container-device-interface, SPEC.md, and the
rules its Go package enforces when it loads a spec): `cdiVersion` a released version; `kind` is
`vendor/class` (vendor a DNS-like name, class up to 63 characters, both beginning and ending with a letter
or digit); `devices` a non-empty list of uniquely named devices, each with non-empty `containerEdits`;
edits hold only `env` ("NAME=value"), `deviceNodes` (an absolute `path`; optional `hostPath`, `type` one
of b c u p, `major`/`minor`, `permissions` made of r w m), `mounts` (`hostPath`, an absolute
`containerPath`, `options`) and `hooks` (an OCI hook name, an absolute `path`, a positive `timeout`);
a field newer than the declared `cdiVersion` is an error (deviceNodes[].hostPath needs 0.5.0, annotations
0.6.0), as the Go package's minimum-version check makes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0")
HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop")
_VENDOR_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_CLASS_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
_DEVICE_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?")
_ENV_RE = re.compile(r"[^=\x00]+=[^\x00]*")
_EDIT_KEYS = ("env", "deviceNodes", "mounts", "hooks")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


class _Check:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.needs: dict[str, str] = {}  # field -> the first version that has it

    def need(self, ok: bool, where: str, what: str) -> bool:
        if not ok:
            self.problems.append(f"{where}: {what}")
        return ok

    def keys(self, obj: Mapping[str, Any], where: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
        for key in obj:
            self.need(key in allowed, f"{where}.{key}", f"unknown field; expected one of {', '.join(allowed)}")
        for key in required:
            self.need(key in obj, f"{where}.{key}", "missing")

    def strings(self, value: Any, where: str) -> bool:
        return self.need(isinstance(value, list) and all(isinstance(v, str) for v in value), where,
                         "expected a list of strings")

    def absolute(self, value: Any, where: str) -> None:
        self.need(isinstance(value, str) and value.startswith("/"), where, f"expected an absolute path, got {value!r}")


def _node(c: _Check, node: Any, where: str) -> None:
    if not c.need(isinstance(node, dict), where, "expected an object"):
        return
    c.keys(node, where, ("path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"),
           ("path",))
    c.absolute(node.get("path"), f"{where}.path")
    if "hostPath" in node:
        c.absolute(node["hostPath"], f"{where}.hostPath")
        c.needs.setdefault("deviceNodes[].hostPath", "0.5.0")
    if "type" in node:
        c.need(node["type"] in ("b", "c", "u", "p"), f"{where}.type", "expected b, c, u or p")
    for key in ("major", "minor", "fileMode", "uid", "gid"):
        if key in node:
            c.need(isinstance(node[key], int) and not isinstance(node[key], bool) and node[key] >= 0,
                   f"{where}.{key}", "expected a non-negative integer")
    if "permissions" in node:
        perms = node["permissions"]
        c.need(isinstance(perms, str) and bool(perms) and set(perms) <= set("rwm"), f"{where}.permissions",
               f"expected some of r, w, m, got {perms!r}")


def _mount(c: _Check, mount: Any, where: str) -> None:
    if not c.need(isinstance(mount, dict), where, "expected an object"):
        return
    c.keys(mount, where, ("hostPath", "containerPath", "options", "type"), ("hostPath", "containerPath"))
    c.need(isinstance(mount.get("hostPath"), str) and bool(mount.get("hostPath")), f"{where}.hostPath",
           "expected a path")
    c.absolute(mount.get("containerPath"), f"{where}.containerPath")
    if "options" in mount:
        c.strings(mount["options"], f"{where}.options")


def _hook(c: _Check, hook: Any, where: str) -> None:
    if not c.need(isinstance(hook, dict), where, "expected an object"):
        return
    c.keys(hook, where, ("hookName", "path", "args", "env", "timeout"), ("hookName", "path"))
    c.need(hook.get("hookName") in HOOK_NAMES, f"{where}.hookName", f"expected one of {', '.join(HOOK_NAMES)}")
    c.absolute(hook.get("path"), f"{where}.path")
    for key in ("args", "env"):
        if key in hook:
            c.strings(hook[key], f"{where}.{key}")
    if "timeout" in hook:
        c.need(isinstance(hook["timeout"], int) and hook["timeout"] > 0, f"{where}.timeout", "expected seconds > 0")


def _edits(c: _Check, edits: Any, where: str, *, non_empty: bool) -> None:
    if not c.need(isinstance(edits, dict), where, "expected an object"):
        return
    c.keys(edits, where, _EDIT_KEYS, ())
    c.need(not non_empty or any(edits.get(k) for k in _EDIT_KEYS), where, "a device's edits may not be empty")
    if "env" in edits and c.strings(edits["env"], f"{where}.env"):
        for i, value in enumerate(edits["env"]):
            c.need(bool(_ENV_RE.fullmatch(value)), f"{where}.env[{i}]", f"expected NAME=value, got {value!r}")
    for key, check in (("deviceNodes", _node), ("mounts", _mount), ("hooks", _hook)):
        items = edits.get(key, [])
        if c.need(isinstance(items, list), f"{where}.{key}", "expected a list"):
            for i, item in enumerate(items):
                check(c, item, f"{where}.{key}[{i}]")


def problems(spec: Any) -> list[str]:
    """Every way `spec` breaks the CDI rules; empty when it is a valid spec."""
    c = _Check()
    if not c.need(isinstance(spec, dict), "spec", "expected an object"):
        return c.problems
    c.keys(spec, "spec", ("cdiVersion", "kind", "annotations", "devices", "containerEdits"),
           ("cdiVersion", "kind", "devices"))
    version = spec.get("cdiVersion")
    c.need(version in VERSIONS, "spec.cdiVersion", f"expected one of {', '.join(VERSIONS)}, got {version!r}")
    kind = spec.get("kind")
    vendor, slash, klass = kind.partition("/") if isinstance(kind, str) else ("", "", "")
    c.need(bool(slash) and bool(_VENDOR_RE.fullmatch(vendor)) and bool(_CLASS_RE.fullmatch(klass)), "spec.kind",
           f"expected vendor/class such as nvidia.com/gpu, got {kind!r}")
    if "annotations" in spec:
        c.needs.setdefault("annotations", "0.6.0")
    devices = spec.get("devices")
    if c.need(isinstance(devices, list) and bool(devices), "spec.devices", "expected a non-empty list"):
        seen: set[str] = set()
        for i, device in enumerate(devices):
            where = f"spec.devices[{i}]"
            if not c.need(isinstance(device, dict), where, "expected an object"):
                continue
            c.keys(device, where, ("name", "annotations", "containerEdits"), ("name", "containerEdits"))
            name = device.get("name")
            c.need(isinstance(name, str) and bool(_DEVICE_RE.fullmatch(name)), f"{where}.name",
                   f"expected letters, digits and - _ . : between a letter or digit at each end, got {name!r}")
            c.need(name not in seen, f"{where}.name", f"{name!r} is defined twice")
            seen.add(str(name))
            if "containerEdits" in device:
                _edits(c, device["containerEdits"], f"{where}.containerEdits", non_empty=True)
    if "containerEdits" in spec:
        _edits(c, spec["containerEdits"], "spec.containerEdits", non_empty=False)
    if version in VERSIONS:
        for what, since in c.needs.items():
            c.need(_version(version) >= _version(since), "spec.cdiVersion", f"{what} needs {since}, got {version}")
    return c.problems
