"""Random probe inputs: randn, never zeros (easy data draws less power and flatters results).

On a GPU randn fills any size in milliseconds. On the CPU randn runs at ~60 M values/s per core,
too slow for 128 MiB STREAM arrays in a one-second suite, so those (and the CPU roofline sweep's
64 MiB weight) repeat one randn block: bandwidth does not depend on the values. The GEMM probes'
operands are randn throughout.
"""

from __future__ import annotations

from typing import Any

CPU_BLOCK_NUMEL = 2**17  # 1 MiB of fp64


def stream_array(torch: Any, numel: int, dtype: Any, device: str) -> Any:
    """A 1-D array of standard-normal values for bandwidth probes."""
    if device != "cpu" or numel <= 4 * CPU_BLOCK_NUMEL:
        return torch.randn(numel, dtype=dtype, device=device)
    out = torch.empty(numel, dtype=dtype)
    block = torch.randn(CPU_BLOCK_NUMEL, dtype=dtype)
    whole = numel // CPU_BLOCK_NUMEL * CPU_BLOCK_NUMEL
    out[:whole].view(-1, CPU_BLOCK_NUMEL).copy_(block)
    out[whole:].copy_(block[: numel - whole])
    return out


def describe(device: str, numel: int) -> str:
    """How a stream array of this size was filled, for the document."""
    if device != "cpu" or numel <= 4 * CPU_BLOCK_NUMEL:
        return "randn"
    return f"randn, one {CPU_BLOCK_NUMEL}-element block repeated"
