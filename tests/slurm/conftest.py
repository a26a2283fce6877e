"""The slurm tier: a real Slurm cluster on this machine (`.ci/slurm-up`), the Docker engine behind it.

Every test here is marked `slurm`. With CI=true a cluster that does not answer FAILS the tier (a CI run
that quietly skipped it would prove nothing); elsewhere the tests skip and say how to start one.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from refenv.builder.environment import build_environment
from refenv.engines.docker.sdk import Engine
from refenv.engines.slurm import client
from refenv.model.builds import EnvBuild
from tests.conftest import in_ci
from tests.docker.support import CPU, DEFAULT_MATRIX

HERE = Path(__file__).resolve().parent
LOG = logging.getLogger(__name__)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session", autouse=True)
def cluster(engine: Engine) -> None:
    """A controller that answers (`scontrol ping`); `.ci/slurm-up` starts one."""
    if client.available():
        return
    message = "no Slurm controller answers (scontrol ping); start one with .ci/slurm-up"
    if in_ci():
        pytest.fail(f"CI=true and the slurm tier needs a cluster: {message}", pytrace=False)
    pytest.skip(f"{message}; or deselect the tier: -m 'not slurm'")


@pytest.fixture(scope="session")
def cpu_build(engine: Engine) -> EnvBuild:
    """The default matrix's CPU environment, built once (or found unchanged)."""
    from refenv.model import matrix_yaml

    m = matrix_yaml.load(DEFAULT_MATRIX)
    build = build_environment(engine, m, m.environment(CPU), lambda name, line: LOG.debug("%s: %s", name, line))
    if build.status == "FAILED" or build.tag is None:
        pytest.fail(f"{CPU} did not build: {build.error}", pytrace=False)
    return build
