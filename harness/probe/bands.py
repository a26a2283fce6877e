"""Pass / warn / fail bands over percent of peak, each drawn from what well-tuned tools reach.

Statuses are DCGM's (harness/schema/outcomes.py): PASS, WARN, FAIL, and SKIP for a waived measurement
(with its reason). A figure with no spec to compare with is PASS with no percent and says it was not
judged. Band sources: facts/gpu-specs.md "What well-tuned measurements reach".
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema.outcomes import FAIL, PASS, SKIP, WARN
from harness.schema.outcomes import worst as worst_status
from harness.schema.probe_document import Band

__all__ = ["BANDS", "FAIL", "PASS", "SKIP", "WARN", "Band", "Judgement", "judge", "judge_fp32", "worst_status"]

# An fp32 GEMM cannot beat the FP32 peak unless TF32 tensor cores did the work; the 5% slack
# allows factory-overclocked boards (partner RTX cards ship a few percent above reference boost).
FP32_ABOVE_PEAK_RATIO = 1.05


@dataclass(frozen=True)
class Judgement:
    """A status, the percent of peak it rests on (None when not judged), and why."""

    status: str
    percent_of_peak: float | None
    reason: str
    band: Band | None = None


BANDS = {
    "memory": Band(75.0, 50.0, "HBM copy/triad reach 79-90% of spec in BabelStream-style kernels (A100 80GB "
                   "copy 1.61 TB/s, H100 SXM 2.90, H200 4.01; a torch copy on the H200 here ~4.3 TB/s)"),
    "gemm.bf16": Band(70.0, 45.0, "dense bf16 GEMMs reach ~80% of spec on Hopper (H100 SXM 794 TFLOP/s by a "
                      "shape search; H200 here 769-798) and 81-87% on A100"),
    "gemm.fp16": Band(70.0, 45.0, "as bf16: the same tensor cores and peak (~80% of spec on Hopper, 81-87% on A100)"),
    "gemm.fp8": Band(55.0, 35.0, "fp8 GEMMs reach 65-78% of spec on Hopper"),
    "gemm.tf32": Band(55.0, 35.0, "no published tf32 figure in the facts: set below the bf16 band, on the same "
                      "tensor cores"),
    "gemm.fp32": Band(55.0, 35.0, "no published IEEE fp32 GEMM figure in the facts: set below the tensor-core "
                      "bands; a figure above peak is flagged instead (TF32 was on)"),
    "transfer.pinned": Band(70.0, 40.0, "pinned host<->device copies reach ~80-85% of the link per direction "
                            "(PCIe4 x16 ~25 GB/s, PCIe5 x16 ~51-57); wrong NUMA placement costs 3-5x"),
    "cpu.gemm.fp32": Band(40.0, 15.0, "CPU peak is an estimate from the nominal clock in /proc/cpuinfo "
                          "(boost clocks run higher), so the band is wide"),
}


def judge(measured: float, peak: float | None, band: Band | None, what: str = "spec") -> Judgement:
    """PASS / WARN / FAIL of a figure against `peak` by `band`; PASS-not-judged when either is missing."""
    if peak is None:
        return Judgement(PASS, None, f"no {what} figure for this device: measured, not judged")
    percent = round(100.0 * measured / peak, 1)
    if band is None:
        return Judgement(PASS, percent, f"{percent}% of {what} {peak:g}; no reference band: not judged")
    if percent >= band.pass_percent:
        status = PASS
    elif percent >= band.warn_percent:
        status = WARN
    else:
        status = FAIL
    reason = (f"{percent}% of {what} {peak:g} (PASS >= {band.pass_percent:g}%, "
              f"WARN >= {band.warn_percent:g}%)")
    return Judgement(status, percent, reason, band)


def fp32_above_peak(measured_tflops: float, fp32_peak_tflops: float | None) -> bool:
    """True when an 'fp32' GEMM ran faster than the FP32 units can: TF32 was on."""
    return fp32_peak_tflops is not None and measured_tflops > FP32_ABOVE_PEAK_RATIO * fp32_peak_tflops


def judge_fp32(measured_tflops: float, peak: float | None, tf32_override: bool) -> tuple[Judgement, bool]:
    """The fp32 GEMM's judgement, WARN with the cause when it beat the FP32 peak; and the flag."""
    if fp32_above_peak(measured_tflops, peak):
        assert peak is not None
        why = ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32 in cuBLAS" if tf32_override
               else "TF32 was on despite the forced precision")
        percent = round(100.0 * measured_tflops / peak, 1)
        return Judgement(WARN, percent, f"{percent}% of the FP32 peak {peak:g}: above peak, so {why}",
                         BANDS["gemm.fp32"]), True
    return judge(measured_tflops, peak, BANDS["gemm.fp32"]), False

