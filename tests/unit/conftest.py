"""Fixtures the unit tier shares (the modules that use one name it; nothing is imported from a test module)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from refenv.builder import simdriver


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache of its own for each test, sharing the compiled simulated driver (built once, for real).

    The modules that run through the fake engine use it for every test (`pytestmark`), so they never
    share cached cells.
    """
    driver = simdriver.build()
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("REFENV_CACHE", str(root))
    os.symlink(driver.root.parent, root / "simdriver")
    yield root
