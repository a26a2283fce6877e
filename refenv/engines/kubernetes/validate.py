"""A Job manifest checked offline: the Kubernetes OpenAPI schema in strict mode (`kubernetes-validate`
bundles the schemas), then the project's own rules the schema cannot see: a GPU only in `requests`,
`restartPolicy: Always` on a Job, and names that are not DNS-1123 (facts/cluster.md)."""

from __future__ import annotations

import re
from typing import Any

from refenv.engines.kubernetes.jobs import GPU

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
VERSION = "1.31"


def project_rules(job: dict[str, Any]) -> list[str]:
    """What is wrong with a Job that the schema accepts."""
    problems = []
    name = str(job.get("metadata", {}).get("name", ""))
    if not DNS1123.match(name) or len(name) > 63:
        problems.append(f"metadata.name {name!r} is not a DNS-1123 label of at most 63 characters")
    spec = job.get("spec", {})
    if spec.get("backoffLimit") != 0:
        problems.append("spec.backoffLimit must be 0: a cell runs once")
    if not spec.get("activeDeadlineSeconds"):
        problems.append("spec.activeDeadlineSeconds is missing: the cell's time limit")
    pod = spec.get("template", {}).get("spec", {})
    if pod.get("restartPolicy") != "Never":
        problems.append(f"restartPolicy is {pod.get('restartPolicy')!r}: a cell's pod must be Never")
    for c in pod.get("containers", []):
        resources = c.get("resources", {})
        if GPU in resources.get("requests", {}) and GPU not in resources.get("limits", {}):
            problems.append(f"container {c.get('name')}: {GPU} only in requests (the device plugin reads limits)")
        if not c.get("securityContext", {}).get("readOnlyRootFilesystem"):
            problems.append(f"container {c.get('name')}: the root filesystem must be read-only")
    return problems


def schema_errors(job: dict[str, Any], version: str = VERSION) -> list[str]:
    """The OpenAPI schema's complaints, strict (unknown fields are errors); empty when it validates."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(job, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(str(p) for p in exc.path)}: {exc.message}"]
    return []


def problems(job: dict[str, Any], version: str = VERSION) -> list[str]:
    return schema_errors(job, version) + project_rules(job)
