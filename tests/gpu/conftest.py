"""The gpu tier: every test here is marked `gpu`, and it FAILS (never skips) without a usable GPU.

The CPU-only tiers say plainly what they did not prove; this tier exists to prove the GPU path, so a
run that selects it on a machine where torch sees no GPU must not pass quietly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/gpu as `gpu`, so `-m "not gpu"` deselects the whole tier."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session", autouse=True)
def require_cuda() -> None:
    """Fail the tier when torch cannot use a GPU here."""
    try:
        import torch
    except Exception as exc:
        pytest.fail(f"the gpu tier needs torch with CUDA, and torch is not importable: {exc}", pytrace=False)
    if not torch.cuda.is_available():
        pytest.fail(f"the gpu tier needs a usable GPU, and torch.cuda.is_available() is False (torch "
                    f"{torch.__version__}, CUDA {torch.version.cuda}); run `python -m harness diagnose` to see "
                    "why, or deselect the tier with -m 'not gpu'", pytrace=False)
