"""Which builder builds a team's Dockerfile, and its command line (pure).

Docker's classic builder (the SDK's, refenv's own images use it) builds what `docker build` built before
BuildKit. A Dockerfile that uses BuildKit's syntax — a `# syntax=` frontend, `RUN --mount` (cache, secret, ssh,
bind), `RUN --network`/`--security`, heredocs, `COPY --chmod`/`--link`/`--parents`/`--exclude`, `ADD
--checksum`/`--keep-git-dir` (docker/docs: "Dockerfile reference", each flag's "requires BuildKit") — or that
the matrix gives build secrets needs BuildKit: Docker's own through its buildx component where the client has
it, else Podman's builder (buildah, which reads the same syntax; Podman >= 4.1 for secrets from a variable).
The Dockerfile is read with BuildKit's own parser (the `dockerfile` package wraps it), never by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import dockerfile

from refenv.errors import BuildError
from refenv.model.matrix import NETWORK_DEFAULT, TeamImage

CLASSIC, BUILDX, PODMAN = "classic", "buildx", "podman"
BUILDKIT_FLAGS = {
    "RUN": ("--mount", "--network", "--security", "--device"),
    "COPY": ("--chmod", "--link", "--parents", "--exclude"),
    "ADD": ("--chmod", "--link", "--parents", "--exclude", "--checksum", "--keep-git-dir"),
}
# A parser directive, only in the comments before the first instruction (BuildKit's "Parser directives").
_SYNTAX_RE = re.compile(r"#\s*syntax\s*=\s*(\S+)", re.I)
_ARG_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
# Podman here refuses a RUN under its default limits ("error setting rlimit type 7"): explicit ones, as its
# containers get (refenv/engines/podman/cli.py).
PODMAN_ULIMITS = ("--ulimit", "nofile=1024:20000", "--ulimit", "nproc=4096:4096")


def parsed(text: str, where: str) -> tuple[dockerfile.Command, ...]:
    """The Dockerfile's instructions, or a BuildError with the parser's own words."""
    try:
        return tuple(dockerfile.parse_string(text))
    except dockerfile.GoParseError as exc:
        raise BuildError(f"{where} does not parse: {exc}", hint="fix the Dockerfile (docker build says the same)") \
            from None


def buildkit_uses(text: str, where: str) -> list[str]:
    """Each construct of the Dockerfile that only BuildKit builds: 'line 3: RUN --mount=type=cache,...'."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("#"):
            break
        if (m := _SYNTAX_RE.fullmatch(line.strip())) is not None:
            found.append(f"line {number}: the syntax directive {m.group(1)}")
    for cmd in parsed(text, where):
        flags = [f for f in cmd.flags if f.split("=", 1)[0].lower() in BUILDKIT_FLAGS.get(cmd.cmd.upper(), ())]
        found += [f"line {cmd.start_line}: {cmd.cmd.upper()} {flag}" for flag in flags]
        if cmd.heredocs:
            found.append(f"line {cmd.start_line}: a heredoc ({cmd.cmd.upper()} <<{cmd.heredocs[0].name})")
    return found


def _substitute(word: str, args: Mapping[str, str]) -> str:
    return _ARG_RE.sub(lambda m: args.get(m.group(1) or m.group(3) or "", m.group(2) or ""), word)


def base_images(text: str, where: str, build_args: Mapping[str, str]) -> list[str]:
    """The images the Dockerfile's stages start FROM (its ARGs before the first FROM and the build arguments
    substituted), earlier stages and `scratch` left out."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    out: list[str] = []
    for cmd in parsed(text, where):
        name = cmd.cmd.upper()
        if name == "ARG" and not stages and not out:
            for decl in cmd.value:
                key, _, default = decl.partition("=")
                args[key] = build_args.get(key, default.strip("\"'"))
        elif name == "FROM" and cmd.value:
            image = _substitute(cmd.value[0], {**args, **build_args})
            if len(cmd.value) >= 3 and cmd.value[1].upper() == "AS":
                stages.add(cmd.value[2].lower())
            if image.lower() not in stages and image != "scratch" and image not in out:
                out.append(image)
    return out


@dataclass(frozen=True)
class Route:
    """The builder a Dockerfile goes to, and why (the BuildKit constructs it uses)."""

    builder: str
    why: tuple[str, ...] = ()


def route(uses: list[str], team: TeamImage, have_buildx: bool, have_podman: bool, where: str) -> Route:
    """Classic when nothing needs BuildKit; else Docker's buildx, else Podman's builder; else a BuildError naming
    the missing component."""
    needs = [*uses, *(["build secrets (secrets:)"] if team.secrets else [])]
    if not needs:
        return Route(CLASSIC)
    if have_buildx:
        return Route(BUILDX, tuple(needs))
    if have_podman:
        return Route(PODMAN, tuple(needs))
    raise BuildError(f"{where} needs BuildKit ({'; '.join(needs[:3])}), and Docker's classic builder, the only "
                     "one this Docker client has, cannot build it: its buildx component is missing",
                     hint="install Docker's buildx component (the docker-buildx-plugin package, or docker-buildx), "
                     "or Podman (Debian: apt-get install podman), whose builder refenv uses when buildx is missing")


def cli_command(builder: str, team: TeamImage, tag: str, labels: Mapping[str, str]) -> list[str]:
    """`docker buildx build --load ...` or `podman build ...` for the Dockerfile, as its owner would type it."""
    assert team.dockerfile and team.context
    head = ["docker", "buildx", "build", "--load", "--progress", "plain"] if builder == BUILDX \
        else ["podman", "build", "--layers", *PODMAN_ULIMITS]
    cmd = [*head, "--file", team.dockerfile, "--tag", tag]
    for key, value in labels.items():
        cmd += ["--label", f"{key}={value}"]
    for key, value in team.build_args:
        cmd += ["--build-arg", f"{key}={value}"]
    if team.target:
        cmd += ["--target", team.target]
    if team.platform:
        cmd += ["--platform", team.platform]
    if team.network != NETWORK_DEFAULT:
        cmd += ["--network", team.network]
    for s in team.secrets:
        cmd += ["--secret", f"id={s.id},env={s.env}" if s.env else f"id={s.id},src={s.file}"]
    return [*cmd, team.context]
