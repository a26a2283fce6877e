"""torch's and the driver's failure messages pasted above a dump, read into facts.

The texts are torch's own (c10/cuda/CUDAFunctions.cpp, torch/cuda/__init__.py) and NVIDIA's
(nvidia-smi, NVML, nvidia-container-cli), as tabulated in facts/torch-failures.md.
"""

from __future__ import annotations

import re

from harness.facts import GpuFact
from harness.report.model import Builder, Line
from harness.report.text import strip_triggered

_INIT_PREFIX = "CUDA initialization: "
# Messages torch raises (or, before 2.x, warned) when CUDA cannot start: the message starts here.
_INIT_MESSAGES = re.compile(
    r"The NVIDIA driver on your system is too old|Found no NVIDIA driver on your system|"
    r"CUDA unknown error - this may be due to|CUDA driver initialization failed|"
    r"Unexpected error from cudaGetDeviceCount\(\)|No CUDA GPUs are available|"
    r"Torch not compiled with CUDA enabled|CUDA driver version is insufficient for CUDA runtime version"
)
# The message is what was raised when it opens the line or follows 'SomeError: ' (not a traceback's
# source line such as `raise AssertionError("Torch not compiled with CUDA enabled")`).
_RAISED_RE = re.compile(r"(?:Error|Exception|Warning):\s*$")
_TOO_OLD_RE = re.compile(r"too old \(found version (\d{1,9})\)")
_NOT_COMPILED = "Torch not compiled with CUDA enabled"
_ARCH_RE = re.compile(
    r"(?:^|Warning:\s*)(?P<name>[^:]{1,120}?) with CUDA capability sm_(?P<sm>\d{2,4}) is not compatible")
_SUPPORTS_RE = re.compile(r"The current PyTorch install supports CUDA capabilities ((?:\s*(?:sm|compute)_\d+a?)+)")
# torch 1.x warned '... which is of cuda capability 3.0'; recent releases (2.13, 2.14 here, in
# torch/cuda/__init__.py _warn_unsupported_code) say '... of compute capability (CC) 6.1.' and list
# the capabilities they were built for, one '- 7.5 which supports hardware CC ...' line each.
_FOUND_GPU_RE = re.compile(
    r"Found GPU(\d{1,4}) (.{1,120}?) which is of (?:cuda capability|compute capability \(CC\)) (\d{1,3})\.(\d{1,3})")
_CC_LIST_HEAD = "The following list shows the CCs this version of PyTorch was built for"
_CC_ITEM_RE = re.compile(r"^- (\d+)\.(\d+) which supports hardware CC")
_NVML_RE = re.compile(r"Failed to initialize NVML: (\S.*)")
_CLI_NVML_RE = re.compile(r"nvml error: (\S.*)", re.I)
_SMI_FAILED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
_CANT_NVML = "Can't initialize NVML"
_NO_KERNEL = "no kernel image is available for execution on the device"
_NO_RUNTIME_RE = re.compile(r'could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]')
_REQUIREMENT_RE = re.compile(r"nvidia-container-cli: requirement error: unsatisfied condition: (\S+?),")

# nvmlErrorString texts and their nvmlReturn_t codes (NVML API reference, nvmlReturn_t).
NVML_ERRORS = {
    "driver/library version mismatch": 18,
    "driver not loaded": 9,
    "insufficient permissions": 4,
    "unknown error": 999,
    "gpu is lost": 15,
    "gpu access blocked by the operating system": 17,
    "nvml shared library not found": 12,
}


def read(b: Builder, lines: list[Line]) -> None:
    """Every recognised message in the report, first occurrence first."""
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        _read_init(b, line)
        _read_arch(b, line)
        if _CC_LIST_HEAD in text:
            _read_cc_list(b, lines[i + 1:], line)
        _read_nvml(b, line)
        _read_other(b, line)


def _read_init(b: Builder, line: Line) -> None:
    text = line.text
    at = text.find(_INIT_PREFIX)
    m = _INIT_MESSAGES.search(text)
    if at >= 0:
        message = strip_triggered(text[at + len(_INIT_PREFIX):])
        if not b.put("torch.init_warning", message, line):
            _warn(b, message, line)
    elif m and (not text[:m.start()].strip() or _RAISED_RE.search(text[max(0, m.start() - 40):m.start()])):
        b.put("torch.init_error", strip_triggered(text[m.start():]), line)
    else:
        return
    too_old = _TOO_OLD_RE.search(text)
    if too_old:
        version = int(too_old.group(1))
        b.put("driver.libcuda.driver_version", version, line)
        b.put("driver.libcuda.loaded", True, line)
        b.note(f"the driver's libcuda reports CUDA {version // 1000}.{version % 1000 // 10} ({version}): "
               "torch read it with cudaDriverGetVersion and found it too old for its runtime")
    if _NOT_COMPILED in text and not b.known("torch.cuda"):
        b.put("torch.importable", True, line)
        b.put("torch.cuda", None, line)
        b.note("a CPU-only torch: it says 'Torch not compiled with CUDA enabled'")
    if "Found no NVIDIA driver" in text:
        b.note("torch found no driver: the CUDA runtime got driver version 0, which it reports when "
               "libcuda.so.1 cannot be loaded (torch's words are kept; libcuda was not probed)")


