"""Read a pasted `python -m torch.utils.collect_env` output (torch 1.x to 2.14) into harness facts."""

from __future__ import annotations

import re

from harness import compat
from harness.facts import GpuFact
from harness.intake import hints, messages, packages, repl, unknowns
from harness.intake.clean import NOT_A_REPORT, check_text
from harness.intake.match import Found
from harness.intake.normal import normalise
from harness.intake.parsed import Builder, Line, ParsedReport, ReportError
from harness.intake.sections import Dump, read_dump

# What collect_env prints for a value it has not got (replace_nones, 'No CUDA' when
# torch.cuda.is_available() is False and nvidia-smi/nvcc gave nothing, 'N/A' without torch).
NOT_COLLECTED = ("could not collect", "no cuda", "n/a", "none", "")
_VERSION_RE = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")
_LABEL_RE = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)")
# Linear patterns only (no lazy group before an optional tail): the UUID is cut off by _UUID_RE.
_GPU_RE = re.compile(r"^GPU\s+(\d{1,6})\s*[:\uff1a]\s*(\S.*)$")
_UUID_RE = re.compile(r"\(UUID:\s*(GPU-[0-9A-Fa-f-]{1,64})\)$")
_MACHINE_RE = re.compile(r"\b(x86_64|aarch64|arm64|ppc64le|s390x|AMD64|ARM64|i686)\b")
_CPU_NAME_RE = re.compile(r"^(?:Model name:|Name[=:])\s*(.+)$")
_DETAILS = ("debug_build", "gcc", "clang", "cmake", "libc", "cuda_module_loading", "xpu_available",
            "hip_runtime", "miopen", "xnnpack", "allocator_config")


def parse_collect_env(text: str) -> ParsedReport:
    """Facts from a collect_env dump and the warnings pasted around it; ReportError if it is none."""
    check_text(text)
    lines = normalise(text)
    dump = read_dump(lines)
    if not is_dump(dump):
        if dump.header is not None:
            raise ReportError(f"the collect_env output stops at line {dump.header.number}, before its first "
                              "field ('PyTorch version: ...'): paste the whole output")
        raise ReportError("not a collect_env output: none of its fields ('PyTorch version:', 'Is CUDA "
                          f"available:', 'Nvidia driver version:', ...) was found; {NOT_A_REPORT}")
    b = Builder("collect_env")
    read(b, lines, dump)
    if not any(p.split(".")[0] in ("torch", "driver", "host") for p in b.provenance):
        raise ReportError("the collect_env output is cut off before anything it reports about torch, the "
                          "driver or the system: paste the whole output")
    return b.build("collect_env", unknowns.for_dump(b.facts, set(b.provenance), dump))


def is_dump(dump: Dump) -> bool:
    """Whether the lines hold collect_env's own fields (a bullet 'OS: ...' alone is prose, not a dump)."""
    strong = {"torch_version", "cuda_built", "cuda_available", "driver", "gpus", "libraries", "rocm_built"}
    if dump.header is not None and dump.fields:
        return True
    return len(dump.fields) >= 2 and bool(strong & set(dump.fields))


def read(b: Builder, lines: list[Line], dump: Dump, found: list[list[Found]] | None = None) -> None:
    """The dump's fields and the messages and hints around it, into the builder."""
    _read_torch(b, dump)
    _read_host(b, dump)
    _read_gpus(b, dump)
    _read_driver(b, dump)
    _read_details(b, dump)
    messages.read(b, lines, found)
    hints.read(b, lines)
    repl.read(b, lines)
    packages.read(b, dump.fields.get("libraries"))
    if dump.dumps > 1:
        b.note(f"the report holds {dump.dumps} collect_env outputs; the first value of each field is read")


def _value(dump: Dump, name: str) -> str | None:
    """A field's value, or None when absent or not collected."""
    f = dump.fields.get(name)
    if f is None or f.value.lower() in NOT_COLLECTED:
        return None
    return f.value


def _read_torch(b: Builder, dump: Dump) -> None:
    f = dump.fields.get("torch_version")
    version = f.value.split()[0] if f and f.value else ""
    if f and version.lower() == "n/a":
        b.put("torch.importable", False, f.line)
        b.note("torch could not be imported where collect_env ran ('PyTorch version: N/A')")
        return
    if f and version[:1].isdigit():
        b.put("torch.importable", True, f.line)
        b.put("torch.version", version, f.line)
    label = _LABEL_RE.search(version)
    built = dump.fields.get("cuda_built")
    cuda = _VERSION_RE.match(built.value) if built else None
    if built and cuda:
        b.put("torch.cuda", cuda.group(1), built.line)
        b.note(f"torch {version}: a CUDA {cuda.group(1)} build (from 'PyTorch version' and 'CUDA used to build "
               "PyTorch')")
        if label and label.group(1).startswith("cu") and compat.variant_cuda(label.group(1)) != cuda.group(1):
            b.note(f"the version label +{label.group(1)} disagrees with 'CUDA used to build PyTorch: {built.value}'")
    elif built and b.get("torch.importable") and built.value.lower() in ("none", "could not collect", "no cuda"):
        b.put("torch.cuda", None, built.line)
        if label is None or label.group(1) == "cpu":
            b.note(f"torch {version}: built without CUDA ('CUDA used to build PyTorch: {built.value}')")
    elif label and f and not built:
        cuda_label = compat.variant_cuda(label.group(1))
        if cuda_label or label.group(1) == "cpu":
            b.put("torch.cuda", cuda_label, f.line)
            b.note(f"torch {version}: CUDA {cuda_label or 'none'} read from the version label alone (the dump "
                   "has no 'CUDA used to build PyTorch' line)")
    rocm = dump.fields.get("rocm_built")
    if rocm and b.get("torch.importable"):
        b.put("torch.hip", _value(dump, "rocm_built"), rocm.line)
        if b.get("torch.hip"):
            b.put("torch.cuda", None, rocm.line)  # a ROCm build has torch.version.cuda = None
            b.note(f"torch {version}: a ROCm {b.get('torch.hip')} build (from 'ROCM used to build PyTorch')")
    available = dump.fields.get("cuda_available")
    if available and available.value.lower() in ("true", "yes", "false", "no"):
        b.put("torch.is_available", available.value.lower() in ("true", "yes"), available.line)


