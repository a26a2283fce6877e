"""One Kubernetes Job per cell, as a plain manifest (pure).

The pod gets exactly the cell's environment and the local engine's hardening (read-only root, every
capability dropped, no privilege escalation, memory, CPU and PID-bound limits), `restartPolicy: Never`
and no retries (a cell runs once), `activeDeadlineSeconds` as its time limit, and GPUs through the NVIDIA
device plugin's `nvidia.com/gpu`, which belongs in `limits` (kubernetes.io "Schedule GPUs"). Nodes are
chosen by GPU Feature Discovery labels (`nvidia.com/cuda.driver.major`, `nvidia.com/gpu.product`,
`nvidia.com/gpu.compute.major`). The result comes back through the pod's log: after the harness the
container prints its result document, base64 on one line after a marker, which `client` reads back.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from typing import Any

from refenv.engines.seam import OUT, RESULT, ContainerSpec
from refenv.model.labels import CELL, KIND, MANAGED, RUN
from refenv.model.placement import KubePlacement

MARK = "REFENV-RESULT "
GPU = "nvidia.com/gpu"
# GPU Feature Discovery's labels (NVIDIA k8s-device-plugin README), for node selectors.
GFD_DRIVER_MAJOR = "nvidia.com/cuda.driver.major"
GFD_PRODUCT = "nvidia.com/gpu.product"
GFD_COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"


def job_name(spec: ContainerSpec) -> str:
    """A DNS-1123 name unique to the run and cell (cell ids have slashes; names stop at 63 characters)."""
    labels = dict(spec.labels)
    digest = hashlib.sha256(f"{labels.get(RUN, '')}/{labels.get(CELL, '')}".encode()).hexdigest()[:12]
    return f"refenv-cell-{digest}"


def label_value(text: str) -> str:
    """A label value: at most 63 of [A-Za-z0-9_.-], starting and ending alphanumeric."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:63].strip("-_.")
    return cleaned or "none"


def quantity(size: str) -> str:
    """Docker's '6g' / '512m' as a Kubernetes quantity ('6Gi', '512Mi'): both count in powers of two."""
    number, unit = re.fullmatch(r"(\d+)([kmgKMG]?)", size).groups()  # type: ignore[union-attr]
    return number + {"k": "Ki", "m": "Mi", "g": "Gi", "": ""}[unit.lower()]


def wrapped_command(spec: ContainerSpec) -> list[str]:
    """The cell's command, then its result document on one line of the log (base64 after MARK)."""
    argv = [*(spec.entrypoint or ("python", "-m", "harness")), *spec.command]
    return ["sh", "-c", f"{shlex.join(argv)}; rc=$?; printf '\\n{MARK}'; base64 -w0 {RESULT} 2>/dev/null; "
            "echo; exit $rc"]


def _uses_gpu(spec: ContainerSpec) -> bool:
    return spec.gpu_request is not None or spec.runtime == "nvidia"


def job_manifest(spec: ContainerSpec, placement: KubePlacement, timeout_s: float) -> dict[str, Any]:
    """The Job for one cell."""
    labels = dict(spec.labels)
    name = job_name(spec)
    meta_labels = {MANAGED: "true", KIND: label_value(labels.get(KIND, "cell")),
                   RUN: label_value(labels.get(RUN, "")), "app.kubernetes.io/name": "refenv"}
    limits: dict[str, str] = {"memory": quantity(spec.mem_limit)}
    if spec.cpus is not None:
        limits["cpu"] = f"{spec.cpus:g}"
    if _uses_gpu(spec):
        limits[GPU] = str(max(1, placement.gpus))
    volumes: list[dict[str, Any]] = [{"name": "out", "emptyDir": {}},
                                     *({"name": f"tmp{i}", "emptyDir": {"medium": "Memory"}}
                                       for i, _ in enumerate(spec.tmpfs))]
    mounts: list[dict[str, Any]] = [{"name": "out", "mountPath": OUT},
                                    *({"name": f"tmp{i}", "mountPath": path} for i, (path, _) in enumerate(spec.tmpfs))]
    for i, (source, target, ro) in enumerate(b for b in spec.binds if b[1] != OUT):
        volumes.append({"name": f"bind{i}", "hostPath": {"path": source}})
        mounts.append({"name": f"bind{i}", "mountPath": target, "readOnly": ro})
    security: dict[str, Any] = {"readOnlyRootFilesystem": spec.read_only, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": list(spec.cap_drop)}}
    if spec.user is not None and spec.user.isdigit():
        security["runAsUser"] = int(spec.user)
    container = {
        "name": "cell", "image": spec.image, "imagePullPolicy": "IfNotPresent",
        "command": wrapped_command(spec),
        # Exactly the cell's variables (the device plugin adds NVIDIA_VISIBLE_DEVICES for the GPUs it gives).
        "env": [{"name": k, "value": v} for k, v in spec.environment],
        "resources": {"limits": limits, "requests": {k: v for k, v in limits.items() if k != GPU}},
        "securityContext": security, "volumeMounts": mounts,
    }
    pod: dict[str, Any] = {"restartPolicy": "Never", "automountServiceAccountToken": False,
                           "enableServiceLinks": False, "containers": [container], "volumes": volumes}
    if placement.node_selector:
        pod["nodeSelector"] = dict(placement.node_selector)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": placement.namespace, "labels": meta_labels,
                     "annotations": {CELL: labels.get(CELL, "")}},
        "spec": {"backoffLimit": 0, "activeDeadlineSeconds": max(1, math.ceil(timeout_s)),
                 "ttlSecondsAfterFinished": 600,
                 "template": {"metadata": {"labels": {**meta_labels, "job-name": name}}, "spec": pod}},
    }


def selector_for(driver_major: int | None = None, product: str | None = None,
                 compute_major: int | None = None) -> tuple[tuple[str, str], ...]:
    """A node selector by GPU Feature Discovery labels (products with spaces as dashes, as GFD writes them)."""
    out = []
    if driver_major is not None:
        out.append((GFD_DRIVER_MAJOR, str(driver_major)))
    if product is not None:
        out.append((GFD_PRODUCT, product.replace(" ", "-")))
    if compute_major is not None:
        out.append((GFD_COMPUTE_MAJOR, str(compute_major)))
    return tuple(out)