def _warn(b: Builder, message: str, line: Line) -> None:
    """Keep a further torch warning in torch.warnings."""
    warnings = b.get("torch.warnings")
    if not isinstance(warnings, list):
        warnings = []
        b.put("torch.warnings", warnings, line)
    if message not in warnings:
        warnings.append(message)


def _read_arch(b: Builder, line: Line) -> None:
    text = line.text
    m = _ARCH_RE.search(text)
    if m:
        name, sm = m.group("name").strip(), m.group("sm")
        cc = f"{int(sm[:-1])}.{sm[-1]}"
        _warn(b, strip_triggered(text[m.start("name"):]), line)
        _set_capability(b, name, cc, None, line)
        b.note(f"{name}: compute capability {cc}, from torch's warning that sm_{sm} is not compatible")
    old = _FOUND_GPU_RE.search(text)
    if old:
        cc = f"{old.group(3)}.{old.group(4)}"
        _warn(b, strip_triggered(text[old.start():]), line)
        _set_capability(b, old.group(2).strip(), cc, int(old.group(1)), line)
    supports = _SUPPORTS_RE.search(text)
    if supports and b.put("torch.arch_list", supports.group(1).split(), line):
        b.note(f"the wheel's architectures ({supports.group(1).strip()}), from torch's warning")


def _read_cc_list(b: Builder, following: list[Line], head: Line) -> None:
    """torch 2.8+'s list of the capabilities it was built for, as sm_XY names."""
    arches: list[str] = []
    for line in following:
        m = _CC_ITEM_RE.match(line.text)
        if not m:
            break
        arch = f"sm_{m.group(1)}{m.group(2)}"
        if arch not in arches:
            arches.append(arch)
    if arches and b.put("torch.arch_list", arches, head):
        b.note(f"the wheel's architectures ({' '.join(arches)}), from torch's list of the capabilities it was "
               "built for (whether each is a cubin or PTX is not said)")


def _set_capability(b: Builder, name: str, cc: str, index: int | None, line: Line) -> None:
    """A device torch named: its compute capability, on the driver's entry of the same name too."""
    for i, gpu in enumerate(b.get("driver.nvml.devices") or []):
        if gpu.get("name") == name and gpu.get("compute_capability") is None:
            gpu["compute_capability"] = cc
            b.provenance[f"driver.nvml.devices.{i}.compute_capability"] = (line.number, line.raw)
            index = gpu.get("index") if index is None else index
    if not any(g.get("name") == name for g in b.get("torch.devices") or []):
        seen: GpuFact = {"index": index, "name": name, "compute_capability": cc}
        b.add_device("torch.devices", seen, line)


def _read_nvml(b: Builder, line: Line) -> None:
    text = line.text
    m = _NVML_RE.search(text) or (_CLI_NVML_RE.search(text) if "nvidia-container-cli" in text else None)
    if m:
        reason = m.group(1).strip()
        code = NVML_ERRORS.get(reason.lower())
        if code == 18:
            reason = "Driver/library version mismatch"
        if b.put("driver.nvml.init_error", reason, line):
            b.put("driver.nvml.init_error_code", code, line)
            b.put("driver.nvml.loaded", code != 12, line)
    elif _CANT_NVML in text:
        _warn(b, _CANT_NVML, line)
        if b.put("driver.nvml.init_error", _CANT_NVML, line):
            b.put("driver.nvml.loaded", True, line)
            b.note("torch could load libnvidia-ml.so.1 but nvmlInit failed ('Can't initialize NVML'); "
                   "NVML's own reason is not in the report")
    if _SMI_FAILED in text:
        b.put("driver.nvidia_smi.works", False, line, overwrite=True)
        b.put("driver.nvidia_smi.output", text[text.find(_SMI_FAILED):], line)


def _read_other(b: Builder, line: Line) -> None:
    text = line.text
    if _NO_KERNEL in text:
        _warn(b, strip_triggered(text[text.find(_NO_KERNEL):]), line)
        b.note(f"line {line.number}: '{_NO_KERNEL}': the wheel has no kernels for this GPU's architecture")
    if _NO_RUNTIME_RE.search(text):
        b.note(f"line {line.number}: docker has no NVIDIA runtime on that host ('could not select device "
               "driver \"\" with capabilities: [[gpu]]'): install the NVIDIA container toolkit")
    req = _REQUIREMENT_RE.search(text)
    if req:
        b.note(f"line {line.number}: the image requires {req.group(1)} and the host driver does not meet it "
               "(nvidia-container-cli refused to start the container)")
