"""What the driver side printed: nvidia-smi's table and `-L` rows, the kernel log (NVRM, Xid), lshw, and the
CUDA runtime's error codes in old and new tracebacks (`THCudaCheck FAIL ... error=802`, `cuda runtime error
(999)`, `CUDA error: ...`).

The error codes are cudaError_t values (CUDA Runtime API reference, "Data types", cudaError); before
CUDA 10.1 some were numbered apart (38 no device, 48 no kernel image, 30 unknown), after it 100, 209, 999.
"""

from __future__ import annotations

import re

from harness.facts import GpuFact
from harness.report.model import Builder, Line

_OLD_HEADER_RE = re.compile(r"NVIDIA-SMI\s{1,8}(?P<smi>\d{3}\.\d{1,3}(?:\.\d{1,3})?)\s{1,40}Driver Version:\s{0,4}"
                            r"(?P<driver>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
# A GPU row of nvidia-smi's table: '|   0  TITAN X (Pascal)    Off  | 0000:01:00.0  On |'.
_TABLE_ROW_RE = re.compile(r"^\|\s{1,6}(?P<index>\d{1,2})\s{1,6}(?P<name>\S.{1,60}?)\s{1,40}(?:On|Off)\s{1,6}\|")
_MEMORY_RE = re.compile(r"\|\s{0,20}\d{1,7}MiB\s{0,3}/\s{0,3}(?P<total>\d{1,7})MiB\s{0,3}\|")
_LIST_ROW_RE = re.compile(
    r"^GPU\s(?P<index>\d{1,2}):\s(?P<name>[^()]{1,80}?)\s\(UUID:\s(?P<uuid>GPU-[0-9a-fA-F-]{1,64})\)")
_NVRM_VERSION_RE = re.compile(r"NVRM version:\s{0,4}NVIDIA .{0,40}?Kernel Module\s{1,6}(?P<version>\d{3}\.\d{1,3}"
                              r"(?:\.\d{1,3})?)")
_API_MISMATCH_RE = re.compile(r"NVRM: API mismatch: the client has the version "
                              r"(?P<client>\d{3}\.\d{1,3}(?:\.\d{1,3})?), but\s{1,3}"
                              r"(?:this|the) kernel module has the version (?P<kernel>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_XID_RE = re.compile(r"NVRM: Xid \([^)]{0,40}\): (?P<xid>\d{1,3})\b")
_THC_RE = re.compile(r"THCudaCheck FAIL .{0,200}?error\s?=\s?(?P<code>\d{1,4})\s?:\s?(?P<text>.{1,120})")
_RUNTIME_RE = re.compile(r"cuda runtime error \((?P<code>\d{1,4})\)\s?:\s?(?P<text>[^\n]{1,120}?)(?:\sat\s|$)")
_NVCC_RE = re.compile(r"Cuda compilation tools, release (?P<release>\d{1,2}\.\d{1,2})")
_CUDA_ERROR_RE = re.compile(r"CUDA error:\s(?P<text>[a-z][a-z \-]{3,80})")
# The runtime codes whose meaning settles a layer: the cuInit result they carry, or what they say.
CUINIT_OF_RUNTIME = {802: 802, 803: 803, 804: 804, 999: 999, 3: 3, 34: 34}
_NO_DEVICE = (38, 100)
_NO_KERNEL = (48, 209)
_INSUFFICIENT = 35


def read(b: Builder, lines: list[Line]) -> None:
    for line in lines:
        text = line.text
        if not text:
            continue
        _read_smi(b, line)
        _read_kernel(b, line)
        _read_runtime(b, line)
        nvcc = _NVCC_RE.search(text)
        if nvcc:
            b.detail("nvcc", nvcc.group("release"), line)
            b.note(f"line {line.number}: nvcc {nvcc.group('release')} is the system CUDA toolkit, not the runtime "
                   "inside the torch wheel")


def _read_smi(b: Builder, line: Line) -> None:
    text = line.text
    header = _OLD_HEADER_RE.search(text)
    if header:
        b.put("driver.nvml.driver_version", header.group("driver"), line)
        b.put("driver.nvml.loaded", True, line)
        b.put("driver.nvidia_smi.works", True, line)
    row = _TABLE_ROW_RE.match(text) or _LIST_ROW_RE.match(text)
    if row and "NVIDIA-SMI" not in text:
        name = row.group("name").strip()
        known = [g.get("name") for g in b.get("driver.nvml.devices") or []]
        if name not in known or b.get("driver.nvml.devices") is None:
            gpu: GpuFact = {"index": int(row.group("index")), "name": name}
            if "uuid" in row.groupdict() and row.group("uuid"):
                gpu["uuid"] = row.group("uuid")
            b.add_device("driver.nvml.devices", gpu, line)
            b.put("driver.nvml.loaded", True, line)
            b.put("driver.nvidia_smi.works", True, line)
    memory = _MEMORY_RE.search(text)
    devices = b.get("driver.nvml.devices") or []
    if memory and devices and devices[-1].get("memory_total_bytes") is None:
        devices[-1]["memory_total_bytes"] = int(memory.group("total")) << 20
    if "No devices were found" in text:
        b.put("driver.nvidia_smi.works", True, line)
        b.put("driver.nvml.devices", [], line)
        b.note(f"line {line.number}: nvidia-smi found no devices: the driver runs but sees no GPU")


def _read_kernel(b: Builder, line: Line) -> None:
    text = line.text
    version = _NVRM_VERSION_RE.search(text)
    if version:
        b.put("driver.kernel_module_version", version.group("version"), line)
        b.put("driver.proc_version", text, line)
    mismatch = _API_MISMATCH_RE.search(text)
    if mismatch:
        b.put("driver.kernel_module_version", mismatch.group("kernel"), line)
        b.infer("driver.nvml.init_error", "Driver/library version mismatch", line,
                "the kernel log's API mismatch is what NVML reports as error 18")
        b.infer("driver.nvml.init_error_code", 18, line, "NVML_ERROR_LIB_RM_VERSION_MISMATCH")
        b.note(f"line {line.number}: the user-mode driver {mismatch.group('client')} does not match the kernel "
               f"module {mismatch.group('kernel')}: a driver upgraded without a reboot")
    xid = _XID_RE.search(text)
    if xid:
        b.clue("xid", line)
        b.note(f"line {line.number}: the kernel log reports Xid {xid.group('xid')}: a GPU or driver fault")
    if "configuration: driver=nvidia" in text:
        b.clue("kernel_driver_bound", line)


def _read_runtime(b: Builder, line: Line) -> None:
    text = line.text
    m = _THC_RE.search(text) or _RUNTIME_RE.search(text)
    if m:
        code, said = int(m.group("code")), m.group("text").strip()
        message = f"cuda runtime error ({code}): {said}"
        b.put("torch.init_error", message, line)
        if code in CUINIT_OF_RUNTIME:
            b.infer("driver.libcuda.cuinit", CUINIT_OF_RUNTIME[code], line,
                    f"cuda runtime error {code} is what cuInit returned")
        elif code in _NO_DEVICE:
            b.clue("no_device", line)
        elif code in _NO_KERNEL:
            _warn(b, "no kernel image is available for execution on the device", line)
        elif code == _INSUFFICIENT:
            b.clue("insufficient_driver", line)
        return
    err = _CUDA_ERROR_RE.search(text)
    if err:
        said = err.group("text").strip()
        if "no kernel image" in said:
            _warn(b, said, line)
        elif "no CUDA-capable device" in said:
            b.clue("no_device", line)
    if "CUDA driver version is insufficient for CUDA runtime version" in text:
        b.clue("insufficient_driver", line)
    if "no CUDA-capable device is detected" in text:
        b.clue("no_device", line)


def _warn(b: Builder, message: str, line: Line) -> None:
    warnings = b.get("torch.warnings")
    if not isinstance(warnings, list):
        warnings = []
        b.put("torch.warnings", warnings, line)
    if message not in warnings:
        warnings.append(message)
