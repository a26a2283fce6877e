"""The breadth tier: every test here is marked `breadth` and needs the Docker engine (it fails under CI=true
when none answers, skips elsewhere). `invoke test --tier breadth` runs it alone; `invoke test` runs it after
the docker tier. Each environment is built, run and its images removed before the next (breadth.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.engines.docker.sdk import Engine

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/breadth as `breadth`, so `-m breadth` selects the tier."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.breadth)


@pytest.fixture(scope="session", autouse=True)
def _engine_answers(engine: Engine) -> None:
    """Every test of this tier needs the engine: fail under CI=true, skip elsewhere (tests/conftest.py)."""
