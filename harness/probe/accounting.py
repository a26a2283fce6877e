"""How much work each probe kernel does: bytes moved and FLOPs, counted by stated conventions.

Conventions follow the probe facts (nvbandwidth, STREAM, BabelStream): a copy counts what it reads
plus what it writes (2x the buffer), a triad three arrays, a GEMM 2*M*N*K FLOPs. Units: GB/s is
1e9 bytes per second, TFLOP/s is 1e12 FLOPs per second.
"""

from __future__ import annotations

# Bytes per element of each probed dtype. fp8 GEMMs write bf16 (torch._scaled_mm's out_dtype here).
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
GEMM_OUT_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 2}

COPY_CONVENTION = "read + write counted: 2 x buffer bytes per copy"
TRIAD_CONVENTION = "a = b + s*c: 3 x array bytes (two reads, one write)"
TRANSFER_CONVENTION = "bytes copied once across the link"
GEMM_CONVENTION = "2*M*N*K FLOPs per GEMM"


def element_bytes(dtype: str) -> int:
    """Bytes per element of a probe dtype name ('bf16' -> 2)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPE_BYTES)}") from None


def copy_bytes(numel: int, elem_bytes: int) -> int:
    """Bytes moved by one copy of `numel` elements (read + write)."""
    return 2 * numel * elem_bytes


def triad_bytes(numel: int, elem_bytes: int) -> int:
    """Bytes moved by one STREAM triad over arrays of `numel` elements."""
    return 3 * numel * elem_bytes


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of an (M x K) @ (K x N) product: a multiply and an add per term."""
    return 2 * m * n * k


def gemm_bytes(m: int, n: int, k: int, dtype: str) -> int:
    """The least traffic of a GEMM: each input read once, the output written once."""
    return (m * k + k * n) * element_bytes(dtype) + m * n * GEMM_OUT_BYTES.get(dtype, element_bytes(dtype))


def gemm_intensity(m: int, n: int, k: int, dtype: str) -> float:
    """FLOP per byte of a GEMM at its least traffic (a bf16 n^3 GEMM: n/3)."""
    return gemm_flops(m, n, k) / gemm_bytes(m, n, k, dtype)


def fused_fma_flops(numel: int, steps: int) -> int:
    """FLOPs of x = x*a + b applied `steps` times in one fused kernel (a multiply and an add each)."""
    return 2 * steps * numel


def fused_fma_bytes(numel: int, elem_bytes: int) -> int:
    """Bytes of the fused kernel: x read once and written once, whatever the step count."""
    return 2 * numel * elem_bytes


def gbps(nbytes: float, seconds: float) -> float:
    """GB/s (1e9 B/s) of `nbytes` moved in `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return nbytes / seconds / 1e9


def tflops(flops: float, seconds: float) -> float:
    """TFLOP/s (1e12 FLOP/s) of `flops` done in `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return flops / seconds / 1e12


def ridge_point(peak_tflops: float, bandwidth_gbps: float) -> float:
    """FLOP per byte where the compute roof meets the memory roof (peak / bandwidth)."""
    if bandwidth_gbps <= 0 or peak_tflops <= 0:
        raise ValueError("peak and bandwidth must be positive")
    return peak_tflops * 1e12 / (bandwidth_gbps * 1e9)


def percent_of(measured: float, peak: float) -> float:
    """Measured as a percentage of peak."""
    if peak <= 0:
        raise ValueError(f"peak must be positive, got {peak}")
    return 100.0 * measured / peak
