"""One renderer for every remedy: the words of a fix, from its kind and parameters (pure).

A remedy is data (`harness.schema.Remedy`): the catalogue names a kind per failure, the classifier adds
what it knows (the torch release, its CUDA, the driver's CUDA version, a GPU's capability, a variable's
value), and `render` writes the lines a user reads. `refenv.reproduce.fix` acts on the kind.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.catalogue import wheels
from harness.catalogue.entries import REMEDY_KINDS
from harness.schema import Remedy

TOOLKIT_DOCS = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"
MODULES = "nvidia_uvm nvidia_drm nvidia_modeset nvidia"


def _int(value: str | None) -> int | None:
    return int(value) if value and value.lstrip("-").isdigit() else None


def _install_driver(r: Remedy) -> list[str]:
    cuda, torch, dcv = r.get("cuda"), r.get("torch"), _int(r.get("driver_cuda"))
    if r.get("action") == "upgrade" and cuda:
        lines = [f"upgrade the driver: {wheels.driver_floor_text(cuda)}"]
        if dcv:
            lines += [f"or keep the driver and install a torch it runs: {line}"
                      for line in wheels.wheel_for_driver(torch, dcv)]
        return lines
    if r.get("action") == "upgrade" and dcv:
        # torch's message named the driver's CUDA but not torch's own: the driver a current build needs first,
        # then the builds this driver runs.
        return [f"upgrade the driver: {wheels.driver_for_torch(torch)}",
                *(f"or keep the driver and install a torch it runs: {line}"
                  for line in wheels.wheel_for_driver(torch, dcv))]
    if r.get("condition"):
        return [f"the image requires {r.get('condition')}: upgrade the host driver"
                + (f" ({wheels.driver_floor_text(cuda)})" if cuda else "")
                + ", or use an image built for an older CUDA (NVIDIA_DISABLE_REQUIRE=true skips the check)"]
    if r.get("gpu") == "none":
        return ["the report says this machine has no NVIDIA GPU: no driver can give it one; run the work on a "
                "machine or cloud instance with an NVIDIA GPU, or on the CPU (device='cpu')"]
    if r.get("detail") == "short":
        return [f"install the NVIDIA driver ({DRIVER_DOWNLOAD}) and reboot",
                f"which driver: {wheels.driver_for_torch(torch)}" if not cuda else
                f"for this torch (CUDA {cuda}): {wheels.driver_floor_text(cuda)}"]
    lines = [f"install the NVIDIA driver for this GPU ({DRIVER_DOWNLOAD}, or the distribution's package, e.g. "
             "apt install nvidia-driver) and reboot"]
    lines.append(f"for this torch (CUDA {cuda}): {wheels.driver_floor_text(cuda)}" if cuda else
                 f"which driver: {wheels.driver_for_torch(torch)}")
    return lines


def _install_wheel(r: Remedy) -> list[str]:
    torch, dcv, cc = r.get("torch"), _int(r.get("driver_cuda")), r.get("capability")
    if cc:
        return wheels.wheel_for_arch(torch, cc, dcv)
    if dcv:
        return wheels.wheel_for_driver(torch, dcv)
    if torch:
        return wheels.default_wheel(torch)
    return ["install a CUDA build of torch: see https://pytorch.org/get-started/locally/",
            f"the driver is not known: {wheels.driver_for_torch(None)}"]


def _reboot(r: Remedy) -> list[str]:
    if r.get("why") == "hung":
        # NVIDIA's Xid catalogue (79: fallen off the bus) and nvidia-smi's --gpu-reset (no process may hold the GPU).
        return ["the driver or a GPU is hung: see whether `nvidia-smi` answers (or hangs too) and what the kernel "
                "logged (`sudo dmesg | grep -i xid`: Xid 79 means a GPU fell off the bus)",
                "reset the GPU with nothing using it (`sudo nvidia-smi --gpu-reset -i <index>`) or reboot; if it "
                "recurs, check the GPU's power, cooling and seating"]
    if r.get("why") == "gpu_lost":
        return ["the GPU stopped answering (fell off the bus): reboot; if it recurs, check its power, cooling "
                "and seating, and the kernel log's Xid lines (dmesg | grep -i xid)"]
    line = (f"the driver was upgraded without a reboot: reboot, or unload and reload the modules "
            f"(sudo rmmod {MODULES} && sudo modprobe nvidia nvidia_uvm)")
    if r.get("compat"):
        line += f"; in a container, remove a cuda-compat package ({r.get('compat')}) from the library path"
    return [line]


def _reload_modules(r: Remedy) -> list[str]:
    module = r.get("modules") or "nvidia_uvm"
    return [f"an unknown driver error: often after suspend/resume or a driver update without reboot; reload the "
            f"unified-memory module (sudo rmmod {module} && sudo modprobe {module}) or reboot; make sure "
            "CUDA_VISIBLE_DEVICES is not changed after the program started"]


def _load_module(r: Remedy) -> list[str]:
    module = r.get("module") or "nvidia"
    if module == "nvidia_uvm":
        return ["the kernel module is not working for this process: check `nvidia-smi` and `dmesg | grep -i nvrm`, "
                "the permissions of /dev/nvidia*, and that nvidia_uvm is loaded (sudo modprobe nvidia_uvm)"]
    return [f"load it (sudo modprobe {module}) and check dmesg; with Secure Boot the module must be signed; "
            "after a kernel update, rebuild it (dkms autoinstall)"]


def _drop_from_library_path(r: Remedy) -> list[str]:
    path = r.get("path") or ""
    if path.endswith("stubs"):
        return ["libcuda.so.1 resolves to the CUDA toolkit's stub library (…/lib64/stubs), which exists only for "
                "linking: remove the stubs folder from LD_LIBRARY_PATH / ld.so.conf so the driver's own library loads"]
    return [f"a newer libcuda from a cuda-compat (forward compatibility) package is loaded on a GPU that does not "
            f"support forward compatibility (only data-center GPUs do): remove {path} from "
            "LD_LIBRARY_PATH, or upgrade the host driver instead"]


def _enable_gpu_access(r: Remedy) -> list[str]:
    lines = []
    value = r.get("nvidia_visible_devices")
    if value is not None:
        lines.append(f"set NVIDIA_VISIBLE_DEVICES=all (or GPU indices / UUIDs) instead of {value!r}")
    return [*lines,
            "start the container with GPU access: docker run --gpus all … (or --gpus device=0), "
            "on a host with the NVIDIA Container Toolkit (nvidia-ctk runtime configure --runtime=docker)",
            f"install guide: {TOOLKIT_DOCS}",
            "in Kubernetes, request the GPU as a resource: resources.limits: nvidia.com/gpu: 1"]


def _request_gpu(r: Remedy) -> list[str]:
    """The start the report shows, corrected in its own syntax (harness/intake/launches.py)."""
    launch, command = r.get("launch") or "", r.get("command") or ""
    if launch == "slurm":
        return [f"the job was given no GPU; request one: {command}",
                "on a cluster whose GPUs sit in their own partition, name it too (-p <its name>; sinfo lists them)"]
    if launch == "pod" and r.get("requested") == "yes":
        return [f"the pod asks for nvidia.com/gpu and still gets no driver: name the NVIDIA runtime, {command} "
                "(where the node's default runtime is not NVIDIA's)",
                "the node needs NVIDIA's device plugin (or the GPU Operator) to offer nvidia.com/gpu"]
    if launch == "pod":
        return [f"request the GPU in the pod's manifest, {command}",
                "the node needs NVIDIA's device plugin (or the GPU Operator) to offer nvidia.com/gpu"]
    if launch == "compose":
        return [f"give the service the GPU in the Compose file, {command}",
                f"on a host with the NVIDIA Container Toolkit ({TOOLKIT_DOCS})"]
    host = ("with the NVIDIA Container Toolkit's CDI spec generated (sudo nvidia-ctk cdi generate "
            "--output=/etc/cdi/nvidia.yaml)" if launch.startswith("podman") else
            "with the NVIDIA Container Toolkit (sudo nvidia-ctk runtime configure --runtime=docker)")
    return [f"start the container with a GPU: {command}", f"on a host {host}; install guide: {TOOLKIT_DOCS}"]


def _install_toolkit(r: Remedy) -> list[str]:
    return ["install the NVIDIA Container Toolkit on the host and register its runtime with Docker "
            "(sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker)",
            f"install guide: {TOOLKIT_DOCS}"]


def _unset_variable(r: Remedy) -> list[str]:
    name, value, devices = r.get("name") or "CUDA_VISIBLE_DEVICES", r.get("value"), r.get("devices")
    lines = [f"unset {name} to see every device, or set it to ordinals / GPU- UUIDs that exist"
             + (f" ({devices})" if devices else " (nvidia-smi -L lists them)")]
    if name == "CUDA_VISIBLE_DEVICES" and value is not None and value.strip().lower() == "all":
        lines.insert(0, "'all' is a keyword of NVIDIA_VISIBLE_DEVICES (the container toolkit), not of "
                        "CUDA_VISIBLE_DEVICES, where it hides everything")
    return lines


def _add_capability(r: Remedy) -> list[str]:
    return [f"start the container with NVIDIA_DRIVER_CAPABILITIES={r.get('capability') or 'compute'},utility "
            "(or 'all'); the default, when unset, is compute,utility"]


def _expose_devices(r: Remedy) -> list[str]:
    if r.get("where") == "container":
        return ["start the container with the GPUs it should see: NVIDIA_VISIBLE_DEVICES=all or --gpus all "
                "(NVIDIA_VISIBLE_DEVICES=none gives the driver libraries but no device)"]
    if r.get("where") == "unknown":
        return ["a device is hidden: check CUDA_VISIBLE_DEVICES, and for a container --gpus / NVIDIA_VISIBLE_DEVICES"]
    return ["check that the GPU is seen by the system (lspci | grep -i nvidia) and by the driver (nvidia-smi)"]


def _reinstall_libraries(r: Remedy) -> list[str]:
    if r.get("why") == "loader":
        return _loader_refused(r)
    return ["reinstall the driver's CUDA user-mode library (Debian/Ubuntu: the libnvidia-compute-<branch> "
            "or cuda-drivers package, matching the kernel module's version)"]


def _loader_refused(r: Remedy) -> list[str]:
    library, needs, libc = r.get("library") or "the driver's libcuda.so.1", r.get("needs"), r.get("libc")
    if not needs:
        return [f"{library} is there but the loader refuses it: a 32-bit, truncated or foreign copy sits on the "
                "loader's path; reinstall the driver's user-mode libraries (matching the kernel module's version)"]
    lines = [f"{library} needs {needs}, newer than this system's C library" + (f" ({libc})" if libc else "")
             + ": it was built for a newer distribution; install the driver's libraries packaged for this one"]
    if r.get("container"):
        lines.append("in a container the toolkit mounts the host's driver libraries: use an image whose glibc is "
                     f"at least as new as they need ({needs}), i.e. a newer base image")
    return lines


def _fix_loader_path(r: Remedy) -> list[str]:
    return ["the driver's libcuda.so.1 is not on the loader path of this Python: check "
            "`ldconfig -p | grep libcuda` and LD_LIBRARY_PATH"]


def _start_service(r: Remedy) -> list[str]:
    service = r.get("service") or "nvidia-fabricmanager"
    return [f"start the {service} service (sudo systemctl enable --now {service}); its version must match the "
            "driver's"]


def _fix_permissions(r: Remedy) -> list[str]:
    return [f"let this user open {r.get('path') or '/dev/nvidia*'}: check their mode (crw-rw-rw-), the video/render "
            "groups, and in a container the device cgroup"]


def _set_compute_mode(r: Remedy) -> list[str]:
    return [f"the GPUs are exclusive or prohibited for this process: check `nvidia-smi -q -d COMPUTE`; "
            f"sudo nvidia-smi -c {r.get('mode') or 'DEFAULT'} makes them shared, or wait for the other process"]


def _check_logs(r: Remedy) -> list[str]:
    code, name = r.get("code"), r.get("name")
    if code:
        return [f"the driver fails with error {code}" + (f" ({name})" if name else "")
                + ": see the driver's logs (dmesg | grep -i nvrm)"]
    return [r.get("hint") or "check the driver installation: nvidia-smi, dmesg | grep -i nvrm"]


def _check_hardware(r: Remedy) -> list[str]:
    return ["the kernel module reports a GPU fault: read `dmesg | grep -i -e xid -e nvrm` (NVIDIA's Xid catalogue "
            "says what each number means); reboot, and if it recurs check power, cooling and the card itself"]


def _install_matching(r: Remedy) -> list[str]:
    from harness.catalogue.matching import matching  # the pairing table is read only when a stack fix is rendered

    return matching(r)
def _restore_device_access(r: Remedy) -> list[str]:
    # NVIDIA/nvidia-container-toolkit#48: the toolkit's notice and its workarounds, in its order of preference.
    return ["in a container: it lost access to its GPU device nodes (the device cgroup allows only 'c 195:* m' "
            "after `systemctl daemon-reload` on a host with the systemd cgroup driver): restart the container",
            "so that it does not recur (NVIDIA/nvidia-container-toolkit#48): run `sudo nvidia-ctk system "
            "create-dev-char-symlinks --create-all` at boot (a udev rule), or switch Docker to the cgroupfs driver "
            "(\"exec-opts\": [\"native.cgroupdriver=cgroupfs\"] in /etc/docker/daemon.json), or give the devices "
            "through CDI (--device nvidia.com/gpu=all), whose nodes the runtime itself declares",
            "on a bare host: check the driver (nvidia-smi, dmesg | grep -i nvrm)"]


def _generate_cdi_spec(r: Remedy) -> list[str]:
    why = ("the CDI spec no longer matches the host's device nodes (it was written before the driver was "
           "upgraded or reloaded): " if r.get("why") == "stale" else
           "no CDI spec defines these devices (none was generated, or it was generated for other GPUs): ")
    return [why + "regenerate it with `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, check it with "
            "`nvidia-ctk cdi list`, then restart the container",
            "to keep it current, let the toolkit regenerate it at boot and after driver changes (its "
            "nvidia-cdi-refresh service, toolkit 1.18 and newer)"]


def _use_cdi_engine(r: Remedy) -> list[str]:
    return ["this engine does not resolve CDI device names: use Podman (4.1 or newer) or Docker 25 or newer with "
            "CDI enabled ({\"features\": {\"cdi\": true}} in /etc/docker/daemon.json), or ask for the GPUs "
            "with --gpus all through the NVIDIA runtime"]


def _rebind_gpu(r: Remedy) -> list[str]:
    """An NVIDIA GPU held by another driver, or by none (harness/classify/pci.py)."""
    bound = r.get("bound") or "none"
    if bound == "nouveau":
        install = ("" if r.get("installed") else "install the NVIDIA driver (your distribution's nvidia-driver "
                   "package or NVIDIA's installer), then ")
        return [f"{install}keep nouveau off the GPU: blacklist it (echo -e 'blacklist nouveau\\noptions nouveau "
                "modeset=0' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (sudo "
                "update-initramfs -u, or dracut -f) and reboot; then `nvidia-smi` lists the GPU"]
    if bound in ("vfio-pci", "pci-stub"):
        return [f"the GPU belongs to a virtual machine ({bound}, PCI passthrough): run the work inside that VM, or "
                f"give the GPU back to the host (remove its id from {bound}.ids on the kernel command line or in "
                "/etc/modprobe.d, reboot) so the nvidia module can take it"]
    if bound == "none":
        return ["no driver took the GPU: load NVIDIA's (sudo modprobe nvidia) and read why it did not in "
                "`sudo dmesg | grep -i -e NVRM -e nvidia` (a module not built for this kernel, Secure Boot refusing "
                "an unsigned module, a GPU this driver release does not support)"]
    return [f"the GPU is bound to {bound}, not to NVIDIA's driver: unbind it and load nvidia (sudo modprobe nvidia), "
            "or reboot without the driver that took it"]


def _attach_gpu(r: Remedy) -> list[str]:
    """No NVIDIA GPU on the PCI bus at all: no driver can help (harness/classify/pci.py)."""
    vendors = r.get("vendors") or "none"
    where = "the container's host" if r.get("container") else "this machine"
    return [f"there is no NVIDIA GPU on {where} to install a driver for (its display devices: {vendors}): run on a "
            "machine with one, or give this virtual machine one (a GPU instance type, or PCI passthrough of the "
            "card), then install the driver"]


RENDERERS: dict[str, Callable[[Remedy], list[str]]] = {
    "install_driver": _install_driver, "install_wheel": _install_wheel, "reboot": _reboot,
    "reload_modules": _reload_modules, "load_module": _load_module, "drop_from_library_path": _drop_from_library_path,
    "enable_gpu_access": _enable_gpu_access, "request_gpu": _request_gpu,
    "install_toolkit": _install_toolkit, "unset_variable": _unset_variable,
    "add_capability": _add_capability, "expose_devices": _expose_devices, "reinstall_libraries": _reinstall_libraries,
    "fix_loader_path": _fix_loader_path, "start_service": _start_service, "fix_permissions": _fix_permissions,
    "set_compute_mode": _set_compute_mode, "check_logs": _check_logs, "check_hardware": _check_hardware,
    "restore_device_access": _restore_device_access, "generate_cdi_spec": _generate_cdi_spec,
    "use_cdi_engine": _use_cdi_engine, "install_matching": _install_matching,
    "rebind_gpu": _rebind_gpu, "attach_gpu": _attach_gpu,
}
KINDS = tuple(RENDERERS)
assert set(KINDS) == set(REMEDY_KINDS), "every remedy kind has one renderer"


def render(remedy: Remedy) -> tuple[str, ...]:
    """The lines of this fix; ValueError for a kind no renderer knows."""
    try:
        renderer = RENDERERS[remedy.kind]
    except KeyError:
        raise ValueError(f"unknown remedy kind {remedy.kind!r}; expected one of {', '.join(KINDS)}") from None
    return tuple(renderer(remedy))