def _read_host(b: Builder, dump: Dump) -> None:
    os_field, plat = dump.fields.get("os"), dump.fields.get("python_platform")
    system, source = None, None
    if plat and plat.value:
        system = {"Linux": "Linux", "Windows": "Windows", "macOS": "Darwin", "Darwin": "Darwin"}.get(
            re.split(r"[-\s]", plat.value, maxsplit=1)[0])
        source = plat
        b.put("host.platform", plat.value, plat.line)
    os_value = _value(dump, "os")
    if system is None and os_field and os_value:
        low = os_value.lower()
        system = ("Windows" if "windows" in low else "Darwin" if low.startswith(("macos", "mac os"))
                  else None if "cygwin" in low else "Linux")
        source = os_field
    if system and source:
        b.put("host.os", system, source.line)
    for field in (os_field, plat, dump.fields.get("python")):
        m = _MACHINE_RE.search(field.value) if field else None
        if field and m:
            b.put("host.machine", m.group(1), field.line)
            break
    python = dump.fields.get("python")
    pv = _VERSION_RE.match(python.value) if python else None
    if python and pv:
        b.put("host.python", pv.group(1), python.line)
    if os_field and os_value:
        b.detail("os", os_value, os_field.line)
    if plat and "microsoft" in plat.value.lower():
        b.note("WSL: the GPU driver is the Windows host's, and nvidia-smi shows its Windows version number")


def _nvidia_host(b: Builder) -> bool:
    """Whether collect_env asked nvidia-smi here (Linux and Windows, not ROCm builds, not macOS)."""
    return b.get("host.os") in ("Linux", "Windows") and not b.get("torch.hip")


def _read_gpus(b: Builder, dump: Dump) -> None:
    f = dump.fields.get("gpus")
    if f is None:
        return
    rows = ([(f.line, f.value)] if f.value else []) + [(ln, ln.text) for ln in f.more]
    named = False
    for row, text in rows:
        m = _GPU_RE.match(text)
        if m:
            name = m.group(2).strip()
            uuid = _UUID_RE.search(name)
            gpu: GpuFact = {"index": int(m.group(1)), "name": name[:uuid.start()].strip() if uuid else name}
            if uuid:
                gpu["uuid"] = uuid.group(1)
            b.add_device("driver.nvml.devices", gpu, row)
            named = True
        elif text.startswith("MIG "):
            b.note(f"line {row.number}: MIG instances are configured ({text.split(':')[0].strip()})")
    if named:
        b.put("driver.nvml.loaded", True, f.line)
        b.put("driver.nvidia_smi.works", True, f.line)
        b.note("the GPU list comes from `nvidia-smi -L` (NVML), not from torch")
    elif _value(dump, "gpus") and not _nvidia_host(b):
        # ROCm builds and macOS print torch.cuda.get_device_name(None): the current device only.
        b.add_device("torch.devices", {"index": None, "name": f.value}, f.line)
        b.note(f"'{f.value}' is the name torch gives its current device; the device count is not printed")


def _read_driver(b: Builder, dump: Dump) -> None:
    f = dump.fields.get("driver")
    if f is None or not _nvidia_host(b):
        return
    if _VERSION_RE.match(f.value):
        b.put("driver.nvml.driver_version", f.value.split()[0], f.line)
        b.put("driver.nvml.loaded", True, f.line)
        b.put("driver.nvidia_smi.works", True, f.line)
        if b.get("host.os") == "Windows":
            b.note(f"driver {f.value} is a Windows driver number: Windows and Linux drivers are numbered apart, "
                   "so it cannot be looked up in the Linux driver tables directly")
    elif f.value.lower() in ("could not collect", "no cuda"):
        b.put("driver.nvidia_smi.works", False, f.line)
        b.note(f"nvidia-smi gave collect_env no driver version ('{f.value}'): it is missing or failed")


def _read_details(b: Builder, dump: Dump) -> None:
    nvcc = dump.fields.get("nvcc")
    if nvcc and _value(dump, "nvcc"):
        b.detail("nvcc", nvcc.value, nvcc.line)
        b.note(f"'CUDA runtime version: {nvcc.value}' is the system CUDA toolkit's nvcc, not the runtime inside "
               "the torch wheel; it is kept as a detail, not as torch's CUDA runtime")
    for name in _DETAILS:
        f = dump.fields.get(name)
        if f and f.value:
            b.detail(name, f.value, f.line)
    cudnn = dump.fields.get("cudnn")
    if cudnn and (cudnn.value or cudnn.more):
        b.detail("cudnn", " ".join([cudnn.value] + [ln.text for ln in cudnn.more]).strip(), cudnn.line)
    cpu = dump.fields.get("cpu")
    for row in cpu.more if cpu else ():
        m = _CPU_NAME_RE.match(row.text)
        if m or (cpu and row is cpu.more[0] and ":" not in row.text and "=" not in row.text):
            b.detail("cpu", m.group(1).strip() if m else row.text, row)
            break

