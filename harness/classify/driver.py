"""The driver layer: is an NVIDIA driver reachable, and does it work? (pure)"""

from __future__ import annotations

from collections.abc import Mapping

from harness import catalogue
from harness.catalogue.remedies import render
from harness.classify.context import Context, fmt_driver
from harness.classify.pci import no_nvidia_gpu
from harness.schema import DRIVER_BROKEN, NO_DRIVER, NOT_VISIBLE, SEVERITY_ERROR, SEVERITY_INFO, Finding, Remedy

LAYER = "driver"
NVML_LIBRARY_NOT_FOUND = catalogue.code_of("nvml.library_not_found")
CUDA_ERROR_NO_DEVICE = catalogue.code_of("cuda.no_device")
HANG = "cuda.init_hangs"
# The layers whose coded errors mean the driver itself fails (the catalogue's rows with a CUDA code).
_CUDA_LAYERS = ("torch", "cuda_driver", "cuda_runtime")


def launch_remedy(ctx: Context) -> Remedy | None:
    """The start a report shows, corrected to ask for a GPU, when it asked for none (or not enough)."""
    fix = ctx.vis.get("launch_fix")
    requested = "yes" if ctx.vis.get("gpu_requested") else None
    return Remedy("request_gpu").with_params(launch=ctx.vis.get("launch"), command=fix,
                                             requested=requested) if fix else None


# How each start is named in an answer.
LAUNCH_WORDS = {"docker run": "the `docker run` command", "podman run": "the `podman run` command",
                "nerdctl run": "the `nerdctl run` command", "compose": "the Compose service", "pod": "the pod's spec",
                "slurm": "the Slurm job"}


def launch_words(ctx: Context) -> str:
    launch = str(ctx.vis.get("launch") or "")
    return LAUNCH_WORDS.get(launch, f"the {launch} start")


def launch_evidence(ctx: Context) -> list[str]:
    """What the report's start of the work says about the GPU, as evidence."""
    launch = ctx.vis.get("launch")
    if not launch or ctx.vis.get("gpu_requested") is None:
        return []
    if ctx.vis.get("gpu_requested"):
        return [f"{launch_words(ctx)} asks for a GPU"] if not ctx.vis.get("launch_fix") else [
            f"{launch_words(ctx)} asks for a GPU but names no runtime that injects the driver"]
    return [f"{launch_words(ctx)} asks for no GPU"]


def _finding(verdict: str, title: str, evidence: list[str] | tuple[str, ...], remedy: Remedy) -> Finding:
    return Finding(verdict, SEVERITY_ERROR, title, tuple(evidence), render(remedy), LAYER, remedy)


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
    elif (output := smi.get("output")) and not smi.get("works"):
        ev.append(f"nvidia-smi: {output.splitlines()[0]}")
    init_error = ctx.torch.get("init_error") or ""
    if "driver" in init_error.lower():
        ev.append(f"torch.cuda.init(): {init_error}")
    return ev


