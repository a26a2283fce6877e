"""What every tier shares: a cache root of the session's own, and the Docker engine, which the docker tier
needs and CI must provide.

With CI=true a missing engine FAILS the tests that need it, with the engine's own message: a CI run
that quietly skipped its containers would prove nothing. Anywhere else they skip and say how to start one.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from refenv.engines.docker.sdk import Engine


SESSION_CACHE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """REFENV_CACHE at an empty folder of this session's, so no test reads cells, image facts, measurements,
    run records, linker caches or a simulated driver that an earlier run left (the child processes a test
    starts inherit it). The wheelhouse and the simulated driver's build root stay the user's: they are read
    through, every wheel checked against its lock, and filled by the paths the tests exercise
    (tests/docker/test_fill_caches.py fills each from empty)."""
    from refenv import paths

    shared_wheels, shared_build_root = paths.wheelhouse(), paths.build_root()
    own = Path(tempfile.mkdtemp(prefix="refenv-test-cache-"))
    own.chmod(0o755)  # as ~/.cache/refenv is: containers of other users read the simulated driver built here
    os.environ["REFENV_CACHE"] = str(own)
    os.environ["REFENV_WHEELHOUSE"] = str(shared_wheels)
    os.environ["REFENV_BUILDROOT"] = str(shared_build_root)
    config.stash[SESSION_CACHE] = own
    # The tests press Ctrl-C on the runs they start, as a user would. A process started in the background of
    # a non-interactive shell (CI scripts often start the tests so) inherits SIGINT ignored, every child after
    # it too, and Python then never turns Ctrl-C into KeyboardInterrupt. Python's own handler here means the
    # children start with the default disposition, as from a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(SESSION_CACHE, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


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
