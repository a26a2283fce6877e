"""The docker tier: every test here is marked `docker`, needs the engine, and shares images built once.

The images are the default matrix's three environments, built (or found unchanged) through refenv's
own builder; the simulated driver is built (or found in its cache) once as well.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from refenv.builder import simdriver
from refenv.builder.driverfiles import SimDriver
from refenv.builder.environment import build_environment
from refenv.engines.docker.sdk import Engine
from refenv.model import matrix_yaml
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Matrix
from tests.docker.installed import Installed, build_wheel, install
from tests.docker.support import DEFAULT_MATRIX

HERE = Path(__file__).resolve().parent
LOG = logging.getLogger(__name__)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/docker as `docker`, so `-m docker` selects the tier and `-m 'not docker'` drops it."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session", autouse=True)
def _engine_answers(engine: Engine) -> None:
    """Every test of this tier needs the engine: fail under CI=true, skip elsewhere (tests/conftest.py)."""


@pytest.fixture(scope="session")
def default_matrix() -> Matrix:
    return matrix_yaml.load(DEFAULT_MATRIX)


@pytest.fixture(scope="session")
def env_builds(engine: Engine, default_matrix: Matrix) -> dict[str, EnvBuild]:
    """The default environments' images, built once per session (or found unchanged), by name."""
    builds: dict[str, EnvBuild] = {}
    for env in default_matrix.environments:
        build = build_environment(engine, default_matrix, env, lambda name, line: LOG.debug("%s: %s", name, line))
        if build.status == "FAILED":
            pytest.fail(f"{env.name} did not build: {build.error}\nlog {build.log}:\n{build.log_tail}", pytrace=False)
        builds[env.name] = build
    return builds


@pytest.fixture(scope="session")
def installed_refenv(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """refenv built as a wheel from this tree and installed into a fresh venv outside the checkout (once)."""
    work = tmp_path_factory.mktemp("installed")
    return install(build_wheel(work), work / "venv")


@pytest.fixture(scope="session")
def sim_driver() -> SimDriver:
    """The simulated driver, built from refenv/images/simdriver (or found in its cache)."""
    return simdriver.build()
