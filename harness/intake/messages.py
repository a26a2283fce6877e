"""torch's and the driver's failure messages pasted above a dump, read into facts.

The messages themselves, with their sources, live in the failure catalogue (`harness.catalogue`,
data/failures.json); this module scans each line with it and turns what it finds into facts and notes.
"""

from __future__ import annotations

import re

from harness import catalogue
from harness.facts import GpuFact
from harness.intake import match
from harness.intake.clean import strip_triggered
from harness.intake.match import Found
from harness.intake.parsed import Builder, Line

# The catalogue rows torch raises (or, before 2.x, warned) when CUDA cannot start: the message starts there.
_INIT_IDS = ("torch.driver_too_old", "torch.no_driver", "torch.unknown_error", "torch.init_failed",
             "torch.unexpected_error", "torch.no_gpus", "torch.not_compiled", "cuda.insufficient_driver")
# The message is what torch said unless the line is the source that raises it (a traceback's
# `raise AssertionError("...")`, an `assert ..., "..."`): a message quoted in prose was said too.
_SOURCE_RE = re.compile(r"(?:\braise\s{1,4}\w{1,80}\(|\bassert\b.{0,200}|\bwarn\w{0,10}\()\s{0,4}[rfb]?['\"]{1,3}$")
_ARCH_PREFIX = re.compile(r"sm_|compute_")


def read(b: Builder, lines: list[Line], found: list[list[Found]] | None = None) -> None:
    """Every recognised message in the report, first occurrence first."""
    found = match.find_all(lines) if found is None else found
    for i, line in enumerate(lines):
        hits = found[i]
        if not hits:
            continue
        first = {f.id: f for f in reversed(hits)}  # the first hit of each entry
        _read_init(b, line, hits, first)
        _read_arch(b, line, first)
        if "torch.cc_list_head" in first:
            _read_cc_list(b, found[i + 1:], line)
        _read_nvml(b, line, first)
        _read_other(b, line, first)


def _said(before: str) -> bool:
    return not _SOURCE_RE.search(before[-300:])


def _read_init(b: Builder, line: Line, hits: list[Found], found: dict[str, Found]) -> None:
    text = line.text
    prefix = catalogue.torch_init_prefix()
    at = text.find(prefix)
    init = next((f for f in hits if f.id in _INIT_IDS), None)
    if init is not None and init.before().rstrip().endswith(prefix.strip()):
        message = strip_triggered(init.tail())
        if not b.put("torch.init_warning", message, line):
            b.add_warning(message, line)
    elif at >= 0:
        message = strip_triggered(text[at + len(prefix):])
        if not b.put("torch.init_warning", message, line):
            b.add_warning(message, line)
    elif init is not None and _said(init.before()):
        b.put("torch.init_error", strip_triggered(init.tail()), line)
    else:
        return
    too_old = found.get("torch.driver_too_old")
    if too_old:
        version = int(too_old.hit.params["found"])
        b.put("driver.libcuda.driver_version", version, line)
        b.infer("driver.libcuda.loaded", True, line, "torch read the driver's CUDA version through libcuda")
        b.note(f"the driver's libcuda reports CUDA {version // 1000}.{version % 1000 // 10} ({version}): "
               "torch read it with cudaDriverGetVersion and found it too old for its runtime")
    not_compiled = found.get("torch.not_compiled")
    if not_compiled and not b.known("torch.cuda"):
        b.put("torch.importable", True, line)
        b.put("torch.cuda", None, line)
        b.note(f"a CPU-only torch: it says '{not_compiled.hit.text}'")
    if "torch.no_driver" in found:
        b.note("torch found no driver: the CUDA runtime got driver version 0, which it reports when "
               "libcuda.so.1 cannot be loaded (torch's words are kept; libcuda was not probed)")



def _read_arch(b: Builder, line: Line, found: dict[str, Found]) -> None:
    arch = found.get("torch.arch_not_compatible")
    if arch:
        name, sm = arch.hit.params["name"].strip(), arch.hit.params["sm"]
        cc = f"{int(sm[:-1])}.{sm[-1]}"
        said = arch.tail()
        b.add_warning(strip_triggered(said[max(0, said.find(name)):]), line)
        _set_capability(b, name, cc, None, line)
        b.note(f"{name}: compute capability {cc}, from torch's warning that sm_{sm} is not compatible")
    old = found.get("torch.gpu_too_old")
    if old:
        cc = f"{old.hit.params['major']}.{old.hit.params['minor']}"
        b.add_warning(strip_triggered(old.tail()), line)
        _set_capability(b, old.hit.params["name"].strip(), cc, int(old.hit.params["index"]), line)
    supports = found.get("torch.arch_list")
    if supports:
        arches = [a for a in supports.hit.params["arches"].split() if _ARCH_PREFIX.match(a)]
        if arches and b.put("torch.arch_list", arches, line):
            b.note(f"the wheel's architectures ({' '.join(arches)}), from torch's warning")


