"""The record of a publish: what went where, with digests, and what was refused and why."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.schema.jsondata import encode, optional_key
from refenv.readiness import Readiness, grouped

SCHEMA = "refenv.publish"
VERSION = 1


@dataclass(frozen=True)
class PullCheck:
    """The pull-back check: the release pulled by digest, its labels compared, a ready cell run again from it;
    or why it could not be pulled. Empty (`{}` in the manifest) when no check was made."""

    reference: str | None = optional_key()
    image_id: str | None = optional_key()
    labels_match: bool | None = optional_key()
    labels_differing: tuple[str, ...] | None = optional_key()
    cell: str | None = optional_key()
    status: str | None = optional_key()
    observed: str | None = optional_key()
    reason: str | None = optional_key()
    results: str | None = optional_key()
    ok: bool | None = optional_key()
    error: str | None = optional_key()

    @property
    def held(self) -> bool:
        """False only for a check that was made and failed."""
        return self.ok is not False


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
    pull_check: PullCheck = field(default_factory=PullCheck)

    @property
    def reference(self) -> str:
        return f"{self.repository}@{self.digest}"


@dataclass(frozen=True)
class ReadyHost:
    host: str
    gpu: str                         # "simulated" or "real"
    scenario: str


@dataclass(frozen=True)
class RefusedHost:
    host: str
    verdict: str
    min_driver: str | None
    fix: str
    label: str


@dataclass(frozen=True)
class UntestedHost:
    host: str
    why: str


@dataclass(frozen=True)
class PublishedEntry:
    """One published image in the manifest: where it went, what proved it, where torch gets a GPU and not."""

    environment: str
    repository: str
    tags: tuple[str, ...]
    digest: str
    reference: str
    content_hash: str
    run: str
    report: str
    report_digest: str
    runs: tuple[str, ...]
    description: str
    ready_hosts: tuple[ReadyHost, ...]
    refused_hosts: tuple[RefusedHost, ...]
    untested_hosts: tuple[UntestedHost, ...]
    fixes: tuple[str, ...]
    agreed: bool
    min_driver: str | None
    labels: dict[str, str]
    pull_check: PullCheck

    @classmethod
    def of(cls, p: Published) -> PublishedEntry:
        r = p.readiness
        return cls(p.environment, p.repository, p.tags, p.digest, p.reference, p.content_hash, p.run_id, p.report,
                   f"sha256:{p.report_digest}", p.runs, p.description,
                   tuple(ReadyHost(h.host, "simulated" if h.simulated else "real", h.scenario) for h in r.ready),
                   tuple(RefusedHost(h.host, h.verdict, h.fix.min_driver, h.fix.text, h.label) for h in r.refused),
                   tuple(UntestedHost(host, why) for host, why in r.untested), tuple(grouped(r)), r.agreed,
                   dict(p.labels).get("refenv.min-driver"), dict(p.labels), p.pull_check)


@dataclass(frozen=True)
class RefusedEnvironment:
    environment: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class FailedEnvironment:
    environment: str
    error: str


@dataclass(frozen=True)
class Manifest:
    """The record of one publish."""

    schema: str
    version: int
    created: str
    registry: str
    credentials_from: str            # where the credentials came from, never what they are
    published: tuple[PublishedEntry, ...]
    refused: tuple[RefusedEnvironment, ...]
    failed: tuple[FailedEnvironment, ...]


def document(registry: str, credentials: str, published: list[Published], refused: dict[str, tuple[str, ...]],
             failed: dict[str, str], created: datetime.datetime) -> Manifest:
    """The manifest (pure). `credentials` says where they came from, never what they are."""
    return Manifest(SCHEMA, VERSION, created.isoformat(timespec="seconds"), registry, credentials,
                    tuple(PublishedEntry.of(p) for p in published),
                    tuple(RefusedEnvironment(name, reasons) for name, reasons in refused.items()),
                    tuple(FailedEnvironment(name, error) for name, error in failed.items()))


def write(doc: Manifest, folder: Path, created: datetime.datetime) -> Path:
    """results/publish/<time>.json."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{created.strftime('%Y%m%d-%H%M%S')}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{created.strftime('%Y%m%d-%H%M%S')}-{n}.json"
    path.write_text(json.dumps(encode(doc), indent=2) + "\n", encoding="utf-8")
    return path
