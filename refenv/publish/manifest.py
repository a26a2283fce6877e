"""The record of a publish: what went where, with digests, and what was refused and why."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refenv.readiness import Readiness, grouped

SCHEMA = "refenv.publish"
VERSION = 1


@dataclass(frozen=True)
class Published:
    environment: str
    repository: str
    tags: tuple[str, ...]
    digest: str                      # the manifest digest the registry gave, "sha256:..."
    content_hash: str
    run_id: str
    report: str                      # the run's cells.json
    report_digest: str
    runs: tuple[str, ...]            # every run read: the deciding one first
    readiness: Readiness             # where torch gets a GPU in the deciding run, and where not
    description: str                 # the sentence the console and the image description show
    labels: tuple[tuple[str, str], ...]
    pull_check: dict[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> str:
        return f"{self.repository}@{self.digest}"


def evidence(r: Readiness) -> dict[str, Any]:
    """Where torch gets a GPU, where not with the verdict and the fix, and where the run could not tell."""
    return {
        "ready_hosts": [{"host": h.host, "gpu": "simulated" if h.simulated else "real", "scenario": h.scenario}
                        for h in r.ready],
        "refused_hosts": [{"host": h.host, "verdict": h.verdict, "min_driver": h.fix.min_driver,
                           "fix": h.fix.text, "label": h.label} for h in r.refused],
        "untested_hosts": [{"host": host, "why": why} for host, why in r.untested],
        "fixes": list(grouped(r)),
        "agreed": r.agreed,
    }


def document(registry: str, credentials: str, published: list[Published], refused: dict[str, tuple[str, ...]],
             failed: dict[str, str], created: datetime.datetime) -> dict[str, Any]:
    """The manifest as JSON-able data (pure). `credentials` says where they came from, never what they are."""
    return {
        "schema": SCHEMA, "version": VERSION, "created": created.isoformat(timespec="seconds"),
        "registry": registry, "credentials_from": credentials,
        "published": [{
            "environment": p.environment, "repository": p.repository, "tags": list(p.tags), "digest": p.digest,
            "reference": p.reference, "content_hash": p.content_hash, "run": p.run_id, "report": p.report,
            "report_digest": f"sha256:{p.report_digest}", "runs": list(p.runs), "description": p.description,
            **evidence(p.readiness), "min_driver": dict(p.labels).get("refenv.min-driver"),
            "labels": dict(p.labels), "pull_check": p.pull_check,
        } for p in published],
        "refused": [{"environment": name, "reasons": list(reasons)} for name, reasons in refused.items()],
        "failed": [{"environment": name, "error": error} for name, error in failed.items()],
    }


def write(doc: dict[str, Any], folder: Path, created: datetime.datetime) -> Path:
    """results/publish/<time>.json."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{created.strftime('%Y%m%d-%H%M%S')}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{created.strftime('%Y%m%d-%H%M%S')}-{n}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
