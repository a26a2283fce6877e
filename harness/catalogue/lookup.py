"""Look entries up: by id, by CUDA error code, by NVML return code, by what torch said."""

from __future__ import annotations

from functools import lru_cache

from harness.catalogue.entries import Entry
from harness.catalogue.load import entries


@lru_cache(maxsize=1)
def _by_id() -> dict[str, Entry]:
    return {e.id: e for e in entries()}


def entry(ident: str) -> Entry:
    """The entry with this id; KeyError naming it when there is none."""
    try:
        return _by_id()[ident]
    except KeyError:
        raise KeyError(f"no failure catalogue entry {ident!r}") from None


def by_cuda_error(code: int) -> Entry | None:
    """The row of a CUDA error code (CUresult first, then cudaError_t), or None."""
    for api in ("cuda_driver", "cuda_runtime"):
        for e in entries():
            if e.code is not None and e.code.api == api and e.code.value == code and e.code.name:
                return e
    return None


def by_nvml_return(code: int) -> Entry | None:
    """The row of an nvmlReturn_t code, or None."""
    return next((e for e in entries() if e.code is not None and e.code.api == "nvml" and e.code.value == code), None)


def by_code_name(name: str) -> Entry | None:
    """The row whose error code has this name ('CUDA_ERROR_NO_DEVICE', 'cudaErrorNoKernelImageForDevice')."""
    return next((e for e in entries() if e.code is not None and e.code.name == name), None)


def nvml_code_of(reason: str) -> int | None:
    """The nvmlReturn_t code of an NVML error string ('Driver Not Loaded' -> 9), case-insensitively."""
    low = reason.strip().lower()
    for e in entries():
        if e.code is not None and e.code.api == "nvml" and e.code.text.lower() == low:
            return e.code.value
    return None


def cuda_error_names() -> dict[int, str]:
    """CUresult code -> name, for every CUDA driver error the catalogue knows."""
    return {e.code.value: e.code.name for e in entries() if e.code and e.code.api == "cuda_driver" and e.code.name}


def nvml_error_texts() -> dict[int, str]:
    """nvmlReturn_t code -> nvmlErrorString text."""
    return {e.code.value: e.code.text for e in entries() if e.code and e.code.api == "nvml"}


def code_of(ident: str) -> int:
    """The error code of an entry that has one (e.g. 'nvml.library_not_found' -> 12)."""
    e = entry(ident)
    if e.code is None:
        raise KeyError(f"failure catalogue entry {ident!r} has no error code")
    return e.code.value
