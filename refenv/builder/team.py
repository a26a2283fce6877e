"""A team's own image as an environment: an existing image (here, else pulled), or built from its Dockerfile.

The harness is never baked in (it is mounted when the image runs), so the image is the team's, byte for byte.
A Dockerfile's image is tagged by content — the Dockerfile, every file of its context that the build sees
(`.dockerignore` honoured: Docker's own rules, `**` and `!` exceptions aside), the build arguments — so an
unchanged one is never rebuilt; its log streams like a recipe build's (refenv/builder/environment.py BuildLog).

It builds as `docker build` builds it: on the builder's network (registries and package indexes reachable),
with the engine's registry credentials, `target:`, `platform:`, `build_args:` and `secrets:`; `network: none`
is the opt-in for a hermetic build. A Dockerfile in BuildKit's syntax goes to a BuildKit builder
(refenv/builder/buildkit.py says which), the others to Docker's classic builder. A build that cannot reach a
registry or an index says which, and how to authenticate or build offline (refenv/builder/build_failures.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path

from refenv import paths
from refenv.builder import build_failures, buildkit, clibuild
from refenv.builder.context import tar_context
from refenv.builder.environment import BuildLog, Progress
from refenv.builder.images import tree_digest
from refenv.builder.store import ImageStore
from refenv.errors import BuildError, RefenvError
from refenv.model.builds import BUILT, CACHED, EnvBuild
from refenv.model.labels import ENVIRONMENT, KIND, MANAGED
from refenv.model.matrix import NETWORK_DEFAULT, Environment, TeamImage

DOCKERFILE_IN_CONTEXT = ".refenv.Dockerfile"   # where a Dockerfile from outside its context is put
MAX_CONTEXT_FILES = 100_000


def _ignored(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatchcase(p, pattern) for pattern in patterns for p in prefixes)


def context_files(context: Path) -> list[str]:
    """The context's files as the build sees them: relative paths, `.dockerignore` applied, in order."""
    ignore = context / ".dockerignore"
    patterns = []
    if ignore.is_file():
        for raw in ignore.read_text(encoding="utf-8", errors="replace").splitlines():
            line = raw.strip()
            if line and not line.startswith(("#", "!")):
                patterns.append(line.strip("/").removeprefix("./"))
    found = []
    for path in sorted(context.rglob("*")):
        rel = path.relative_to(context).as_posix()
        if path.is_file() and not _ignored(rel, patterns):
            found.append(rel)
            if len(found) > MAX_CONTEXT_FILES:
                raise BuildError(f"the build context {context} holds more than {MAX_CONTEXT_FILES} files",
                                 hint="add a .dockerignore, or name a smaller context:")
    return found


def dockerfile_digest(team: TeamImage, files: list[str]) -> str:
    """What a Dockerfile build depends on: the Dockerfile, the context's files (names and bytes), the arguments,
    the stage and platform built, and the secrets' ids (never their values)."""
    assert team.dockerfile and team.context
    shape: dict[str, object] = {"args": sorted(team.build_args)}
    if team.target or team.platform or team.secrets:
        shape.update(target=team.target, platform=team.platform, secrets=sorted(s.id for s in team.secrets))
    h = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
    h.update(Path(team.dockerfile).read_bytes() + b"\0")
    for rel in files:
        h.update(rel.encode() + b"\0" + (Path(team.context) / rel).read_bytes() + b"\0")
    return h.hexdigest()


def _tag(env: Environment, digest: str) -> str:
    return f"refenv/team-{env.name}:{digest[:16]}"


def given(store: ImageStore, env: Environment, log: BuildLog, start: float) -> EnvBuild:
    """`image: REF`: the image this engine holds, else pulled from its registry."""
    assert env.team is not None and env.team.image
    ref = env.team.image
    status = CACHED
    image_id = store.image_id(ref)
    if image_id is None:
        log(f"pulling {ref}")
        try:
            image_id = store.pull(ref)
        except RefenvError as exc:
            raise BuildError(f"image {ref} is not in this engine and could not be pulled: {exc.message}",
                             hint=f"docker pull {ref} (or docker load) where a registry answers, then run again") \
                from None
        status = BUILT
    log(f"{status.lower()}: {ref} ({image_id})")
    return EnvBuild(env.name, status, ref, image_id.removeprefix("sha256:"), round(time.monotonic() - start, 1),
                    log.path)


