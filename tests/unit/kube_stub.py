"""A small Kubernetes API stub on loopback (127.0.0.1 only) for the official client: Jobs are created,
listed and deleted; each Job gets one pod whose end the test decides; pods are watched and their logs read.
It checks what a real API server would refuse in a create (the manifest's kind and name)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class PodScript:
    """How a Job's pod ends: its phase, exit code, reason, pod reason and log."""

    phase: str = "Succeeded"
    exit_code: int = 0
    reason: str = "Completed"
    pod_reason: str | None = None
    log: str = ""


@dataclass
class Cluster:
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)
    logs_read: list[str] = field(default_factory=list)
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)   # node name -> labels
    script: Callable[[dict[str, Any]], PodScript] = lambda job: PodScript()


def _pod(job: dict[str, Any], end: PodScript | None) -> dict[str, Any]:
    name = job["metadata"]["name"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    status: dict[str, Any] = {"phase": "Pending"}
    if end is not None:
        status = {"phase": end.phase, "containerStatuses": [{
            "name": container["name"], "image": container["image"], "imageID": "", "ready": False,
            "restartCount": 0, "state": {"terminated": {"exitCode": end.exit_code, "reason": end.reason}}}]}
        if end.pod_reason:
            status["reason"] = end.pod_reason
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-x7k2p", "namespace": job["metadata"]["namespace"], "resourceVersion": "2",
                         "labels": {"job-name": name}},
            "spec": {"containers": [{"name": container["name"], "image": container["image"]}]},
            "status": status}


def serve(cluster: Cluster) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _json(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            parts = urlparse(self.path).path.strip("/").split("/")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if parts[:3] != ["apis", "batch", "v1"] or parts[5] != "jobs" or body.get("kind") != "Job":
                return self._json(400, {"kind": "Status", "message": "bad request"})
            name = body["metadata"]["name"]
            if name in cluster.jobs:
                return self._json(409, {"kind": "Status", "message": "already exists", "code": 409})
            cluster.jobs[name] = body
            return self._json(201, body)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts, query = url.path.strip("/").split("/"), parse_qs(url.query)
            if parts == ["api", "v1", "nodes"]:
                key, _, value = query.get("labelSelector", [""])[0].partition("=")
                items = [{"metadata": {"name": n, "labels": labels}} for n, labels in cluster.nodes.items()
                         if not key or labels.get(key) == value]
                return self._json(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items})
            if parts[:2] == ["api", "v1"] and parts[4] == "pods" and len(parts) == 7 and parts[6] == "log":
                owner = parts[5].rsplit("-", 1)[0]
                cluster.logs_read.append(owner)
                data = cluster.script(cluster.jobs[owner]).log.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            if parts[:2] == ["api", "v1"] and parts[4] == "pods":
                selector = query.get("labelSelector", [""])[0]
                name = selector.removeprefix("job-name=")
                job = cluster.jobs.get(name)
                if query.get("watch", [""])[0] in ("true", "True", "1"):
                    cluster.watched.append(name)
                    events = [] if job is None else [{"type": "ADDED", "object": _pod(job, None)},
                                                     {"type": "MODIFIED", "object": _pod(job, cluster.script(job))}]
                    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return None
                return self._json(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                        "items": [] if job is None else [_pod(job, cluster.script(job))]})
            if parts[:3] == ["apis", "batch", "v1"] and parts[5] == "jobs":
                selector = query.get("labelSelector", [""])[0]
                key, _, value = selector.partition("=")
                items = [j for j in cluster.jobs.values() if not key or j["metadata"]["labels"].get(key) == value]
                return self._json(200, {"kind": "JobList", "apiVersion": "batch/v1", "metadata": {}, "items": items})
            return self._json(404, {"kind": "Status", "message": "not found", "code": 404})

        def do_DELETE(self) -> None:
            parts = urlparse(self.path).path.strip("/").split("/")
            name = parts[-1]
            if name not in cluster.jobs:
                return self._json(404, {"kind": "Status", "message": "not found", "code": 404})
            del cluster.jobs[name]
            cluster.deleted.append(name)
            return self._json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
