"""The podman tier: every test here is marked `podman`, needs podman and the Docker engine its images come from.

With CI=true a missing podman FAILS the tier (./go installs it): a CI run that quietly skipped the second
engine would prove nothing. Anywhere else the tier skips and says how to get podman.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.engines.podman.engine import PodmanEngine
from refenv.errors import EngineUnavailable
from tests.conftest import in_ci

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/podman as `podman` (`-m podman` selects the tier, the unit tier leaves it out)."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.podman)


@pytest.fixture(scope="session")
def podman() -> PodmanEngine:
    try:
        return PodmanEngine.connect()
    except EngineUnavailable as exc:
        error = exc
    if in_ci():
        pytest.fail(f"CI=true and the podman tier needs podman: {error.message}\n  {error.hint}", pytrace=False)
    pytest.skip(f"{error.message}; {error.hint}; or deselect the tier: -m 'not podman'")
