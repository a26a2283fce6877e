"""Which build reproduces a report here: the exact one when it can be had, else the nearest, said (no I/O)."""

from __future__ import annotations

import pytest

from refenv.model.profiles import Faults
from refenv.reproduce import ReproduceError, from_flags
from refenv.reproduce.builds import INDEX, LOCAL, PYPI, Build, Offer, by_nearness, choose, source_of

PYTHONS = ("3.9", "3.11", "3.13")
CACHED = frozenset({("2.14.1", "cu130", "3.11"), ("2.10.0", "cu128", "3.11"), ("2.13.0", "cpu", "3.11")})
# This machine: PyTorch's index unreachable, torch 2.13.0+cpu among pip's find-links.
OFFLINE = Offer(False, frozenset({("2.13.0", "cpu", "3.11")}), PYTHONS, CACHED)
ONLINE = Offer(True, frozenset(), PYTHONS)


def test_pypi_default_builds_are_exact() -> None:
    build = choose("2.1.0", "cu121", "3.11", "Linux", OFFLINE)
    assert build == Build("2.1.0", "cu121", "3.11", PYPI, ())


def test_a_non_default_variant_uses_the_pypi_build_of_the_same_major() -> None:
    build = choose("2.7.1", "cu128", "3.11", "Linux", OFFLINE)
    assert build is not None and (build.torch, build.variant, build.source) == ("2.7.1", "cu126", PYPI)
    assert build.substitutions == ("torch 2.7.1+cu128 cannot be had (PyTorch's index is not reachable from here): "
                                   "using the PyPI build of torch 2.7.1 (cu126, the same CUDA major)",)


def test_with_the_index_reachable_the_exact_variant() -> None:
    build = choose("2.7.1", "cu128", "3.11", "Linux", ONLINE)
    assert build == Build("2.7.1", "cu128", "3.11", INDEX, ())


def test_another_major_moves_to_the_nearest_release_with_that_major() -> None:
    build = choose("2.1.0", "cu118", "3.11", "Linux", OFFLINE)  # cu11 on PyPI: torch 2.0 (cu117) and 1.13
    assert build is not None and (build.torch, build.variant) == ("2.0.0", "cu117")
    assert "the nearest release with a CUDA 11 build here" in build.substitutions[0]


def test_a_substitute_release_prefers_a_version_already_downloaded() -> None:
    build = choose("2.14.1", "cu126", "3.11", "Linux", OFFLINE)  # 2.11-2.14 are cu13 on PyPI
    assert build is not None and (build.torch, build.variant) == ("2.10.0", "cu128")


def test_cpu_builds_come_from_disk() -> None:
    build = choose("2.4.1", "cpu", "3.10", "Linux", OFFLINE)
    assert build is not None and (build.torch, build.variant, build.python, build.source) == (
        "2.13.0", "cpu", "3.11", LOCAL)
    assert len(build.substitutions) == 2  # the build and the Python are both named


def test_python_goes_to_the_nearest_base_the_release_supports() -> None:
    assert by_nearness("3.10", list(PYTHONS)) == ["3.11", "3.9", "3.13"]
    assert by_nearness("3.12", list(PYTHONS)) == ["3.11", "3.13", "3.9"]
    build = choose("2.5.1", "cu124", "3.12", "Linux", OFFLINE)
    assert build is not None and build.python == "3.11"
    assert build.substitutions == ("Python 3.12: no base image here has it for torch 2.5.1; using Python 3.11 "
                                   "(bases: 3.9, 3.11, 3.13)",)
    old = choose("2.0.1", "cu117", "3.13", "Linux", OFFLINE)  # torch 2.0 supports 3.8-3.11
    assert old is not None and old.python == "3.11"


def test_other_systems_say_so() -> None:
    build = choose("2.2.2", "cu121", "3.11", "Windows", OFFLINE)
    assert build is not None and build.substitutions[0].startswith("a Windows report: reproduced with a Linux")


def test_nothing_fits() -> None:
    assert choose("1.5.0", "cu101", "3.8", "Linux", OFFLINE) is None


def test_accept_filters_candidates() -> None:
    build = choose("2.14.1", "cu126", "3.11", "Linux", OFFLINE, accept=lambda b: b.torch.startswith("2.7"))
    assert build is not None and (build.torch, build.variant) == ("2.7.0", "cu126")


def test_source_of() -> None:
    assert source_of("2.13.0", "cpu", "3.11", OFFLINE) == LOCAL
    assert source_of("2.13.0", "cpu", "3.9", OFFLINE) is None
    assert source_of("2.14.1", "cu130", "3.9", OFFLINE) == PYPI


def test_flags() -> None:
    inf = from_flags("2.1.0+cu121", driver="470.182.03", gpus=["Tesla T4"], cuda_visible_devices="",
                     python="3.10")
    assert (inf.torch, inf.variant, inf.python, inf.driver, inf.driver_cuda) == ("2.1.0", "cu121", "3.10",
                                                                                 "470.182.03", 11040)
    assert [g.name for g in inf.gpus] == ["Tesla T4"] and inf.env == (("CUDA_VISIBLE_DEVICES", ""),)
    assert inf.reported is None and not inf.no_driver and inf.gpu_access
    default = from_flags("2.10.0", gpus=["2 x NVIDIA H100 80GB HBM3"], fault="mismatch")
    assert default.variant == "cu128" and len(default.gpus) == 2 and default.faults == Faults(18, 803)
    assert default.no_driver  # no --driver: a host without one
    assert not from_flags("2.10.0", driver="580.95.05", no_gpus=True).gpu_access


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"torch": "2.1"}, "--torch '2.1'"),
    ({"torch": "2.1.0+rocm6"}, "--torch"),
    ({"torch": "9.9.9"}, "name the variant"),
    ({"torch": "2.1.0", "driver": "470"}, "--driver '470'"),
    ({"torch": "2.1.0", "driver": "300.10"}, "older than every driver branch"),
    ({"torch": "2.1.0", "python": "3"}, "--python '3'"),
    ({"torch": "2.1.0", "fault": "melted"}, "--fault 'melted'"),
    ({"torch": "2.1.0", "gpus": ["0 x Tesla T4"]}, "a count of 1 to 16 GPUs"),
    ({"torch": "2.1.0", "gpus": [" "]}, "--gpu"),
])
def test_flags_errors_name_the_flag(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ReproduceError, match=words.replace("(", r"\(").replace("+", r"\+")):
        from_flags(**kwargs)  # type: ignore[arg-type]
