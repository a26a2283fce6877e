"""`invoke publish`: push the known-good environments to a registry, record the digests, and pull one back.

Each environment is judged first (`verify.judge` over the newest matrix run that tested its image); the
others are refused with the reason. A release image (the environment image plus labels) is built,
tagged twice, pushed with the credentials of `auth`, and recorded in results/publish/<time>.json. The
pull-back check then removes the local release tags, pulls the release by digest, checks its labels
and re-runs one verified cell from the pulled image.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from refenv import paths, wheelhouse
from refenv.backend import ImageRequest
from refenv.build import EnvBuild
from refenv.buildcontext import tar_context
from refenv.cellplan import Scope, plan_cell
from refenv.cellrun import run_cells
from refenv.dockerengine import DockerEngine
from refenv.engine import Engine
from refenv.errors import RefenvError
from refenv.matrix import Environment, Host, Matrix, Scenario
from refenv.publish import auth, evidence, manifest, release, verify
from refenv.publish.manifest import Published
from refenv.results import PASS, CellResult
from refenv.rundoc import HostRecord, RunDocument, ScenarioRecord
from refenv.runner import Begun, conclude, prepare

LOG = logging.getLogger(__name__)
Say = Callable[[str], None]
# The cell a pull-back check re-runs, when the run has it: the current long-term driver, GPU access.
PREFERRED_CELL = ("r580", "gpu")


@dataclass(frozen=True)
class Settings:
    registry: release.Registry
    matrix: Matrix
    results_root: Path
    dry_run: bool = False
    pull_check: bool = True
    repository: str | None = None   # one repository for all (default: one per environment, by its name)


@dataclass(frozen=True)
class Outcome:
    published: list[Published]
    refused: dict[str, tuple[str, ...]]
    failed: dict[str, str]
    manifest: Path | None

    @property
    def ok(self) -> bool:
        return not self.refused and not self.failed and all(p.pull_check.get("ok", True) for p in self.published)


class SayUI:
    """A `run_matrix` UI that reports stages and cells as lines."""

    def __init__(self, say: Say) -> None:
        self.say = say

    def stage(self, message: str) -> None:
        self.say(f"  {message}")

    def build_line(self, environment: str, line: str) -> None:
        LOG.debug("%s: %s", environment, line)

    def build_done(self, build: EnvBuild) -> None:
        LOG.debug("%s: %s", build.environment, build.status)

    def cells_start(self, total: int) -> None:
        LOG.debug("%d cell(s)", total)

    def cell_done(self, result: CellResult) -> None:
        self.say(f"  {result.id}: {result.status} ({result.reason})")


def pick_cell(doc: RunDocument, env: str) -> CellResult:
    """The PASS cell to re-run from the pulled image: r580/gpu if the run has it, else a simulated host's."""
    passed = [c for c in doc.cells if c.environment == env and c.status == PASS]
    kinds = {h.name: h.kind for h in doc.hosts}
    return next((c for c in passed if (c.host, c.scenario) == PREFERRED_CELL),
                next((c for c in passed if kinds.get(c.host) == "simulated"), passed[0]))


def _host(matrix: Matrix, doc: RunDocument, name: str) -> Host:
    try:
        return matrix.host(name)
    except StopIteration:
        entry = doc.host(name) or HostRecord(name)
        return Host(name, entry.kind, entry.profile)


def _scenario(matrix: Matrix, doc: RunDocument, name: str) -> Scenario:
    try:
        return matrix.scenario(name)
    except StopIteration:
        entry = doc.scenario(name) or ScenarioRecord(name)
        return Scenario(name, entry.gpus, tuple(entry.env.items()))


def pull_check(engine: Engine, settings: Settings, env: Environment, p: Published, doc: RunDocument,
               creds: auth.Credentials | None, say: Say) -> dict[str, Any]:
    """Untag the local release, pull it by digest, check its labels, and re-run one verified cell from it."""
    for tag in p.tags:
        engine.untag(f"{p.repository}:{tag}")
    say(f"  pulling {p.reference}")
    try:
        image_id = engine.pull(p.reference, creds.auth_config() if creds else None)
    except RefenvError as exc:
        secrets = [creds.password] if creds else []
        return {"reference": p.reference, "ok": False, "error": auth.redact(exc.message, secrets)}
    labels = engine.image_labels(p.reference) or {}
    wrong = [k for k, v in p.labels if labels.get(k) != v]
    c = pick_cell(doc, env.name)
    cells = DockerEngine(engine)
    scope = Scope((env,), (_host(settings.matrix, doc, c.host),), (_scenario(settings.matrix, doc, c.scenario),))
    quick = replace(settings.matrix.run, probes="off", memory_check="off")
    begun = Begun.now(settings.results_root / "publish" / "pullback")
    begun.folder.mkdir(parents=True, exist_ok=True)
    ui = SayUI(say)
    request = ImageRequest(env, wheelhouse.lock_path(settings.matrix.path, env.name), given=p.reference)
    prepared = prepare(cells, [request], scope.hosts, begun.run_id, ui)
    plan = plan_cell(scope.cells()[0], prepared, begun.run_id, begun.folder, quick)
    done = run_cells(cells, [plan], begun.run_id, use_cache=False, on_done=ui.cell_done)
    outcome = conclude(begun, scope, cells.inventory(), prepared.builds, done.results, done.interrupted,
                       prepared.real, use_cache=False)
    cell = done.results[0]
    return {"reference": p.reference, "image_id": image_id, "labels_match": not wrong, "labels_differing": wrong,
            "cell": cell.id, "status": cell.status, "reason": cell.reason, "results": str(outcome.folder),
            "ok": not wrong and cell.status == PASS}