def check_presence(ctx: Context) -> list[Finding]:
    """No driver at all (a bare host), or a container that was given none."""
    loaded = ctx.libcuda.get("loaded")
    if loaded is True:
        where = ctx.libcuda.get("path")
        # A report rarely names libcuda's path: that it loaded follows from the driver version read through it.
        how = (f"libcuda loaded from {where}" if where else
               "libcuda.so.1 loaded (inferred: the driver's CUDA version was read through it)"
               if ctx.libcuda.get("driver_version") else "libcuda.so.1 loaded")
        return [Finding("", SEVERITY_INFO, f"NVIDIA driver reachable: {fmt_driver(ctx)}", (how,), layer=LAYER)]
    if loaded is None:
        return _presence_from_torch(ctx)
    refused = _refused_by_loader(ctx)
    if refused is not None:
        return [refused]
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
        return [_finding(NOT_VISIBLE, title, evidence, Remedy("add_capability", (("capability", "compute"),)))]
    if nvml_present:
        return [_finding(DRIVER_BROKEN, "the NVIDIA driver is installed only in part: NVML is there, "
                         "libcuda.so.1 is not", _absence_evidence(ctx), Remedy("reinstall_libraries"))]
    if no_nvidia_gpu(ctx):
        return []  # no GPU on the bus: neither access nor a driver would help (harness/classify/pci.py says so)
    if ctx.in_container:
        evidence = _absence_evidence(ctx)
        nvd = ctx.vis.get("nvidia_visible_devices")
        access = launch_remedy(ctx) or Remedy("enable_gpu_access")
        if nvd is not None and nvd.strip().lower() in ("void", "", "none"):
            evidence.insert(0, f"NVIDIA_VISIBLE_DEVICES={nvd!r}: the toolkit injects no GPU")
            access = access.with_params(nvidia_visible_devices=nvd)
        if ctx.vis.get("container_evidence"):
            evidence.append(f"in a container: {ctx.vis['container_evidence']}")
        evidence += launch_evidence(ctx)
        return [_finding(NOT_VISIBLE, "this container was started without GPU access: no NVIDIA device, "
                         "no driver library", evidence, access)]
    install = Remedy("install_driver").with_params(cuda=ctx.torch.get("cuda"))
    return [_finding(NO_DRIVER, "no NVIDIA driver on this machine", _absence_evidence(ctx), install)]


LOADER_IDS = ("loader.version_not_found", "loader.bad_library")


def _refused_by_loader(ctx: Context) -> Finding | None:
    """libcuda.so.1 is there (on the loader's path, or named by the loader's refusal) but does not load."""
    error = ctx.libcuda.get("error") or ""
    file = ctx.libcuda.get("file")
    hit = catalogue.find(error, LOADER_IDS)
    if file is None and hit is None:
        return None
    library = file or (hit.params.get("library") if hit else None) or "libcuda.so.1"
    libc = (ctx.facts.get("host") or {}).get("libc")
    evidence = [f"libcuda.so.1 does not load: {error}"]
    if file:
        evidence.append(f"{file} is there, on the loader's path")
    if hit is not None and hit.params.get("version"):
        evidence.append(f"it needs {hit.params['version']}; this system's C library: {libc or 'unknown'}")
    nodes = ctx.driver.get("dev_nodes")
    if nodes:
        evidence.append(f"/dev/nvidia*: {', '.join(nodes)} (the GPU was given)")
    if ctx.nvml.get("init_error"):
        evidence.append(f"NVML: {ctx.nvml['init_error']}")
    if ctx.in_container and ctx.vis.get("container_evidence"):
        evidence.append(f"in a container: {ctx.vis['container_evidence']}")
    remedy = Remedy("reinstall_libraries", (("why", "loader"),)).with_params(
        library=library, needs=hit.params.get("version") if hit else None, libc=libc,
        container="yes" if ctx.in_container else None)
    return _finding(DRIVER_BROKEN, f"the driver's {library} is there but does not load: {error}", evidence, remedy)


def _presence_from_torch(ctx: Context) -> list[Finding]:
    """When the libraries were not probed (a pasted report), torch's words decide."""
    hit = ctx.said("torch.no_driver")
    if hit is None:
        return []
    evidence = (f"torch: {hit.text}", *launch_evidence(ctx))
    started = launch_remedy(ctx)
    if started is not None and ctx.vis.get("launch") == "slurm":
        return [_finding(NOT_VISIBLE, "the batch job was started without a GPU", evidence, started)]
    if ctx.in_container:
        return [_finding(NOT_VISIBLE, "this container was started without GPU access", evidence,
                         started or Remedy("enable_gpu_access"))]
    if ctx.driver_string:
        return [_finding(DRIVER_BROKEN, f"torch finds no driver, though {fmt_driver(ctx)} is reported",
                         evidence, Remedy("fix_loader_path"))]
    return [_finding(NO_DRIVER, "no NVIDIA driver on this machine", evidence,
                     Remedy("install_driver", (("detail", "short"),)))]


_DENIED = ("EPERM", "EACCES")
_NO_DRIVER_BEHIND = ("ENXIO", "ENODEV")


