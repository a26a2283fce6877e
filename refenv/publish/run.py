"""`invoke publish`: push the known-good environments to a registry, record the digests, and pull one back.

Each environment is judged first (`publishable.judge`: the newest run of its image that covers the whole
matrix agreed everywhere, and torch got a GPU on at least one host); the others are refused with the
reason. A release image (the environment image plus labels) is built,
tagged twice, pushed with the credentials of `auth`, and recorded in results/publish/<time>.json. The
pull-back check then removes the local release tags, pulls the release by digest, checks its labels
and re-runs, from the pulled image, a cell where torch got the GPU.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from harness.schema import OK
from refenv.builder.context import tar_context
from refenv.builder.wheelhouse import lock_path
from refenv.engines.docker.engine import DockerEngine
from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ImageRequest
from refenv.errors import RefenvError
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Environment, Matrix
from refenv.model.records import ERROR, NOT_RUN, PASS, CellResult, MeasurementRecord
from refenv.model.rundoc import EnvironmentRecord
from refenv.publish import auth, evidence, history, manifest, publishable, release
from refenv.publish.manifest import Published, PullCheck
from refenv.readiness import Readiness, grouped
from refenv.run.cells import run_cells
from refenv.run.pipeline import Begun, conclude
from refenv.run.plan import Scope, plan_cell
from refenv.run.prepare import prepare

LOG = logging.getLogger(__name__)
Say = Callable[[str], None]


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
        return not self.refused and not self.failed and all(p.pull_check.held for p in self.published)


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

    def measurements_start(self, total: int) -> None:
        LOG.debug("%d measurement(s)", total)

    def measurement_done(self, record: MeasurementRecord) -> None:
        self.say(f"  measured {record.label}: {record.status} ({record.reason})")

    def cells_start(self, total: int) -> None:
        LOG.debug("%d cell(s)", total)

    def cell_done(self, result: CellResult) -> None:
        self.say(f"  {result.id}: {result.status} ({result.reason})")


def pull_check(engine: Engine, settings: Settings, env: Environment, p: Published, cell: tuple[str, str],
               creds: auth.Credentials | None, say: Say) -> PullCheck:
    """Untag the local release, pull it by digest, check its labels, and re-run a ready cell from it.

    The cell is one where torch got the GPU in the deciding run; the check passes when the pulled image
    gives the same answer (PASS, observed OK), so a cell whose prediction merely held proves nothing here.
    """
    for tag in p.tags:
        engine.untag(f"{p.repository}:{tag}")
    say(f"  pulling {p.reference}")
    try:
        image_id = engine.pull(p.reference, creds.auth_config() if creds else None)
    except RefenvError as exc:
        secrets = [creds.password] if creds else []
        return PullCheck(reference=p.reference, ok=False, error=auth.redact(exc.message, secrets))
    labels = engine.image_labels(p.reference) or {}
    wrong = [k for k, v in p.labels if labels.get(k) != v]
    host, scenario = cell
    cells = DockerEngine(engine)
    scope = Scope((env,), (settings.matrix.host(host),), (settings.matrix.scenario(scenario),))
    quick = replace(settings.matrix.run, probes="off", memory_check="off")
    begun = Begun.now(settings.results_root / "publish" / "pullback")
    begun.folder.mkdir(parents=True, exist_ok=True)
    ui = SayUI(say)
    request = ImageRequest(env, lock_path(settings.matrix.path, env.name), given=p.reference)
    prepared = prepare(cells, [request], scope.hosts, begun.run_id, ui)
    plan = plan_cell(scope.cells()[0], prepared, begun.run_id, begun.folder, quick)
    done = run_cells(cells, [plan], begun.run_id, use_cache=False, on_done=ui.cell_done)
    outcome = conclude(begun, scope, cells.inventory(), prepared.builds, done.records, done.interrupted,
                       prepared.real, use_cache=False)
    ran = outcome.document.cells[0] if outcome.document.cells else None
    return PullCheck(reference=p.reference, image_id=image_id, labels_match=not wrong, labels_differing=tuple(wrong),
                     cell=ran.id if ran else f"{env.name}/{host}/{scenario}", status=ran.status if ran else ERROR,
                     observed=ran.observed.verdict if ran and ran.observed else None,
                     reason=ran.reason if ran else "no cell ran", results=str(outcome.folder),
                     ok=not wrong and ran is not None and ran.status == PASS and ran.observed is not None
                     and ran.observed.verdict == OK)


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


def required_cells(matrix: Matrix) -> frozenset[tuple[str, str]]:
    """Every (host, scenario) the matrix defines: each environment runs on every host under every scenario."""
    return frozenset((h.name, s.name) for h in matrix.hosts for s in matrix.scenarios)


def tell(say: Say, info: release.ReleaseInfo, ready: Readiness) -> None:
    """The console's account: the same words as the description and the labels, plus the grouped fixes."""
    say(f"  {release.description(info)}")
    say(f"  ready hosts: {', '.join(info.ready_hosts)}")
    if info.refused_hosts:
        say(f"  refused hosts: {'; '.join(info.refused_hosts)}")
        for line in grouped(ready):
            say(f"    {line}")
    if info.untested_hosts:
        say(f"  untested hosts: {'; '.join(info.untested_hosts)}")


