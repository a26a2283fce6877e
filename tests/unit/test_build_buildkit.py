"""Which builder a team's Dockerfile goes to, its command line, and what a build that could not reach a registry
or an index is told (refenv.builder.buildkit, build_failures; the matrix keys that feed them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.builder import build_failures, buildkit
from refenv.errors import BuildError, MatrixError
from refenv.model import matrix_yaml
from refenv.model.matrix import DOCKERFILE, Secret, TeamImage

PLAIN = "FROM python:3.12-slim AS base\nRUN pip install numpy\nCOPY --chown=1000 . /app\nENV A=1\n"
BUILDKIT = """# syntax=docker/dockerfile:1.7
ARG BASE=python:3.12-slim
FROM ${BASE} AS build
RUN --mount=type=cache,target=/root/.cache/pip pip install numpy
RUN <<EOT
echo hi
EOT
COPY --link --chmod=755 run.sh /run.sh
FROM build AS final
FROM scratch
"""


def team(**kw: object) -> TeamImage:
    return TeamImage(DOCKERFILE, dockerfile="/p/Dockerfile", context="/p", **kw)  # type: ignore[arg-type]


def test_the_constructs_only_buildkit_builds_are_named_by_line() -> None:
    assert buildkit.buildkit_uses(PLAIN, "Dockerfile") == []
    assert buildkit.buildkit_uses(BUILDKIT, "Dockerfile") == [
        "line 1: the syntax directive docker/dockerfile:1.7",
        "line 4: RUN --mount=type=cache,target=/root/.cache/pip",
        "line 5: a heredoc (RUN <<EOT)",
        "line 8: COPY --link", "line 8: COPY --chmod=755"]


def test_a_dockerfile_that_does_not_parse_says_so_with_the_parser_s_words() -> None:
    with pytest.raises(BuildError, match="Dockerfile does not parse: unterminated heredoc"):
        buildkit.buildkit_uses("FROM x\nRUN <<EOT\n", "Dockerfile")


def test_base_images_substitute_arguments_and_leave_stages_and_scratch_out() -> None:
    assert buildkit.base_images(BUILDKIT, "D", {}) == ["python:3.12-slim"]
    assert buildkit.base_images(BUILDKIT, "D", {"BASE": "127.0.0.1:5000/team/base:1"}) == ["127.0.0.1:5000/team/base:1"]


def test_the_route_is_classic_buildx_or_podman_or_an_error_naming_the_missing_component() -> None:
    assert buildkit.route([], team(), True, True, "D") == buildkit.Route(buildkit.CLASSIC)
    uses = ["line 4: RUN --mount=type=cache"]
    assert buildkit.route(uses, team(), True, True, "D").builder == buildkit.BUILDX
    assert buildkit.route(uses, team(), False, True, "D").builder == buildkit.PODMAN
    secret = team(secrets=(Secret("tok", env="TOK"),))
    assert buildkit.route([], secret, False, True, "D") == buildkit.Route(buildkit.PODMAN, ("build secrets (secrets:)",))
    with pytest.raises(BuildError, match="buildx component is missing") as caught:
        buildkit.route(uses, team(), False, False, "D")
    assert caught.value.hint is not None and "docker-buildx-plugin" in caught.value.hint and "podman" in caught.value.hint


def test_the_command_is_the_one_its_owner_would_type() -> None:
    t = team(build_args=(("CUDA", "12.8"),), target="final", platform="linux/amd64", network="host",
             secrets=(Secret("tok", env="TOK"), Secret("netrc", file="/home/u/.netrc")))
    cmd = buildkit.cli_command(buildkit.PODMAN, t, "refenv/team-x:1", {"refenv.managed": "true"})
    assert cmd[:2] == ["podman", "build"] and cmd[-1] == "/p"
    joined = " ".join(cmd)
    for part in ("--file /p/Dockerfile", "--tag refenv/team-x:1", "--label refenv.managed=true",
                 "--build-arg CUDA=12.8", "--target final", "--platform linux/amd64", "--network host",
                 "--secret id=tok,env=TOK", "--secret id=netrc,src=/home/u/.netrc", "--ulimit nofile=1024:20000"):
        assert part in joined
    buildx = buildkit.cli_command(buildkit.BUILDX, team(), "t:1", {})
    assert buildx[:4] == ["docker", "buildx", "build", "--load"] and "--network" not in buildx


@pytest.mark.parametrize(("tail", "network", "says"), [
    ("Step 1/3 : FROM 127.0.0.1:5123/team/base:1\nGet \"http://127.0.0.1:5123/v2/team/base/manifests/1\": no basic "
     "auth credentials", "default",
     "the registry 127.0.0.1:5123 refused the pull without valid credentials: docker login 127.0.0.1:5123"),
    ("pull access denied for team/base, repository does not exist or may require 'docker login': denied: requested "
     "access to the resource is denied", "default", "the registry registry-1.docker.io (Docker Hub) refused"),
    ("Error: creating build container: initializing source docker://127.0.0.1:9/team/base:1: pinging container "
     "registry 127.0.0.1:9: Get \"https://127.0.0.1:9/v2/\": dial tcp 127.0.0.1:9: connect: connection refused",
     "default", "the registry 127.0.0.1:9 cannot be reached from this machine"),
    ("Looking in indexes: http://127.0.0.1:8123/simple\nWARNING: Retrying ... NewConnectionError: Failed to establish a "
     "new connection: [Errno 111] Connection refused')': /simple/tinypkg/\nERROR: Could not find a version that "
     "satisfies the requirement tinypkg", "default", "http://127.0.0.1:8123/simple cannot be reached from the build"),
    ("pip install --index-url http://127.0.0.1:8123/simple tinypkg\nERROR: Could not find a version that satisfies the "
     "requirement tinypkg (from versions: none)\n[Errno -3] Temporary failure in name resolution", "none",
     "the build has no network (network: none)"),
])
def test_a_registry_or_index_out_of_reach_is_named_with_what_to_do(tail: str, network: str, says: str) -> None:
    hint = build_failures.explain(tail, network)
    assert hint is not None and says in hint
    assert "offline" in hint or "network" in hint


def test_other_failures_get_no_such_hint() -> None:
    assert build_failures.explain("/bin/sh: 1: false: not found\nThe command '/bin/sh -c false' returned a non-zero "
                                  "code: 127") is None


def test_the_matrix_reads_the_build_s_options_and_refuses_bad_ones(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "token").write_text("t")

    def env(extra: str) -> str:
        return (f"version: 1\nenvironments:\n  team:\n    dockerfile: Dockerfile\n{extra}hosts:\n  none: {{kind: none}}\n"
                "scenarios:\n  gpu: {gpus: all}\n")

    m = matrix_yaml.parse(env("    target: final\n    platform: linux/arm64/v8\n    network: none\n"
                              "    secrets: {tok: {env: PIP_TOKEN}, netrc: {file: token}}\n"), str(tmp_path / "m.yaml"))
    t = m.environments[0].team
    assert t is not None and (t.target, t.platform, t.network) == ("final", "linux/arm64/v8", "none")
    assert t.secrets == (Secret("tok", env="PIP_TOKEN"), Secret("netrc", file=str(tmp_path / "token")))
    plain = matrix_yaml.parse(env(""), str(tmp_path / "m.yaml")).environments[0].team
    assert plain is not None and plain.network == "default"
    for bad, field in [("    network: bridge\n", "network"), ("    platform: amd64\n", "platform"),
                       ("    secrets: {tok: {env: A, file: token}}\n", "secrets.tok"),
                       ("    secrets: {tok: {file: missing}}\n", "secrets.tok.file")]:
        with pytest.raises(MatrixError, match=rf"environments\.team\.{field}"):
            matrix_yaml.parse(env(bad), str(tmp_path / "m.yaml"))
    with pytest.raises(MatrixError, match="only a dockerfile: environment is built"):
        matrix_yaml.parse(env("").replace("dockerfile: Dockerfile", "image: python:3.12\n    network: host"),
                          str(tmp_path / "m.yaml"))
