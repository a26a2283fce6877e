"""The CPU share a probe was given: cgroup quota (v2 and v1), cpuset, affinity; and the peak it is judged by."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.probe import cpuinfo, cpushare
from harness.probe.cpushare import CpuShare


@pytest.mark.parametrize(("text", "cpus"), [("150000 100000\n", 1.5), ("50000 100000", 0.5), ("max 100000", None),
                                            ("", None), ("x 1", None), ("100 0", None)])
def test_parse_cpu_max(text: str, cpus: float | None) -> None:
    assert cpushare.parse_cpu_max(text) == cpus


def test_parse_cfs_and_cpu_lists() -> None:
    assert cpushare.parse_cfs("200000\n", "100000\n") == 2.0
    assert cpushare.parse_cfs("-1", "100000") is None
    assert cpushare.parse_cpu_list("0-3,8,10-11\n") == 7
    assert cpushare.parse_cpu_list("5") == 1
    assert cpushare.parse_cpu_list("") is None and cpushare.parse_cpu_list("a-b") is None


def test_cgroup_dirs_walk_from_the_process_cgroup_to_the_root(tmp_path: Path) -> None:
    assert cpushare.cgroup_dirs("0::/docker/abc\n", tmp_path) == [tmp_path / "docker" / "abc", tmp_path / "docker",
                                                                   tmp_path]
    assert cpushare.cgroup_dirs("0::/\n", tmp_path) == [tmp_path]
    assert cpushare.cgroup_dirs("", tmp_path) == [tmp_path]


def test_read_share_takes_the_tightest_v2_quota(tmp_path: Path) -> None:
    inner = tmp_path / "docker" / "abc"
    inner.mkdir(parents=True)
    (tmp_path / "docker" / "cpu.max").write_text("100000 100000\n")
    (inner / "cpu.max").write_text("max 100000\n")
    (inner / "cpuset.cpus.effective").write_text("0-1\n")
    proc = tmp_path / "cgroup"
    proc.write_text("0::/docker/abc\n")
    share = cpushare.read_share(tmp_path, proc)
    assert (share.quota_cpus, share.quota_source) == (1.0, str(tmp_path / "docker" / "cpu.max"))
    assert share.cpuset_cpus == 2


def test_read_share_falls_back_to_cgroup_v1(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.effective_cpus").write_text("0-3\n")
    share = cpushare.read_share(tmp_path, tmp_path / "absent")
    assert (share.quota_cpus, share.cpuset_cpus) == (0.5, 4)


def test_read_share_without_cgroups_never_raises(tmp_path: Path) -> None:
    share = cpushare.read_share(tmp_path / "none", tmp_path / "none" / "cgroup")
    assert share.quota_cpus is None and share.cpuset_cpus is None


def test_given_cpus_is_the_tightest_limit_and_says_which() -> None:
    free = CpuShare(None, None, None, 64)
    assert cpushare.given_cpus(8, 32, free) == (8.0, "8 torch threads")
    assert cpushare.given_cpus(64, 32, free) == (32.0, "32 physical cores")
    quota = CpuShare(1.5, "/sys/fs/cgroup/cpu.max", 4, 4)
    assert cpushare.given_cpus(4, 32, quota) == (1.5, "CPU quota 1.5 (/sys/fs/cgroup/cpu.max)")
    assert cpushare.given_cpus(4, 32, CpuShare(None, None, 2, 4)) == (2.0, "cpuset of 2 CPUs")


def test_a_quota_scales_the_peak_it_is_judged_by() -> None:
    # A cell given one CPU of a 64-core AVX-512 host is judged against one core's peak, not 64 cores'.
    flags = ("avx512f",)
    cores, why = cpushare.given_cpus(64, 64, CpuShare(1.0, "cpu.max", None, 64))
    est = cpuinfo.estimate_peak_gflops(cores, 2500.0, flags, why)
    assert est is not None and est.gflops == pytest.approx(1 * 2.5 * 64) and est.given_by == why
