"""The CPU's description from /proc/cpuinfo text, cache sizes, and the peak estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.probe import cpuinfo

CPUINFO = """\
processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480+
physical id	: 0
core id		: 0
cpu MHz		: 2000.000
flags		: fpu sse2 avx avx2 fma avx512f

processor	: 1
model name	: Intel(R) Xeon(R) Platinum 8480+
physical id	: 0
core id		: 0
cpu MHz		: 2100.000
flags		: fpu sse2 avx avx2 fma avx512f

processor	: 2
model name	: Intel(R) Xeon(R) Platinum 8480+
physical id	: 0
core id		: 1
cpu MHz		: 2200.000
flags		: fpu sse2 avx avx2 fma avx512f
"""


def test_parse_cpuinfo_counts_hyperthreads_once() -> None:
    parsed = cpuinfo.parse_cpuinfo(CPUINFO)
    assert parsed.model == "Intel(R) Xeon(R) Platinum 8480+"
    assert parsed.logical_cpus == 3
    assert parsed.physical_cores == 2
    assert parsed.mhz == 2100.0
    assert "avx512f" in parsed.flags


def test_parse_empty_cpuinfo_is_all_unknown() -> None:
    parsed = cpuinfo.parse_cpuinfo("")
    assert parsed == cpuinfo.CpuInfo(None, None, None, None, None, (), None)


@pytest.mark.parametrize(("text", "nbytes"), [("32768K", 32 * 2**20), ("1M", 2**20), ("512", 512), ("x", None)])
def test_parse_cache_size(text: str, nbytes: int | None) -> None:
    assert cpuinfo.parse_cache_size(text) == nbytes


@pytest.mark.parametrize(("flags", "isa", "per_cycle"), [
    (("sse2", "avx", "avx2", "fma", "avx512f"), "avx512", 64),
    (("sse2", "avx", "avx2", "fma"), "avx2+fma", 32),
    (("sse2", "avx", "avx2"), "avx", 16),
    (("sse2",), "sse2", 8),
])
def test_peak_estimate_by_isa(flags: tuple[str, ...], isa: str, per_cycle: int) -> None:
    est = cpuinfo.estimate_peak_gflops(2, 2500.0, flags)
    assert est is not None
    assert (est.isa, est.sp_flops_per_cycle) == (isa, per_cycle)
    assert est.gflops == pytest.approx(2 * 2.5 * per_cycle)


def test_peak_unknown_without_clock_or_isa() -> None:
    assert cpuinfo.estimate_peak_gflops(4, None, ("avx2", "fma")) is None
    assert cpuinfo.estimate_peak_gflops(4, 3000.0, ("neon",)) is None


def test_llc_is_the_highest_level(tmp_path: Path) -> None:
    for index, (level, size) in enumerate([("1", "48K"), ("1", "32K"), ("2", "1024K"), ("3", "32768K")]):
        d = tmp_path / "cpu0" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        (d / "level").write_text(level + "\n")
        (d / "size").write_text(size + "\n")
    assert cpuinfo.read_llc_bytes(tmp_path) == 32 * 2**20
    assert cpuinfo.read_llc_bytes(tmp_path / "absent") is None


def test_read_cpu_describes_this_machine() -> None:
    cpu = cpuinfo.read_cpu()
    assert cpu.logical_cpus is not None and cpu.logical_cpus >= 1
    assert set(cpu.to_dict()) == {"model", "logical_cpus", "physical_cores", "mhz", "mhz_source", "llc_bytes",
                                  "vector_isa"}
