"""Facts read straight off the system: device nodes, the kernel module, nvidia-smi, env, container."""

from __future__ import annotations

import errno
import glob
import os
import platform
import re
import socket

from harness.facts import HostFacts, SmiFact, VisibilityFacts
from harness.gather import external

PROC_VERSION = "/proc/driver/nvidia/version"
_MODULE_RE = re.compile(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)")


def dev_nodes() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*"))


def dev_access(nodes: list[str]) -> dict[str, str]:
    """Whether each device node opens read-write, as the driver's libraries open it: "ok", or the errno.

    A node can exist and still be unusable: a device cgroup that lets the container create but not open it
    gives EPERM (after `systemctl daemon-reload`, NVIDIA/nvidia-container-toolkit#48); a node whose major
    number no driver holds gives ENXIO (a stale CDI spec's nvidia-uvm). Opening a GPU's node has no effect
    by itself: the libraries do it on every initialisation.
    """
    out = {}
    for node in nodes:
        try:
            fd = os.open(node, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            out[node] = f"{code}: {exc.strerror}"
            continue
        os.close(fd)
        out[node] = "ok"
    return out


def proc_version() -> tuple[str | None, str | None]:
    """The first line of /proc/driver/nvidia/version and the kernel module version in it."""
    try:
        with open(PROC_VERSION, encoding="utf-8", errors="replace") as f:
            line = f.readline().strip()
    except OSError:
        return None, None
    m = _MODULE_RE.search(line)
    return line, (m.group(1) if m else None)


def nvidia_smi(timeout: float = 15.0) -> SmiFact:
    path = external.which("nvidia-smi")
    if path is None:
        return {"path": None, "rc": None, "output": None, "works": False}
    res = external.run([path], timeout=timeout)
    text = (res.out + res.err).strip() or (res.error or "")
    return {"path": path, "rc": res.rc, "output": "\n".join(text.splitlines()[:40]), "works": res.rc == 0}


def visibility() -> VisibilityFacts:
    in_container, evidence = container()
    env = os.environ
    return {
        "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"),
        "nvidia_visible_devices": env.get("NVIDIA_VISIBLE_DEVICES"),
        "nvidia_driver_capabilities": env.get("NVIDIA_DRIVER_CAPABILITIES"),
        "cuda_device_order": env.get("CUDA_DEVICE_ORDER"),
        "in_container": in_container,
        "container_evidence": evidence,
    }


def container() -> tuple[bool, str | None]:
    """Whether this process runs in a container, and the evidence.

    A /.dockerenv file alone is weak evidence (machine images built from container images keep it),
    so it counts only together with a container-like root filesystem.
    """
    if os.path.exists("/run/.containerenv"):
        return True, "/run/.containerenv exists"
    if os.environ.get("container"):  # noqa: SIM112 - podman and systemd-nspawn set it in lower case
        return True, f"container={os.environ['container']} in the environment"  # noqa: SIM112
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True, "KUBERNETES_SERVICE_HOST is set"
    cgroup = _read_first("/proc/1/cgroup", ("docker", "kubepods", "containerd", "libpod", "lxc"))
    if cgroup:
        return True, f"/proc/1/cgroup: {cgroup}"
    root_fs = _root_fs_type()
    if os.path.exists("/.dockerenv"):
        if root_fs in ("overlay", "aufs", "fuse-overlayfs"):
            return True, f"/.dockerenv exists and / is {root_fs}"
        return False, f"/.dockerenv exists, but / is {root_fs or 'of unknown type'}: not treated as a container"
    return False, None


def _read_first(path: str, needles: tuple[str, ...]) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if any(k in line for k in needles):
                    return line.strip()
    except OSError:
        return None
    return None


def _root_fs_type() -> str | None:
    """The filesystem type of / from /proc/self/mountinfo (the field after the ' - ' separator)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4 and fields[4] == "/" and " - " in line:
                    return line.split(" - ", 1)[1].split()[0]
    except OSError:
        return None
    return None


def host() -> HostFacts:
    return {
        "os": platform.system(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "libc": libc(),
    }


def libc() -> str | None:
    """The C library's name and version as the loader that loads the driver has it ("glibc 2.31")."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        return None