def check_device_access(ctx: Context) -> Finding | None:
    """GPU device nodes that exist but cannot be opened: the device cgroup (EPERM), or an nvidia-uvm that is
    missing or reaches no driver while the control node works (a stale CDI spec, an unloaded nvidia_uvm)."""
    access = ctx.driver.get("dev_access") or {}
    nodes = ctx.driver.get("dev_nodes")
    if not access or nodes is None:
        return None
    evidence = [f"{node}: {why}" for node, why in sorted(access.items()) if why != "ok"]
    denied = [n for n, why in access.items() if why.split(":")[0] in _DENIED]
    nv, rc = ctx.nvml, ctx.libcuda.get("cuinit")
    if nv.get("init_error"):
        evidence.append(f"NVML init: {nv['init_error']}")
    if isinstance(rc, int) and rc != 0:
        evidence.append(f"cuInit(0) = {rc} ({ctx.libcuda.get('cuinit_name') or '?'})")
    if denied:
        where = "in this container" if ctx.in_container else "on this machine"
        return _finding(DRIVER_BROKEN, f"the GPU device nodes are here but may not be opened {where} (the device "
                        "cgroup allows creating them, not reading or writing them)", evidence,
                        catalogue.entry("toolkit.device_cgroup_denied").remedy or Remedy("restore_device_access"))
    uvm = access.get("/dev/nvidia-uvm")
    control_ok = access.get("/dev/nvidiactl") == "ok"
    uvm_dead = uvm is None or uvm.split(":")[0] in _NO_DRIVER_BEHIND
    if control_ok and uvm_dead and rc not in (None, 0, CUDA_ERROR_NO_DEVICE):
        if uvm is None:
            evidence.insert(0, "/dev/nvidia-uvm: absent")
        if ctx.smi.get("works") or (nv.get("loaded") and not nv.get("init_error")):
            evidence.append("NVML and nvidia-smi work: the driver is loaded")
        if ctx.in_container:
            remedy = catalogue.entry("toolkit.cdi_stale_uvm").remedy or Remedy("generate_cdi_spec")
            title = ("/dev/nvidia-uvm in this container reaches no driver: the device list it was given (a CDI "
                     "spec) no longer matches the host, so CUDA cannot initialise while nvidia-smi works")
        else:
            remedy = Remedy("reload_modules", (("modules", "nvidia_uvm"),))
            title = "/dev/nvidia-uvm is missing or reaches no driver: CUDA cannot initialise while nvidia-smi works"
        return _finding(DRIVER_BROKEN, title, evidence, remedy)
    return None


def _blocked(fact: Mapping[str, object]) -> str | None:
    """'cuInit(0) had not returned after 60 s' (the catalogue's words), for a probe that gave up on a call."""
    call = fact.get("blocked_in")
    if not call:
        return None
    seconds = fact.get("blocked_s")
    if not isinstance(seconds, (int, float)):
        return f"{call} does not return (as reported)"
    return catalogue.entry(HANG).text.replace("{call}", str(call)).replace("{seconds}", f"{seconds:g}")


def check_hang(ctx: Context) -> Finding | None:
    """The driver's initialisation never returned: cuInit in the driver probe, or torch.cuda.is_available(), which
    initialises the driver, blocked past the bound (harness.gather.bounded) or was reported to."""
    said = [line for line in (_blocked(ctx.libcuda), _blocked(ctx.torch)) if line]
    if not said:
        return None
    evidence = list(said)
    if ctx.libcuda.get("driver_version"):
        evidence.append(f"libcuda.so.1 loads and answers cuDriverGetVersion ({ctx.libcuda['driver_version']}): the "
                        "library is there, the call into the kernel module does not come back")
    nv = ctx.nvml
    if nv.get("blocked_in"):
        evidence.append(f"NVML does not answer either ({_blocked(nv)})")
    elif nv.get("loaded") and not nv.get("init_error") and nv.get("devices"):
        evidence.append(f"NVML answers: {fmt_driver(ctx)}, {len(nv.get('devices') or [])} GPU(s)")
    if ctx.smi.get("output") and not ctx.smi.get("works"):
        evidence.append(f"nvidia-smi: {str(ctx.smi['output']).splitlines()[0]}")
    stuck = ctx.libcuda.get("blocked_in") or ctx.torch.get("blocked_in")
    return _finding(DRIVER_BROKEN, f"the driver's initialisation never returns: {stuck} blocks (the driver or a GPU "
                    "is hung)", evidence, catalogue.entry(HANG).remedy or Remedy("reboot", (("why", "hung"),)))