def _beside_torch(record: EnvironmentRecord | None) -> tuple[str, ...]:
    """'torchvision 0.29.1' for each extension the run's inventory found beside torch (not the CUDA library wheels)."""
    dists = record.stack.distributions if record and record.stack else ()
    return tuple(f"{d.name} {d.version}" for d in dists if d.kind == "extension")


def publish_one(engine: Engine, settings: Settings, env: Environment, runs: list[history.Run],
                creds: auth.Credentials | None, say: Say) -> Published | tuple[str, ...]:
    """One environment: published (or, in a dry run, planned), or the reasons it is refused."""
    try:
        content_hash, image = evidence.current_image(engine, settings.matrix, env)
    except RefenvError as exc:
        return (str(exc).replace("\n  ", ": "),)
    judged = publishable.judge(runs, env.name, content_hash, required_cells(settings.matrix))
    if not judged.ok or judged.run is None or judged.readiness is None or judged.pull_cell is None:
        return judged.reasons
    ready, report = judged.readiness, judged.run.path
    record = judged.run.environment(env.name)
    if env.team is not None and record is not None:  # a team image's torch was read from it in the run
        env = replace(env, torch=record.torch or "", variant=record.variant or "", python=record.python or "")
    # The project's commit: the repository that holds the matrix (refenv's checkout, or a team's own).
    revision, source = evidence.git_info(Path(settings.matrix.path).resolve().parent)
    info = release.ReleaseInfo(
        env.name, env.torch, env.variant, env.python, content_hash, judged.run.run_id, evidence.sha256_of(report),
        tuple(h.label for h in ready.ready), tuple(h.label for h in ready.refused),
        tuple(f"{host}: {why}" for host, why in ready.untested), judged.runs_used,
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), revision, source,
        _beside_torch(record))
    labels = release.labels(info)
    repository = settings.registry.repository(settings.repository or release.repository_name(env.name))
    tags = (release.release_tag(env.torch, env.variant, env.python), release.hash_tag(content_hash))
    p = Published(env.name, repository, tags, "", content_hash, info.run_id, str(report), info.report_digest,
                  judged.runs_used, ready, release.description(info), labels)
    # A cell not run here (a real host without the NVIDIA runtime) neither agreed nor disagreed: counted apart.
    not_run = sum(1 for c in judged.run.cells_of(env.name) if c.status == NOT_RUN
                  and (c.host, c.scenario) in required_cells(settings.matrix))
    say(f"{env.name}: known-good in run {info.run_id}, which covers every host and scenario of the matrix "
        f"({ready.cells} cells: {ready.cells - not_run} as predicted" + (f", {not_run} not run)" if not_run else ")"))
    tell(say, info, ready)
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
        check = pull_check(engine, settings, env, p, judged.pull_cell, creds, say)
        p = replace(p, pull_check=check)
        say(f"  pull-back check: {'OK' if check.ok else 'FAILED'} ({check.cell}: {check.status}, "
            f"observed {check.observed}"
            + (f"; labels differ: {', '.join(check.labels_differing)}" if check.labels_differing else "")
            + (f"; {check.error}" if check.error else "") + ")")
    return p


def publish(settings: Settings, say: Say, environ: Mapping[str, str]) -> Outcome:
    """Every environment of the matrix: the known-good ones published, the others refused with the reason."""
    creds = auth.from_environment(environ)
    engine = Engine.connect()
    published: list[Published] = []
    refused: dict[str, tuple[str, ...]] = {}
    failed: dict[str, str] = {}
    runs = history.load_runs(settings.results_root)
    for env in settings.matrix.environments:
        try:
            result = publish_one(engine, settings, env, runs, creds, say)
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
