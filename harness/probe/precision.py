"""Float32 matmul precision: read every flag that decides it, and force IEEE or TF32 around a GEMM.

An "fp32" GEMM faster than the FP32 peak means TF32 was on (facts/gpu-specs.md). The settings are
forced through the legacy API (`allow_tf32`, `set_float32_matmul_precision`), which every torch since
1.12 accepts; torch 2.9+ raises when its new `fp32_precision` API and the legacy one are mixed, so
each read is guarded. `TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1` is read once by torch at start-up and
forces TF32 in cuBLAS whatever the flags say: it can be recorded, not undone.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from harness.probe.devices import torch_module
from harness.schema.probe_document import PrecisionFlags

OVERRIDE_ENV = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"
MODES = {"ieee": ("highest", False), "tf32": ("high", True)}


def _guarded(read: Any) -> Any:
    try:
        return read()
    except Exception as exc:  # torch raises RuntimeError on mixed legacy/new API use
        return f"unreadable: {str(exc).splitlines()[0][:120]}"


def tf32_override() -> bool:
    """True when the environment forces TF32 in cuBLAS (torch reads this once, at start-up)."""
    return os.environ.get(OVERRIDE_ENV, "").strip() in ("1", "true", "TRUE", "True", "ON", "on")


def read_precision() -> PrecisionFlags:
    """Every flag that decides how a float32 matmul runs, as torch reports it now."""
    torch = torch_module()
    matmul = torch.backends.cuda.matmul
    return {
        "allow_tf32_cublas": _guarded(lambda: bool(matmul.allow_tf32)),
        "float32_matmul_precision": _guarded(torch.get_float32_matmul_precision),
        "cuda_matmul_fp32_precision": _guarded(lambda: str(matmul.fp32_precision)),
        "cudnn_allow_tf32": _guarded(lambda: bool(torch.backends.cudnn.allow_tf32)),
        OVERRIDE_ENV: os.environ.get(OVERRIDE_ENV),
    }


@contextlib.contextmanager
def forced(mode: str) -> Iterator[PrecisionFlags]:
    """Run the body with float32 matmuls in `mode` ('ieee' or 'tf32'); yields the flags in force."""
    torch = torch_module()
    if mode not in MODES:
        raise ValueError(f"unknown precision mode {mode!r}; expected one of {', '.join(MODES)}")
    precision, allow = MODES[mode]
    saved = _guarded(torch.get_float32_matmul_precision)
    saved_allow = _guarded(lambda: bool(torch.backends.cuda.matmul.allow_tf32))
    torch.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = allow
    try:
        yield read_precision()
    finally:
        if isinstance(saved, str) and not saved.startswith("unreadable") and isinstance(saved_allow, bool):
            torch.set_float32_matmul_precision(saved)
            torch.backends.cuda.matmul.allow_tf32 = saved_allow
