"""What every tier shares: the Docker engine, which the docker tier needs and CI must provide.

With CI=true a missing engine FAILS the tests that need it, with the engine's own message: a CI run
that quietly skipped its containers would prove nothing. Anywhere else they skip and say how to start one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from refenv.engines.docker.sdk import Engine


def in_ci() -> bool:
    """CI=true (as GitHub Actions, GitLab and most runners set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def engine() -> Engine:
    """A connection to the Docker engine; fails under CI=true, skips elsewhere, when none answers."""
    from refenv.engines.docker.sdk import Engine
    from refenv.errors import EngineUnavailable

    try:
        return Engine.connect()
    except EngineUnavailable as exc:
        error = exc
    if in_ci():
        pytest.fail(f"CI=true and the docker tier needs a Docker engine: {error.message}\n  {error.hint}",
                    pytrace=False)
    pytest.skip(f"{error.message}; {error.hint}; or deselect the tier: -m 'not docker'")


# Property-based tests: modest example counts keep the unit tier fast on a shared machine; the
# deadline is off because a busy machine makes timing flaky (the linear-time tests measure time themselves).
settings.register_profile("refenv", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A sweep before a release: HYPOTHESIS_PROFILE=sweep runs every property far longer than CI does.
settings.register_profile("sweep", max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "refenv"))