def from_dockerfile(store: ImageStore, env: Environment, log: BuildLog, start: float) -> EnvBuild:
    """`dockerfile: PATH`: built with its context and arguments, unless an image of the same content is here."""
    team = env.team
    assert team is not None and team.dockerfile and team.context
    context = Path(team.context)
    files = context_files(context)
    digest = dockerfile_digest(team, files)
    tag = _tag(env, digest)
    if store.image_id(tag):
        log(f"cached: {tag}")
        return EnvBuild(env.name, CACHED, tag, digest, 0.0, log.path)
    dockerfile = Path(team.dockerfile)
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    labels = {MANAGED: "true", KIND: "team-image", ENVIRONMENT: env.name, "refenv.content-hash": digest}
    way = buildkit.route(buildkit.buildkit_uses(text, str(dockerfile)), team, clibuild.have_buildx(),
                         clibuild.have_podman(), str(dockerfile))
    log(f"building {tag} from {dockerfile} (context {context}, {len(files)} files"
        + (f", build args {', '.join(k for k, _ in team.build_args)}" if team.build_args else "")
        + (f", network {team.network}" if team.network != NETWORK_DEFAULT else "")
        + f"; {way.builder} builder" + (f", for {way.why[0]}" if way.why else "") + ")")
    try:
        if way.builder == buildkit.CLASSIC:
            _classic(store, team, files, tag, labels, log)
        else:
            missing = [s for s in team.secrets if s.env and s.env not in os.environ]
            if missing:
                raise BuildError(f"the build secret {missing[0].id} comes from ${missing[0].env}, which is not set",
                                 hint=f"export {missing[0].env}=... (in CI: from the platform's secret store)")
            bases = buildkit.base_images(text, str(dockerfile), dict(team.build_args))
            clibuild.build(store, way.builder, buildkit.cli_command(way.builder, team, tag, labels), tag, bases, log)
    except BuildError as exc:
        hint = build_failures.explain(f"{exc.log_tail}\n{exc.message}", team.network)
        if hint is None:
            raise
        raise BuildError(exc.message, exc.log_tail, hint) from None
    log(f"built: {tag}")
    return EnvBuild(env.name, BUILT, tag, digest, round(time.monotonic() - start, 1), log.path)


def _classic(store: ImageStore, team: TeamImage, files: list[str], tag: str, labels: dict[str, str],
             log: BuildLog) -> None:
    """Docker's classic builder, through the engine's API, on the context as the build sees it."""
    assert team.dockerfile and team.context
    context, dockerfile = Path(team.context), Path(team.dockerfile)
    inside = dockerfile.is_relative_to(context) and dockerfile.relative_to(context).as_posix() in files
    name = dockerfile.relative_to(context).as_posix() if inside else DOCKERFILE_IN_CONTEXT
    parts: dict[str, bytes | Path] = {rel: context / rel for rel in files}
    if not inside:
        parts[name] = dockerfile.read_bytes()
    store.build(tar_context(parts), tag, log, labels=labels, build_args=dict(team.build_args), dockerfile=name,
                network=None if team.network == NETWORK_DEFAULT else team.network, target=team.target,
                platform=team.platform)


def content_hash(identity: str) -> str:
    """What a team image's cells depend on: the image (its id, or its Dockerfile digest) and the harness mounted in."""
    harness = tree_digest(paths.harness_dir())
    return hashlib.sha256(f"{identity}:{harness}".encode()).hexdigest()


def current(store: ImageStore, env: Environment) -> tuple[str, str]:
    """(content hash, tag) of the team image as the matrix names it now, without building or pulling anything."""
    team = env.team
    assert team is not None
    if team.image:
        image_id = store.image_id(team.image)
        if image_id is None:
            raise RefenvError(f"{env.name}: image {team.image} is not in the engine", "run `invoke matrix` first")
        return content_hash(image_id.removeprefix("sha256:")), team.image
    digest = dockerfile_digest(team, context_files(Path(str(team.context))))
    tag = _tag(env, digest)
    if store.image_id(tag) is None:
        raise RefenvError(f"{env.name}: its Dockerfile's image {tag} is not built (the Dockerfile or its context "
                          "changed since the last build)", f"run `invoke matrix --env {env.name}` first")
    return content_hash(digest), tag


def team_image(store: ImageStore, env: Environment, progress: Progress) -> EnvBuild:
    """The environment's image, given or built; an expected failure is a FAILED record with the log's tail.

    Its content hash (what a cached cell depends on) covers the image and the harness mounted into it."""
    start = time.monotonic()
    with BuildLog(env.name, progress) as log:
        try:
            build = given(store, env, log, start) if env.team is not None and env.team.image \
                else from_dockerfile(store, env, log, start)
        except (BuildError, RefenvError, OSError) as exc:
            return log.failed(exc, start)
    return replace(build, content_hash=content_hash(str(build.content_hash)))
