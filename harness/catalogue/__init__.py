"""The failure catalogue: every message the GPU stack prints when CUDA does not work, as checked-in data.

`data/failures.json` holds one row per message (torch per release, the CUDA driver and runtime, NVML and
nvidia-smi, the container toolkit and Docker, the kernel log), each with its layer, verdict, meaning,
patterns, source and structured remedy. Everything that recognises or prints such a message asks here.
"""

from harness.catalogue.entries import Entry, Hit
from harness.catalogue.load import CatalogueError, entries, torch_init_prefix
from harness.catalogue.lookup import (
    by_cuda_error,
    by_nvml_return,
    code_of,
    cuda_error_names,
    entry,
    nvml_code_of,
    nvml_error_texts,
)
from harness.catalogue.scan import find, scan, scan_text
from harness.catalogue.wording import render, torch_message, torch_text, torch_words_for_cuda_error

__all__ = [
    "CatalogueError",
    "Entry",
    "Hit",
    "by_cuda_error",
    "by_nvml_return",
    "code_of",
    "cuda_error_names",
    "entries",
    "entry",
    "find",
    "nvml_code_of",
    "nvml_error_texts",
    "render",
    "scan",
    "scan_text",
    "torch_init_prefix",
    "torch_message",
    "torch_text",
    "torch_words_for_cuda_error",
]
