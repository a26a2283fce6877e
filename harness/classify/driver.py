"""The driver layer: is an NVIDIA driver reachable, and does it work? (pure)"""

from __future__ import annotations

from harness import remedy
from harness.classify.context import (
    MISMATCH_TEXT,
    NO_DRIVER_TEXT,
    TORCH_CUINIT_TEXTS,
    UNEXPECTED_RE,
    Context,
    fmt_driver,
)
from harness.schema import DRIVER_BROKEN, ERROR, INFO, NO_DRIVER, NOT_VISIBLE, Finding

LAYER = "driver"
NVML_LIBRARY_NOT_FOUND = 12
NVML_DRIVER_NOT_LOADED = 9
NVML_LIB_RM_VERSION_MISMATCH = 18
CUDA_ERROR_NO_DEVICE = 100


def _absence_evidence(ctx: Context) -> list[str]:
    ev = []
    nodes = ctx.driver.get("dev_nodes")
    if nodes is not None:
        ev.append(f"/dev/nvidia*: {', '.join(nodes) if nodes else 'none'}")
    if ctx.driver.get("proc_version") is None and "dev_nodes" in ctx.driver:
        ev.append("/proc/driver/nvidia/version: absent (no NVIDIA kernel module seen)")
    if ctx.libcuda.get("error"):
        ev.append(f"libcuda.so.1 does not load: {ctx.libcuda['error']}")
    nv = ctx.nvml
    if nv.get("init_error"):
        ev.append(f"NVML: {nv['init_error']}")
    smi = ctx.smi
    if smi.get("path") is None and "path" in smi:
        ev.append("nvidia-smi: not on PATH")
    elif smi.get("output") and not smi.get("works"):
        ev.append(f"nvidia-smi: {smi['output'].splitlines()[0]}")
    init_error = ctx.torch.get("init_error") or ""
    if "driver" in init_error.lower():
        ev.append(f"torch.cuda.init(): {init_error}")
    return ev


def check_presence(ctx: Context) -> list[Finding]:
    """No driver at all (a bare host), or a container that was given none."""
    loaded = ctx.libcuda.get("loaded")
    if loaded is True:
        where = ctx.libcuda.get("path") or "libcuda.so.1"
        return [Finding("", INFO, f"NVIDIA driver reachable: {fmt_driver(ctx)}", (f"libcuda loaded from {where}",),
                        layer=LAYER)]
    if loaded is None:
        return _presence_from_torch(ctx)
    nv = ctx.nvml
    caps = ctx.vis.get("nvidia_driver_capabilities")
    nvml_present = nv.get("loaded") is True
    if nvml_present and ctx.in_container:
        evidence = [f"NVML answers: {fmt_driver(ctx)}" if not nv.get("init_error") else f"NVML: {nv['init_error']}",
                    f"libcuda.so.1 does not load: {ctx.libcuda.get('error')}"]
        if ctx.smi.get("works"):
            evidence.append("nvidia-smi works")
        if caps is not None and not any(c in caps.split(",") for c in ("compute", "all")):
            evidence.insert(0, f"NVIDIA_DRIVER_CAPABILITIES={caps!r} leaves out 'compute'")
            title = (f"NVIDIA_DRIVER_CAPABILITIES={caps} gave this container NVML and nvidia-smi but not the "
                     "CUDA driver library (libcuda.so.1): torch finds no driver")
        else:
            title = "the container toolkit injected NVML but not the CUDA driver library (libcuda.so.1)"
        fix = ("start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility (or 'all'); "
               "the default, when unset, is compute,utility")
        return [Finding(NOT_VISIBLE, ERROR, title, tuple(evidence), (fix,), LAYER)]
    if nvml_present:
        return [Finding(DRIVER_BROKEN, ERROR, "the NVIDIA driver is installed only in part: NVML is there, "
                        "libcuda.so.1 is not", tuple(_absence_evidence(ctx)),
                        ("reinstall the driver's CUDA user-mode library (Debian/Ubuntu: the libnvidia-compute-<branch> "
                         "or cuda-drivers package, matching the kernel module's version)",), LAYER)]
    if ctx.in_container:
        evidence = _absence_evidence(ctx)
        nvd = ctx.vis.get("nvidia_visible_devices")
        fixes = remedy.container_gpu_access()
        if nvd is not None and nvd.strip().lower() in ("void", "", "none"):
            evidence.insert(0, f"NVIDIA_VISIBLE_DEVICES={nvd!r}: the toolkit injects no GPU")
            fixes = [f"set NVIDIA_VISIBLE_DEVICES=all (or GPU indices / UUIDs) instead of {nvd!r}", *fixes]
        if ctx.vis.get("container_evidence"):
            evidence.append(f"in a container: {ctx.vis['container_evidence']}")
        return [Finding(NOT_VISIBLE, ERROR, "this container was started without GPU access: no NVIDIA device, "
                        "no driver library", tuple(evidence), tuple(fixes), LAYER)]
    fixes = ["install the NVIDIA driver for this GPU (https://www.nvidia.com/Download/index.aspx, or the "
             "distribution's package, e.g. apt install nvidia-driver) and reboot"]
    if ctx.torch.get("cuda"):
        fixes.append(f"for this torch (CUDA {ctx.torch['cuda']}): {remedy.driver_floor_text(ctx.torch['cuda'])}")
    return [Finding(NO_DRIVER, ERROR, "no NVIDIA driver on this machine", tuple(_absence_evidence(ctx)),
                    tuple(fixes), LAYER)]


