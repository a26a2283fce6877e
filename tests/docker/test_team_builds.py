"""A team's Dockerfile builds as `docker build` builds it (refenv.builder.team), with nothing from the internet:

- FROM an image in a loopback registry that asks for credentials: refused without them (the registry named, with
  `docker login`), built with the user's own Docker config;
- FROM a registry that does not answer: the registry named, with how to build offline;
- RUN pip install from a package index served on 127.0.0.1 during the test (network: host); the same build with
  network: none fails with pip's own words, and says the build has no network;
- RUN --mount=type=cache (BuildKit's syntax), built by Podman's builder (this Docker has no buildx) and loaded
  into Docker under refenv's tag;
- a Dockerfile that fails marks its cells BUILD_FAILED with the builder's last lines, and the rest of the matrix
  runs.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from refenv.builder.baseimage import bootstrap_tag
from refenv.builder.team import team_image
from refenv.engines.docker.sdk import Engine
from refenv.model import matrix_yaml
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Environment, Matrix
from tests.conftest import in_ci
from tests.docker.registry import free_port, running_registry
from tests.docker.support import CU130, DIAGNOSIS_ONLY, cell, run_grid, small_matrix

PACKAGE = "refenv-team-tiny"


def quiet(name: str, line: str) -> None:
    """Build lines go to the build log; the test reads the record."""


def team_env(folder: Path, dockerfile: str, extra: str = "") -> Environment:
    """A dockerfile: environment of a matrix in `folder`, as matrix.yaml would give it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    text = (f"version: 1\nenvironments:\n  team:\n    dockerfile: Dockerfile\n{extra}hosts:\n  none: {{kind: none}}\n"
            "scenarios:\n  gpu: {gpus: all}\n")
    return matrix_yaml.parse(text, str(folder / "matrix.yaml")).environments[0]


@pytest.fixture(scope="module")
def base(env_builds: dict[str, EnvBuild], default_matrix: Matrix) -> str:
    """refenv's bootstrapped base (Debian, python3 and python3-venv, whose ensurepip carries pip): made by the
    environments' builds."""
    return bootstrap_tag(default_matrix.environment(CU130).base.bootstrap)


@contextlib.contextmanager
def built(engine: Engine, env: Environment) -> Iterator[EnvBuild]:
    """The environment's build; its image removed after the block."""
    build = team_image(engine, env, quiet)
    try:
        yield build
    finally:
        if build.tag:
            engine.remove_image(build.tag)


def test_a_registry_that_wants_credentials_gets_the_user_s_own(engine: Engine, base: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with running_registry(tmp_path / "registry") as registry:
        auth = {"username": str(registry.username), "password": str(registry.password)}
        ref = f"{registry.host}/team/base:1"
        engine.tag(base, ref)
        try:
            for line in engine.push(ref, auth):
                assert "error" not in line, line
        finally:
            engine.untag(ref)  # the build must pull it
        env = team_env(tmp_path / "team", f"FROM {ref}\nRUN python3 -c 'print(1)'\n")
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-credentials"))
        refused = team_image(Engine.connect(), env, quiet)
        assert refused.status == "FAILED" and refused.error is not None
        assert f"the registry {registry.host} refused the pull without valid credentials: docker login " \
               f"{registry.host}" in refused.error
        config = tmp_path / "docker-config"
        config.mkdir()
        token = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
        (config / "config.json").write_text(json.dumps({"auths": {registry.host: {"auth": token}}}))
        monkeypatch.setenv("DOCKER_CONFIG", str(config))
        with built(Engine.connect(), env) as build:
            assert build.status == "BUILT", (build.error, build.log_tail)
        engine.untag(ref)


def test_a_registry_that_does_not_answer_is_named_with_how_to_build_offline(engine: Engine, tmp_path: Path) -> None:
    host = f"127.0.0.1:{free_port()}"
    build = team_image(engine, team_env(tmp_path, f"FROM {host}/team/base:1\n"), quiet)
    assert build.status == "FAILED" and build.error is not None
    assert f"the registry {host} cannot be reached" in build.error and "build offline" in build.error
    assert "connection refused" in (build.log_tail or build.error)


def tiny_wheel(folder: Path) -> None:
    """A package index with one pure-Python wheel, laid out as PEP 503's simple API."""
    name = PACKAGE.replace("-", "_")
    wheel = folder / "files" / f"{name}-1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{name}/__init__.py", "STAGE = 'from the team index'\n")
        z.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n")
        z.writestr(f"{name}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: refenv-test\nRoot-Is-Purelib: true\n"
                   "Tag: py3-none-any\n")
        z.writestr(f"{name}-1.0.dist-info/RECORD", "")
    page = folder / "simple" / PACKAGE
    page.mkdir(parents=True)
    (page / "index.html").write_text(f'<a href="../../files/{wheel.name}">{wheel.name}</a>\n')


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A package index on 127.0.0.1 for the length of the module's tests."""
    root = tmp_path_factory.mktemp("index")
    tiny_wheel(root)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def pip_dockerfile(base: str, index: str) -> str:
    return (f"FROM {base}\nRUN python3 -m venv /opt/team && /opt/team/bin/pip install --no-cache-dir --retries 0 "
            f"--timeout 5 --index-url {index} {PACKAGE} && /opt/team/bin/python -c 'import refenv_team_tiny'\n")


