"""What else users paste beside the dump: variables they set, `docker run` lines, nvidia-smi."""

from __future__ import annotations

import re

from harness import compat
from harness.intake.parsed import Builder, Line

ENV_FACTS = {
    "CUDA_VISIBLE_DEVICES": "visibility.cuda_visible_devices",
    "NVIDIA_VISIBLE_DEVICES": "visibility.nvidia_visible_devices",
    "NVIDIA_DRIVER_CAPABILITIES": "visibility.nvidia_driver_capabilities",
    "CUDA_DEVICE_ORDER": "visibility.cuda_device_order",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "torch.nvml_based_check",
}
_NAMES = "|".join(ENV_FACTS)
# NAME=value in shells, `-e NAME=value`, `$env:NAME="value"`, `%env NAME=value`, os.environ["NAME"] = "value",
# os.environ.setdefault("NAME", "1"), `NAME: "1"` in YAML; the name in any letter case (prose retypes it).
_ASSIGN_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?P<name>(?i:{_NAMES}))(?:['\"]\s{{0,2}}\])?['\"]?\s{{0,3}}(?:=(?!=)|:(?=\s)|,)\s{{0,3}}"
    r"(?P<value>\"[^\"\n]{0,80}\"|'[^'\n]{0,80}'|[^\s;&|)\"'`,]{0,80}(?:,[^\s;&|)\"'`,]{1,80}){0,15})"
)
# An unquoted value is taken only when it is a literal of the variable's kind (`cudaIndex`, `$GPU` and
# `args.gpu` name a value the report does not show).
_LITERAL = {
    "CUDA_VISIBLE_DEVICES": re.compile(r"-?\d{1,3}(?:,-?\d{1,3}){0,15}|(?:GPU|MIG)-[\w-]{1,80}(?:,\S{1,80}){0,15}|"
                                       r"all|none|void|", re.I),
    "NVIDIA_VISIBLE_DEVICES": re.compile(r"\d{1,3}(?:,\d{1,3}){0,15}|(?:GPU|MIG)-[\w-]{1,80}(?:,\S{1,80}){0,15}|"
                                         r"all|none|void|", re.I),
    "NVIDIA_DRIVER_CAPABILITIES": re.compile(r"(?:compute|utility|graphics|video|display|compat32|all)"
                                             r"(?:,(?:compute|utility|graphics|video|display|compat32|all)){0,6}"),
    "CUDA_DEVICE_ORDER": re.compile(r"PCI_BUS_ID|FASTEST_FIRST"),
    "PYTORCH_NVML_BASED_CUDA_CHECK": re.compile(r"[01]"),
}
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"visible_devices|driver_capabilities|device_order|nvml_based|docker|podman|nvidia-smi|"
                  r"nvml library")
_NAMED_RE = re.compile(_NAMES, re.I)
_RUN_RE = re.compile(r"(?:^|[\s$#>;&])(?:sudo\s+)?(?P<tool>nvidia-docker|docker|podman)\s+(?:container\s+)?run\b")
_GPU_FLAG_RE = re.compile(r"--gpus[\s=]|--runtime[\s=]+nvidia\b|--device[\s=]+(?:nvidia\.com/gpu|/dev/nvidia)")
_CONTINUED = ("\\", "`", "^")
_NVML_LIBRARY_RE = re.compile(r"^NVML library version:\s*(\d[\d.]*)")
_SMI_HEADER_RE = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\d[\d.]*)\s+Driver Version:\s*(?P<driver>\d[\d.]*)\s+CUDA Version:\s*(?P<cuda>\d+\.\d+)"
)


def read(b: Builder, lines: list[Line]) -> None:
    """Every hint in the report; the dump's own fields, read first, win over them."""
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        if _NAMED_RE.search(text):
            _read_env(b, line)
        if " run" in text or "run " in text:
            _read_run(b, lines, i)
        if "NVIDIA-SMI" in text or "NVML library" in text:
            _read_smi(b, line)


def _read_env(b: Builder, line: Line) -> None:
    for m in _ASSIGN_RE.finditer(line.text):
        name, raw = m.group("name").upper(), m.group("value")
        quoted = raw[:1] in "'\"" and raw[-1:] == raw[:1] and len(raw) > 1
        value = raw[1:-1] if quoted else raw
        if not quoted and not _LITERAL[name].fullmatch(value):
            continue
        path = ENV_FACTS[name]
        fact: object = value == "1" if name == "PYTORCH_NVML_BASED_CUDA_CHECK" else value
        if b.put(path, fact, line):
            b.note(f"{name}={value!r}, from line {line.number} of the report")


def _read_run(b: Builder, lines: list[Line], i: int) -> None:
    m = _RUN_RE.search(lines[i].text)
    if not m:
        return
    command = lines[i].text
    j = i
    while command.endswith(_CONTINUED) and j + 1 < len(lines):  # a command split over lines
        j += 1
        command = command[:-1] + " " + lines[j].text
    gpus = m.group("tool") == "nvidia-docker" or bool(_GPU_FLAG_RE.search(command))
    if not b.put("visibility.in_container", True, lines[i]):
        return
    if gpus:
        b.put("visibility.container_evidence", f"`{m.group('tool')} run` with GPU access requested", lines[i])
    else:
        b.put("visibility.container_evidence", f"`{m.group('tool')} run` without --gpus", lines[i])
        b.note(f"line {lines[i].number}: the container is started without --gpus, so it gets no GPU "
               "(unless the NVIDIA runtime is the engine's default)")


def _read_smi(b: Builder, line: Line) -> None:
    lib = _NVML_LIBRARY_RE.match(line.text)
    if lib:
        b.detail("nvml_library", lib.group(1), line)
        b.note(f"nvidia-smi names the user-mode NVML library {lib.group(1)}, which the kernel module did not match")
    m = _SMI_HEADER_RE.search(line.text)
    if not m:
        return
    driver, cuda = m.group("driver"), m.group("cuda")
    if not b.put("driver.nvml.driver_version", driver, line) and b.get("driver.nvml.driver_version") != driver:
        b.note(f"line {line.number}: nvidia-smi reports driver {driver}, unlike the dump's "
               f"{b.get('driver.nvml.driver_version')}")
    b.put("driver.nvml.cuda_driver_version", compat.cuda_to_int(cuda), line)
    b.put("driver.nvml.loaded", True, line)
    b.put("driver.nvidia_smi.works", True, line)
    b.note(f"nvidia-smi's header: driver {driver}, supporting CUDA up to {cuda}")