def _read_cc_list(b: Builder, following: list[list[Found]], head: Line) -> None:
    """torch 2.13+'s list of the capabilities it was built for, as sm_XY names."""
    arches: list[str] = []
    for hits in following:
        item = next((f.hit for f in hits if f.id == "torch.cc_list_item"), None)
        if item is None:
            break
        arch = f"sm_{item.params['major']}{item.params['minor']}"
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


def _read_nvml(b: Builder, line: Line, found: dict[str, Found]) -> None:
    failed = found.get("nvml.init_failed")
    cant = found.get("torch.cant_init_nvml")
    if failed:
        reason = failed.hit.params["reason"].strip().rstrip("`'\".,;)")
        code = catalogue.nvml_code_of(reason)
        entry = catalogue.by_nvml_return(code) if code is not None else None
        if entry is not None and entry.code is not None:
            reason = entry.code.text  # NVML's own spelling, whatever case the tool printed
        if b.put("driver.nvml.init_error", reason, line):
            b.put("driver.nvml.init_error_code", code, line)
            b.put("driver.nvml.loaded", code != catalogue.code_of("nvml.library_not_found"), line)
    elif cant:
        b.add_warning(cant.hit.text, line)
        if b.put("driver.nvml.init_error", cant.hit.text, line):
            b.put("driver.nvml.loaded", True, line)
            b.note(f"torch could load libnvidia-ml.so.1 but nvmlInit failed ('{cant.hit.text}'); "
                   "NVML's own reason is not in the report")
    smi = found.get("smi.no_driver")
    if smi:
        b.put("driver.nvidia_smi.works", False, line, overwrite=True)
        b.put("driver.nvidia_smi.output", smi.tail(), line)


def _read_other(b: Builder, line: Line, found: dict[str, Found]) -> None:
    no_kernel = found.get("cuda.no_kernel_image")
    if no_kernel:
        b.add_warning(strip_triggered(no_kernel.tail()), line)
        b.note(f"line {line.number}: '{no_kernel.hit.text}': the wheel has no kernels for this GPU's architecture")
    no_runtime = found.get("docker.no_gpu_runtime")
    if no_runtime:
        b.note(f"line {line.number}: docker has no NVIDIA runtime on that host ('{no_runtime.hit.text}'): install "
               "the NVIDIA container toolkit")
    for f in found.values():
        if f.hit.entry.layer in ("extension", "pip"):
            # The rest of the stack (harness/stack): not torch's verdict, but what the user will meet next.
            b.note(f"line {line.number}: '{f.hit.text}': {f.hit.entry.meaning} (`python -m harness stack` in that "
                   "environment names the distribution and its fix)")
            b.clue("extension_failure", line)  # a report about the stack, though it names no torch fact
    for key in ("cdi.unresolvable", "cdi.missing_host_device", "docker.no_cdi"):
        refused = found.get(key)
        if refused:
            b.note(f"line {line.number}: the engine refused the container's CDI devices ('{refused.hit.text}'): "
                   f"{refused.hit.entry.meaning}")
            b.clue("gpu_refused", line)
    denied = found.get("toolkit.device_cgroup_denied")
    if denied:
        # The toolkit's notice (#48): after daemon-reload the nodes stay but the device cgroup denies them.
        if b.put("driver.dev_access", {"/dev/nvidiactl": "EPERM: Operation not permitted"}, line):
            b.put("driver.dev_nodes", ["/dev/nvidiactl"], line)
            b.put("visibility.in_container", True, line)
        b.note(f"line {line.number}: '{denied.hit.text}': {denied.hit.entry.meaning}")
    refused_lib = found.get("loader.version_not_found") or found.get("loader.bad_library")
    if refused_lib and "libcuda" in refused_lib.hit.params.get("library", ""):
        # The loader named the file it refused: the driver's library is there but does not load.
        b.put("driver.libcuda.loaded", False, line)
        b.put("driver.libcuda.error", refused_lib.tail().strip(), line)
        b.put("driver.libcuda.file", refused_lib.hit.params["library"], line)
    req = found.get("toolkit.requirement")
    if req:
        b.note(f"line {line.number}: the image requires {req.hit.params['condition']} and the host driver does "
               "not meet it (nvidia-container-cli refused to start the container)")
