"""Cells through a Kubernetes API with the official client: create the cell's Job, watch its pod to the
end, read the result from the pod's log, delete the Job (and its pod) whatever happened.

`KubernetesEngine` is the runner's `CellEngine` on a cluster: images come from `local` (pushed to a
registry the nodes pull from), cells become Jobs; the result the log carries is written where the
local engine's container would have written it, so the runner judges it the same way.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from refenv.engines.kubernetes.jobs import MARK, job_manifest
from refenv.engines.onlocal import OnLocalEngine
from refenv.engines.seam import OUT, CellEngine, ContainerSpec, RunOutcome
from refenv.errors import NoGpuRuntime, RefenvError
from refenv.model.labels import CELL, KIND, RUN
from refenv.model.matrix import Host
from refenv.model.placement import KubePlacement

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodEnd:
    """How the cell's pod ended, and its log."""

    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    log: str
    result: bytes | None      # the harness's result document, from the log


def result_of(log: str) -> bytes | None:
    """The result document the container printed after MARK, or None."""
    for line in reversed(log.splitlines()):
        if line.startswith(MARK):
            try:
                return base64.b64decode(line[len(MARK):].strip(), validate=True) or None
            except (binascii.Error, ValueError):
                return None
    return None


def _terminated(pod: Any) -> Any:
    for status in (pod.status.container_statuses or []) if pod.status else []:
        if status.state is not None and status.state.terminated is not None:
            return status.state.terminated
    return None


class JobRunner:
    """One Job at a time, start to end, through the official client."""

    def __init__(self, api: client.ApiClient) -> None:
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)

    def run(self, manifest: dict[str, Any], timeout_s: float) -> PodEnd:
        ns, name = self.create(manifest)
        try:
            pod = self._wait(ns, name, timeout_s + 60)
            if pod is None:
                return PodEnd(None, True, False, "", None)
            log = self.core.read_namespaced_pod_log(pod.metadata.name, ns)
            term = _terminated(pod)
            deadline = (pod.status.reason or "") == "DeadlineExceeded"
            return PodEnd(None if term is None else int(term.exit_code), deadline,
                          bool(term is not None and term.reason == "OOMKilled"), log, result_of(log))
        finally:
            self.delete(ns, name)

    def create(self, manifest: dict[str, Any]) -> tuple[str, str]:
        """Create the Job; its namespace and name."""
        ns, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
        # The client serialises a plain dict as it is; the manifest is validated as a dict (validate.py).
        self.batch.create_namespaced_job(ns, manifest)  # type: ignore[arg-type]
        return ns, name

    def _wait(self, ns: str, name: str, limit_s: float) -> Any:
        """The Job's pod once it has ended (Succeeded or Failed), or None past `limit_s`."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            w = watch.Watch()  # type: ignore[no-untyped-call]  # the client's watch module has no annotations
            for event in w.stream(self.core.list_namespaced_pod, ns,  # type: ignore[no-untyped-call]
                                  label_selector=f"job-name={name}",
                                  timeout_seconds=max(1, int(end - time.monotonic()))):
                pod = event["object"]
                if pod.status is not None and pod.status.phase in ("Succeeded", "Failed"):
                    w.stop()  # type: ignore[no-untyped-call]
                    return pod
        return None

    def delete(self, ns: str, name: str) -> None:
        try:
            self.batch.delete_namespaced_job(name, ns, propagation_policy="Background")
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise

    def delete_run(self, ns: str, run_id: str) -> int:
        names = [j.metadata.name for j in self.batch.list_namespaced_job(ns, label_selector=f"{RUN}={run_id}").items
                 if j.metadata is not None and j.metadata.name]
        for name in names:
            self.delete(ns, name)
        return len(names)


class KubernetesEngine(OnLocalEngine):
    """A `CellEngine` whose cells are Kubernetes Jobs; images and other containers go to `local`."""

    def __init__(self, local: CellEngine, api: client.ApiClient, hosts: tuple[Host, ...] = ()) -> None:
        super().__init__(local)
        self.jobs = JobRunner(api)
        self.placements = {h.name: h.kubernetes or KubePlacement() for h in hosts}
        self.namespaces = {p.namespace for p in self.placements.values()} | {KubePlacement().namespace}

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        return None  # the device plugin gives GPUs to pods that ask in limits

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        labels = dict(spec.labels)
        if labels.get(KIND) != "cell":
            return self.local.run(spec, timeout)
        cell = labels.get(CELL, "")
        host = cell.split("/")[1] if cell.count("/") == 2 else ""
        end = self.jobs.run(job_manifest(spec, self.placements.get(host) or KubePlacement(), timeout), timeout)
        if end.result is not None:
            out = next(Path(src) for src, dst, _ in spec.binds if dst == OUT)
            (out / "result.json").write_bytes(end.result)
        elif not end.timed_out and end.exit_code is None:
            raise RefenvError("the cell's pod ended without a container status")
        return RunOutcome(end.exit_code, end.timed_out, end.oom_killed, end.log[-6000:])

    def cancel(self, run_id: str) -> int:
        return sum(self.jobs.delete_run(ns, run_id) for ns in sorted(self.namespaces)) + self.local.cancel(run_id)