def _presence_from_torch(ctx: Context) -> list[Finding]:
    """When the libraries were not probed (a pasted report), torch's words decide."""
    if NO_DRIVER_TEXT not in ctx.torch_texts:
        return []
    evidence = (f"torch: {NO_DRIVER_TEXT}",)
    if ctx.in_container:
        return [Finding(NOT_VISIBLE, ERROR, "this container was started without GPU access", evidence,
                        tuple(remedy.container_gpu_access()), LAYER)]
    if ctx.driver_string:
        return [Finding(DRIVER_BROKEN, ERROR, f"torch finds no driver, though {fmt_driver(ctx)} is reported",
                        evidence, ("the driver's libcuda.so.1 is not on the loader path of this Python: check "
                                   "`ldconfig -p | grep libcuda` and LD_LIBRARY_PATH",), LAYER)]
    return [Finding(NO_DRIVER, ERROR, "no NVIDIA driver on this machine", evidence,
                    ("install the NVIDIA driver (https://www.nvidia.com/Download/index.aspx) and reboot",), LAYER)]


def check_health(ctx: Context) -> list[Finding]:
    """A driver that is there but fails: NVML init errors, cuInit errors, torch's own words."""
    findings: list[Finding] = []
    nv = ctx.nvml
    code, text = nv.get("init_error_code"), nv.get("init_error") or ""
    if text and code != NVML_LIBRARY_NOT_FOUND and nv.get("loaded") is not False:
        findings.append(_nvml_finding(ctx, code, text))
    rc = ctx.libcuda.get("cuinit")
    if isinstance(rc, int) and rc not in (0, CUDA_ERROR_NO_DEVICE):
        name = ctx.libcuda.get("cuinit_name") or "?"
        message = ctx.libcuda.get("cuinit_message") or "?"
        evidence = [f"cuInit(0) = {rc} ({name}: {message})"]
        if ctx.libcuda.get("path"):
            evidence.append(f"libcuda loaded from {ctx.libcuda['path']}")
        torch_words = ctx.torch.get("init_warning")
        if torch_words:
            evidence.append(f"torch: CUDA initialization: {torch_words}")
        fixes = remedy.CUINIT_FIXES.get(rc, [f"cuInit failed with {name}: see the driver's logs (dmesg)"])
        findings.append(Finding(DRIVER_BROKEN, ERROR, f"the CUDA driver fails to initialise: {message}",
                                tuple(evidence), tuple(fixes), LAYER))
    elif rc is None and not ctx.runtime_accepted_simulated:
        findings.extend(_health_from_torch(ctx))
    return findings


def _nvml_finding(ctx: Context, code: int | None, text: str) -> Finding:
    evidence = [f"NVML init: {text}" + (f" (error {code})" if code is not None else "")]
    if ctx.smi.get("output"):
        evidence.append(f"nvidia-smi: {ctx.smi['output'].splitlines()[0]}")
    module = ctx.driver.get("kernel_module_version")
    if module:
        evidence.append(f"kernel module: {module}")
    if code == NVML_LIB_RM_VERSION_MISMATCH or MISMATCH_TEXT.lower() in text.lower():
        return Finding(DRIVER_BROKEN, ERROR, "the driver's kernel module and its user-mode libraries are different "
                       "versions (Driver/library version mismatch)", tuple(evidence),
                       ("the driver was upgraded without a reboot: reboot, or unload and reload the modules "
                        "(sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia nvidia_uvm)",),
                       LAYER)
    if code == NVML_DRIVER_NOT_LOADED or "not loaded" in text.lower():
        return Finding(DRIVER_BROKEN, ERROR, "the NVIDIA kernel module is not loaded", tuple(evidence),
                       ("load it (sudo modprobe nvidia) and check dmesg; with Secure Boot the module must be signed; "
                        "after a kernel update, rebuild it (dkms autoinstall)",), LAYER)
    return Finding(DRIVER_BROKEN, ERROR, f"NVML cannot initialise: {text}", tuple(evidence),
                   ("check the driver installation: nvidia-smi, dmesg | grep -i nvrm",), LAYER)


def _health_from_torch(ctx: Context) -> list[Finding]:
    texts = ctx.torch_texts
    if not texts:
        return []
    for phrase, rc in TORCH_CUINIT_TEXTS.items():
        if phrase in texts:
            return [Finding(DRIVER_BROKEN, ERROR, f"the CUDA driver fails to initialise: {phrase}",
                            (f"torch: {_line_with(texts, phrase)}",), tuple(remedy.CUINIT_FIXES[rc]), LAYER)]
    m = UNEXPECTED_RE.search(texts)
    if m:
        rc = int(m.group(1))
        return [Finding(DRIVER_BROKEN, ERROR, f"the CUDA driver fails: error {rc}: {m.group(2).strip()}",
                        (f"torch: {_line_with(texts, 'Unexpected error')}",),
                        tuple(remedy.CUINIT_FIXES.get(rc, ["see the driver's logs (dmesg | grep -i nvrm)"])), LAYER)]
    return []


def _line_with(texts: str, phrase: str) -> str:
    for line in texts.splitlines():
        if phrase in line:
            return line.strip()
    return phrase