def check_health(ctx: Context) -> list[Finding]:
    """A driver that is there but fails: unusable device nodes, NVML init errors, cuInit errors, a cuInit that never
    returns, torch's words."""
    access = check_device_access(ctx)
    if access is not None:
        return [access]  # NVML's and cuInit's failures are its evidence, not findings of their own
    hang = check_hang(ctx)
    if hang is not None:
        return [hang]  # what the other checks would read (cuInit's result, torch's words) it never gave
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
            evidence.append(f"torch: {catalogue.torch_message(torch_words, None)}")
        findings.append(_finding(DRIVER_BROKEN, f"the CUDA driver fails to initialise: {message}", evidence,
                                 _cuda_remedy(rc, name)))
    elif rc is None and not ctx.runtime_accepted_simulated:
        findings.extend(_health_from_torch(ctx))
    return findings


def _nvml_finding(ctx: Context, code: int | None, text: str) -> Finding:
    evidence = [f"NVML init: {text}" + (f" (error {code})" if code is not None else "")]
    output = ctx.smi.get("output")
    if output:
        evidence.append(f"nvidia-smi: {output.splitlines()[0]}")
    module = ctx.driver.get("kernel_module_version")
    if module:
        evidence.append(f"kernel module: {module}")
    if code is None:
        hit = catalogue.find(text, [e.id for e in catalogue.entries() if e.code and e.code.api == "nvml"])
        code = hit.entry.code.value if hit and hit.entry.code else None
    entry = catalogue.by_nvml_return(code) if isinstance(code, int) else None
    remedy = entry.remedy if entry and entry.remedy else Remedy("check_logs")
    if entry is not None and entry.id == "nvml.version_mismatch":
        title = ("the driver's kernel module and its user-mode libraries are different versions "
                 f"({entry.code.text if entry.code else text})")
    elif entry is not None and entry.id == "nvml.driver_not_loaded":
        title = "the NVIDIA kernel module is not loaded"
    else:
        title = f"NVML cannot initialise: {text}"
    return _finding(DRIVER_BROKEN, title, evidence, remedy)


def _cuda_remedy(rc: int, name: str | None = None) -> Remedy:
    """The catalogue's fix for a CUDA error code, or a look at the driver's logs naming it."""
    entry = catalogue.by_cuda_error(rc)
    if entry is not None and entry.remedy is not None:
        return entry.remedy
    return Remedy("check_logs").with_params(code=rc, name=name if name and name != "?" else None)


def _health_from_torch(ctx: Context) -> list[Finding]:
    texts = ctx.torch_texts
    hits = ctx.torch_hits
    for hit in hits:
        e = hit.entry
        if e.verdict == DRIVER_BROKEN and e.layer in _CUDA_LAYERS and e.code is not None:
            return [_finding(DRIVER_BROKEN, f"the CUDA driver fails to initialise: {hit.text}",
                             (f"torch: {_line_with(texts, hit.text)}",), _cuda_remedy(e.code.value))]
    unexpected = next((h for h in hits if h.id == "torch.unexpected_error"), None)
    if unexpected is not None:
        rc = int(unexpected.params["code"])
        return [_finding(DRIVER_BROKEN, f"the CUDA driver fails: error {rc}: {unexpected.params['text'].strip()}",
                         (f"torch: {_line_with(texts, unexpected.text[:40])}",), _cuda_remedy(rc))]
    return []


def _line_with(texts: str, phrase: str) -> str:
    for line in texts.splitlines():
        if phrase in line:
            return line.strip()
    return phrase