def test_pip_install_from_an_index_on_this_machine_with_network_host(engine: Engine, base: str, index: str,
                                                                     tmp_path: Path) -> None:
    env = team_env(tmp_path, pip_dockerfile(base, index), "    network: host\n")
    with built(engine, env) as build:
        assert build.status == "BUILT", (build.error, build.log_tail)
        log = Path(str(build.log)).read_text(encoding="utf-8")
        assert "Successfully installed refenv-team-tiny-1.0" in log and "network host" in log


def test_a_hermetic_build_that_needs_the_index_fails_with_pip_s_words(engine: Engine, base: str, index: str,
                                                                      tmp_path: Path) -> None:
    env = team_env(tmp_path, pip_dockerfile(base, index), "    network: none\n")
    build = team_image(engine, env, quiet)
    assert build.status == "FAILED" and build.error is not None and build.log_tail is not None
    assert "ERROR: Could not find a version that satisfies the requirement refenv-team-tiny" in build.log_tail
    assert "the build has no network (network: none)" in build.error


def test_a_cache_mount_builds_through_podman_and_lands_in_docker(engine: Engine, base: str, tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        message = "the BuildKit build needs Podman's builder (apt-get install podman; ./go installs it)"
        if in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    env = team_env(tmp_path, f"FROM {base}\nRUN --mount=type=cache,target=/var/cache/team "
                             "echo kept > /var/cache/team/stamp && cat /var/cache/team/stamp\n"
                             "ENV TEAM_STAGE=ci\n")
    with built(engine, env) as build:
        assert build.status == "BUILT", (build.error, build.log_tail)
        log = Path(str(build.log)).read_text(encoding="utf-8")
        assert "podman builder, for line 2: RUN --mount=type=cache,target=/var/cache/team" in log
        assert build.tag is not None and engine.image_id(build.tag) is not None
        labels = engine.image_labels(build.tag) or {}
        assert labels.get("refenv.environment") == "team" and labels.get("refenv.managed") == "true"


def test_a_failing_dockerfile_fails_its_cells_with_the_builder_s_lines_and_the_rest_runs(
        engine: Engine, env_builds: dict[str, EnvBuild], base: str, tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "Dockerfile").write_text(f"FROM {base}\nRUN echo team-step-failed && exit 7\n")
    m = small_matrix([CU130], ["none"], {"gpu": {"gpus": "all"}}, run=DIAGNOSIS_ONLY,
                     extra_envs={"broken": {"dockerfile": str(tmp_path / "broken" / "Dockerfile"),
                                            "allow_outside": True}})
    outcome = run_grid(m, tmp_path / "results", use_cache=True)
    broken = cell(outcome, "broken", "none", "gpu")
    assert broken["status"] == "BUILD_FAILED" and "returned a non-zero code: 7" in broken["reason"]
    record = outcome.document.environment("broken")
    assert record is not None and record.build.log_tail is not None and "team-step-failed" in record.build.log_tail
    assert cell(outcome, CU130, "none", "gpu")["status"] == "PASS"
