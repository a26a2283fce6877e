"""Forcing float32 matmul precision (real torch on the CPU: the flags are process-wide)."""

from __future__ import annotations

import pytest

from harness.probe import precision


def test_forced_modes_set_and_restore_the_flags() -> None:
    import torch

    before = torch.get_float32_matmul_precision()
    with precision.forced("tf32") as flags:
        assert flags["allow_tf32_cublas"] is True
        assert flags["float32_matmul_precision"] == "high"
    with precision.forced("ieee") as flags:
        assert flags["allow_tf32_cublas"] is False
        assert flags["float32_matmul_precision"] == "highest"
    assert torch.get_float32_matmul_precision() == before


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="fp64"), precision.forced("fp64"):
        pass


def test_override_env_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(precision.OVERRIDE_ENV, "1")
    assert precision.tf32_override()
    monkeypatch.setenv(precision.OVERRIDE_ENV, "0")
    assert not precision.tf32_override()
    monkeypatch.delenv(precision.OVERRIDE_ENV)
    assert not precision.tf32_override()
