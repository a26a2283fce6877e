"""Character device nodes with NVIDIA's numbers, for the simulated host's container faults.

A healthy simulated GPU node is the host's /dev/null under an /dev/nvidia* name. The faults need nodes that
carry real numbers instead, made once with mknod in refenv's cache (never opened on the host):
- after `systemctl daemon-reload` the container's device cgroup allows only "c 195:* m" (create, not open;
  NVIDIA/nvidia-container-toolkit#48 and #251 show the rule): nodes 195:N given with permission "m" make
  open() fail with EPERM in a real container;
- a stale CDI spec names /dev/nvidia-uvm by the major number the kernel gave it before the driver was
  reloaded; the uvm major is allocated dynamically, so the old number now belongs to no driver and open()
  fails with ENXIO.
Numbers: nvidiactl is 195:255 and /dev/nvidiaN is 195:N (the driver's README, "Device nodes"); the uvm
majors below are dynamic-range numbers no driver on a machine without NVIDIA's modules holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

from refenv import paths

NVIDIA_MAJOR = 195
CTL_MINOR = 255
UVM_MAJOR = 510          # the simulated host's live nvidia-uvm
STALE_UVM_MAJOR = 508    # the number a stale spec still names
MODE = 0o666             # /dev/nvidia* as the driver creates them


class Node(NamedTuple):
    major: int
    minor: int

    @property
    def name(self) -> str:
        return f"c{self.major}-{self.minor}"


def numbers(container_path: str, gpu_minor: int | None = None, *, stale_uvm: bool = False) -> Node:
    """The numbers of an /dev/nvidia* node on a real host (GPU nodes by their minor)."""
    uvm = STALE_UVM_MAJOR if stale_uvm else UVM_MAJOR
    if container_path == "/dev/nvidiactl":
        return Node(NVIDIA_MAJOR, CTL_MINOR)
    if container_path == "/dev/nvidia-uvm":
        return Node(uvm, 0)
    if container_path == "/dev/nvidia-uvm-tools":
        return Node(uvm, 1)
    if gpu_minor is None:
        raise ValueError(f"{container_path}: not an NVIDIA device node this simulation knows")
    return Node(NVIDIA_MAJOR, gpu_minor)


def default_dir() -> Path:
    return paths.cache_root() / "devnodes"


def path_of(node_dir: str, node: Node) -> str:
    return f"{node_dir}/{node.name}"


def ensure(node_dir: str, nodes: set[Node]) -> None:
    """Make each node (mknod needs CAP_MKNOD: root, as the engine's own daemon is); an existing one is kept."""
    Path(node_dir).mkdir(parents=True, exist_ok=True)
    for node in sorted(nodes):
        target = Path(path_of(node_dir, node))
        if target.exists():
            if not stat.S_ISCHR(target.stat().st_mode) or target.stat().st_rdev != os.makedev(*node):
                raise OSError(f"{target} is not the character device {node.major}:{node.minor}")
        else:
            tmp = target.with_name(target.name + f".{os.getpid()}")
            os.mknod(tmp, MODE | stat.S_IFCHR, os.makedev(node.major, node.minor))
            tmp.replace(target)
        # The engines copy the host node's mode into the container: crw-rw-rw- as the driver makes its nodes,
        # so that only the device cgroup (not the mode, which mknod's umask narrows) decides who may open it.
        if stat.S_IMODE(target.stat().st_mode) != MODE:
            os.chmod(target, MODE)


def standard(gpus: int) -> set[Node]:
    """Every node a simulated host's faults may name: the control nodes (live and stale), `gpus` GPU nodes."""
    control = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
    return ({numbers(p) for p in control} | {numbers(p, stale_uvm=True) for p in control}
            | {Node(NVIDIA_MAJOR, i) for i in range(gpus)})