def push(engine: Engine, ref: str, creds: auth.Credentials | None) -> str:
    """Push one tag; the registry's manifest digest. Errors are shown with any secret removed."""
    secrets = [creds.password] if creds else []
    digest = None
    for chunk in engine.push(ref, creds.auth_config() if creds else None):
        if chunk.get("error"):
            raise RefenvError(f"pushing {ref} failed: {auth.redact(str(chunk['error']), secrets)}",
                              f"check the registry address and its credentials ({auth.source_of(creds)})")
        digest = (chunk.get("aux") or {}).get("Digest") or digest
    if not digest:
        raise RefenvError(f"pushing {ref}: the registry gave no digest")
    return str(digest)


def publish_one(engine: Engine, settings: Settings, env: Environment, creds: auth.Credentials | None,
                say: Say) -> Published | tuple[str, ...]:
    """One environment: published (or, in a dry run, planned), or the reasons it is refused."""
    try:
        content_hash, image = evidence.current_image(engine, settings.matrix, env)
    except RefenvError as exc:
        return (str(exc).replace("\n  ", ": "),)
    found = evidence.find_run(settings.results_root, env.name, content_hash)
    if isinstance(found, str):
        return (found,)
    report, doc = found
    judged = verify.judge(doc, env.name, content_hash)
    if not judged.ok:
        return judged.reasons
    revision, source = evidence.git_info(paths.project_root())
    info = release.ReleaseInfo(env.name, env.torch, env.variant, env.python, content_hash, str(judged.run_id),
                               evidence.sha256_of(report), judged.hosts,
                               datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               revision, source)
    labels = release.labels(info)
    repository = settings.registry.repository(settings.repository or release.repository_name(env.name))
    tags = (release.release_tag(env.torch, env.variant, env.python), release.hash_tag(content_hash))
    p = Published(env.name, repository, tags, "", content_hash, info.run_id, str(report), info.report_digest,
                  judged.verified_on, judged.not_verified, labels)
    say(f"{env.name}: known-good in run {judged.run_id} ({judged.passed} cells passed)")
    say(f"  verified on: {'; '.join(judged.verified_on)}")
    if judged.not_verified:
        n = len(judged.not_verified)
        say(f"  not verification ({n} cell{'s' if n != 1 else ''} NOT_RUN): {judged.not_verified[0]}")
    if settings.dry_run:
        say(f"  would publish {image} as {', '.join(f'{repository}:{t}' for t in tags)}")
        for key, value in labels:
            say(f"    {key}={value}")
        return p
    first = f"{repository}:{tags[0]}"
    text = release.dockerfile(image, labels)
    engine.build(tar_context({"Dockerfile": text.encode()}), first, lambda line: LOG.debug("%s", line))
    engine.tag(first, f"{repository}:{tags[1]}")
    digests = {push(engine, f"{repository}:{t}", creds) for t in tags}
    if len(digests) != 1:
        raise RefenvError(f"the registry gave the two tags of {env.name} different digests: {sorted(digests)}")
    p = replace(p, digest=digests.pop())
    say(f"  pushed {', '.join(f'{repository}:{t}' for t in tags)} = {p.digest}")
    if settings.pull_check:
        check = pull_check(engine, settings, env, p, doc, creds, say)
        p = replace(p, pull_check=check)
        say(f"  pull-back check: {'OK' if check['ok'] else 'FAILED'} ({check['cell']}: {check['status']}"
            + (f"; labels differ: {', '.join(check['labels_differing'])}" if check["labels_differing"] else "") + ")")
    return p


def publish(settings: Settings, say: Say, environ: Mapping[str, str]) -> Outcome:
    """Every environment of the matrix: the known-good ones published, the others refused with the reason."""
    creds = auth.from_environment(environ)
    engine = Engine.connect()
    published: list[Published] = []
    refused: dict[str, tuple[str, ...]] = {}
    failed: dict[str, str] = {}
    for env in settings.matrix.environments:
        try:
            result = publish_one(engine, settings, env, creds, say)
        except RefenvError as exc:  # a push that fails stops this environment, not the record of the others
            failed[env.name] = auth.redact(str(exc), [creds.password] if creds else [])
            say(f"{env.name}: FAILED: {failed[env.name]}")
            continue
        if isinstance(result, tuple):
            refused[env.name] = result
            say(f"{env.name}: refused: {'; '.join(result)}")
        else:
            published.append(result)
    if settings.dry_run:
        return Outcome(published, refused, failed, None)
    created = datetime.datetime.now(datetime.timezone.utc)
    doc = manifest.document(f"{settings.registry.host}/{settings.registry.namespace}", auth.source_of(creds),
                            published, refused, failed, created)
    path = manifest.write(doc, settings.results_root / "publish", created)
    return Outcome(published, refused, failed, path)
