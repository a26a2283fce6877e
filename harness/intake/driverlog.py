"""What the driver side printed: nvidia-smi's table and `-L` rows, the kernel log (NVRM, Xid), lshw, and the
CUDA runtime's error codes in old and new tracebacks (`THCudaCheck FAIL ... error=802`, `cuda runtime error
(999)`, `CUDA error: ...`).

The error codes are cudaError_t values (CUDA Runtime API reference, "Data types", cudaError); before
CUDA 10.1 some were numbered apart (38, 48, 30), after it 100, 209, 999. What each code and message means
is the failure catalogue's (harness/catalogue): the readers look them up there.
"""

from __future__ import annotations

import re

from harness.catalogue import lookup
from harness.facts import GpuFact
from harness.intake import match
from harness.intake.match import Found
from harness.intake.parsed import Builder, Line
from harness.schema import DRIVER_BROKEN

# What one of nvidia-smi's lines holds (its header, a table row or border, a `-L` row, a memory cell).
_SMI_WORDS_RE = re.compile(r"NVIDIA-SMI|\||GPU |MiB|No devices were found")
DRIVER_RE = re.compile(r"[1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?")
_OLD_HEADER_RE = re.compile(r"NVIDIA-SMI\s{1,8}(?P<smi>\d{3}\.\d{1,3}(?:\.\d{1,3})?)\s{1,40}Driver Version:\s{0,4}"
                            r"(?P<driver>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
# A GPU row of nvidia-smi's table: '|   0  TITAN X (Pascal)    Off  | 0000:01:00.0  On |'.
_TABLE_ROW_RE = re.compile(r"^\|\s{1,6}(?P<index>\d{1,2})\s{1,6}(?P<name>\S.{1,60}?)\s{1,40}(?:On|Off)\s{1,6}\|")
_MEMORY_RE = re.compile(r"\|\s{0,20}\d{1,7}MiB\s{0,3}/\s{0,3}(?P<total>\d{1,7})MiB\s{0,3}\|")
# The memory and utilisation cells of a GPU row: '|   10240MiB / 24576MiB |      3%      Default |'.
_BUSY_RE = re.compile(r"(?P<used>\d{1,7})MiB\s{0,3}/\s{0,3}\d{1,7}MiB\s{0,6}\|\s{0,12}(?P<util>\d{1,3})%")
# Memory a process of the work holds rather than a desktop's few hundred MiB (nvidia-smi lists Xorg and a
# compositor at 100-500 MiB on an idle card), and utilisation low enough that the GPU mostly waits.
HELD_MIB, IDLE_UTIL = 1024, 10
_LIST_ROW_RE = re.compile(
    r"^GPU\s(?P<index>\d{1,2}):\s(?P<name>[^()]{1,80}?)\s\(UUID:\s(?P<uuid>GPU-[0-9a-fA-F-]{1,64})\)")
_NVRM_VERSION_RE = re.compile(r"NVRM version:\s{0,4}NVIDIA .{0,40}?Kernel Module\s{1,6}(?P<version>\d{3}\.\d{1,3}"
                              r"(?:\.\d{1,3})?)")
_KERNEL_VERSION_RE = re.compile(r"kernel module has the version (?P<kernel>\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_THC_RE = re.compile(r"THCudaCheck FAIL .{0,200}?error\s?=\s?(?P<code>\d{1,4})\s?:\s?(?P<text>.{1,120})")
_RUNTIME_RE = re.compile(r"cuda runtime error \((?P<code>\d{1,4})\)\s?:\s?(?P<text>[^\n]{1,120}?)(?:\sat\s|$)")
_NVCC_RE = re.compile(r"Cuda compilation tools, release (?P<release>\d{1,2}\.\d{1,2})")
# cudaError_t values numbered apart before CUDA 10.1 (CUDA 10.0 runtime API, cudaError), as the catalogue
# rows they are now: 38, 48 and 10 became 100, 209 and 101; 30 (unknown) is left out, it names no layer.
LEGACY_RUNTIME = {38: "cuda.no_device", 48: "cuda.no_kernel_image", 10: "cuda.invalid_device"}
# `nvidia-smi --query-gpu=name,driver_version --format=csv`: a header of field names, then a row per GPU.
_QUERY_HEADER_RE = re.compile(r"^(?:[a-z_.]{2,40}(?: \[[^\]]{1,12}\])?, ){0,12}[a-z_.]{2,40}(?: \[[^\]]{1,12}\])?$")
_QUERY_ROWS = 16
# Xid 79 (NVIDIA's Xid catalogue): the GPU fell off the bus; the kernel log says so in words too.
GPU_FELL_OFF = "79"
# Rows that say CUDA works in that process (it counted devices, or allocated on one): the clue each sets.
WORKING = {"cuda.invalid_device": "invalid_ordinal", "torch.out_of_memory": "cuda_oom",
           "framework.lightning_ordinal": "invalid_ordinal", "cuda.device_assert": "kernel_ran",
           "cuda.illegal_address": "kernel_ran"}


def read(b: Builder, lines: list[Line], found: list[list[Found]] | None = None) -> None:
    found = match.find_all(lines) if found is None else found
    for i, line in enumerate(lines):
        hits, text = found[i], line.text
        if not text:
            continue
        _read_smi(b, line)
        if "driver_version" in text and "," in text:
            _read_query(b, line, lines[i + 1:i + 1 + _QUERY_ROWS])
        if hits or "NVRM" in text or "driver=nvidia" in text:
            _read_kernel(b, line, hits)
        if hits or "rror" in text:
            _read_runtime(b, line, hits)
        nvcc = _NVCC_RE.search(text) if "compilation tools" in text else None
        if nvcc:
            b.detail("nvcc", nvcc.group("release"), line)
            b.note(f"line {line.number}: nvcc {nvcc.group('release')} is the system CUDA toolkit, not the runtime "
                   "inside the torch wheel")


def _read_query(b: Builder, header: Line, rows: list[Line]) -> None:
    """The rows under nvidia-smi's --query-gpu header: the driver version, and each GPU's name."""
    if not _QUERY_HEADER_RE.match(header.text):
        return
    fields = [f.split(" [")[0].strip() for f in header.text.split(",")]
    for row in rows:
        values = [v.strip() for v in row.text.split(",")]
        if len(values) != len(fields):
            break
        got = dict(zip(fields, values))  # noqa: B905  (lengths checked above; strict= is 3.10+)
        driver = DRIVER_RE.fullmatch(got.get("driver_version", ""))
        if driver:
            b.put("driver.nvml.driver_version", driver.group(0), row)
            b.put("driver.nvml.loaded", True, row)
            b.put("driver.nvidia_smi.works", True, row)
        if got.get("name") and got["name"] not in [g.get("name") for g in b.get("driver.nvml.devices") or []]:
            gpu: GpuFact = {"index": len(b.get("driver.nvml.devices") or []), "name": got["name"]}
            b.add_device("driver.nvml.devices", gpu, row)


def _read_smi(b: Builder, line: Line) -> None:
    text = line.text
    if not _SMI_WORDS_RE.search(text):
        return
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
    busy = _BUSY_RE.search(text) if "%" in text else None
    if busy and int(busy.group("used")) >= HELD_MIB and int(busy.group("util")) <= IDLE_UTIL:
        # Alone a desktop can show this too (a Windows card holds GiBs at 0%); the reporter's words about
        # utilisation make it evidence (symptoms.py).
        b.clue("smi_memory_idle", line)
    if "No devices were found" in text:
        b.put("driver.nvidia_smi.works", True, line)
        b.put("driver.nvml.devices", [], line)
        b.note(f"line {line.number}: nvidia-smi found no devices: the driver runs but sees no GPU")


def _read_kernel(b: Builder, line: Line, hits: list[Found]) -> None:
    text = line.text
    version = _NVRM_VERSION_RE.search(text)
    if version:
        b.put("driver.kernel_module_version", version.group("version"), line)
        b.put("driver.proc_version", text, line)
    ids = {f.id: f.hit for f in hits}
    if "kernel.api_mismatch" in ids:
        kernel = _KERNEL_VERSION_RE.search(text)
        if kernel:
            b.put("driver.kernel_module_version", kernel.group("kernel"), line)
        b.infer("driver.nvml.init_error", "Driver/library version mismatch", line,
                "the kernel log's API mismatch is what NVML reports as error 18")
        b.infer("driver.nvml.init_error_code", 18, line, "NVML_ERROR_LIB_RM_VERSION_MISMATCH")
        b.note(f"line {line.number}: {ids['kernel.api_mismatch'].entry.meaning}")
    for ident in ("kernel.xid", "kernel.rm_init_adapter", "kernel.key_rejected"):
        if ident in ids:
            b.clue("kernel_fault", line)
            b.note(f"line {line.number}: {ids[ident].entry.meaning}")
    xid = ids["kernel.xid"].params.get("xid") if "kernel.xid" in ids else None
    if "kernel.fallen_off_bus" in ids or xid == GPU_FELL_OFF:
        b.clue("gpu_fell_off", line)
        b.note(f"line {line.number}: {lookup.entry('kernel.fallen_off_bus').meaning}")
    if "smi.not_found" in ids:
        b.put("driver.nvidia_smi.works", False, line)
        b.note(f"line {line.number}: {ids['smi.not_found'].entry.meaning}")
    if "configuration: driver=nvidia" in text:
        b.clue("kernel_driver_bound", line)


def _read_runtime(b: Builder, line: Line, hits: list[Found]) -> None:
    text = line.text
    m = _THC_RE.search(text) or _RUNTIME_RE.search(text)
    if m:
        code, said = int(m.group("code")), m.group("text").strip()
        entry = lookup.entry(LEGACY_RUNTIME[code]) if code in LEGACY_RUNTIME else lookup.by_cuda_error(code)
        if entry is None or entry.id not in WORKING:
            b.put("torch.init_error", f"cuda runtime error ({code}): {said}", line)
        if entry is not None:
            name = entry.code.name if entry.code else entry.id
            _found(b, line, entry.id, said, f"cuda runtime error {code} is {name}")
    # In torch's own message (torch.unexpected_error, which quotes 'Error 803: ...') the code is
    # torch's to report (messages.py); a CUDA error text on its own says what cuInit returned.
    alone = not any(f.id.startswith("torch.") for f in hits)
    for f in hits:
        if alone or lookup.entry(f.id).layer != "cuda_driver":
            _found(b, line, f.id, f.hit.text)


def _found(b: Builder, line: Line, ident: str, said: str, how: str = "") -> None:
    """A catalogue row the runtime, torch or a framework printed beside (or instead of) torch's own message."""
    entry = lookup.entry(ident)
    if ident == "cuda.no_device":
        b.clue("no_device", line)
    elif ident == "cuda.no_kernel_image":
        b.add_warning(said, line)
    elif ident == "cuda.insufficient_driver":
        b.clue("insufficient_driver", line)
    elif ident in WORKING:
        b.clue(WORKING[ident], line)
        b.note(f"line {line.number}: '{said}': {entry.meaning}")
    elif entry.layer == "framework":
        b.clue("framework_no_gpu", line)
        b.note(f"line {line.number}: '{said}': {entry.meaning}")
    elif ident == "cuda.init_hangs":
        # The report says a call that initialises the driver never returns: torch's, or the driver's own.
        call = "torch.cuda.is_available()" if "is_available" in said else "cuInit(0)"
        b.put("torch.blocked_in" if call.startswith("torch") else "driver.libcuda.blocked_in", call, line)
        b.note(f"line {line.number}: '{said}': {entry.meaning}")
    elif entry.layer == "cuda_driver" and entry.verdict == DRIVER_BROKEN and entry.code is not None:
        b.infer("driver.libcuda.cuinit", entry.code.value, line,
                f"{how or said} is {entry.code.name}, what cuInit returned")

