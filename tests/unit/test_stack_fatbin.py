"""The stack's ELF and fatbin reader: sections, DT_NEEDED, and the architectures in `.nv_fatbin` (pure over bytes).

The real libraries it was checked against (torch's own, torchvision's) are read in tests/docker/test_stack.py;
here the layouts are written byte by byte (tests/unit/stack_samples.py) so every branch and every hostile input is
reached without a wheel.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.stack import elf, fatbin
from tests.unit.stack_samples import ARCH_SPECIFIC, PTX, SASS, container, entry, shared_object


def archs(data: bytes) -> fatbin.Archs:
    image = elf.parse(data)
    section = image.section(".nv_fatbin")
    assert section is not None
    return fatbin.summarize(fatbin.containers(data, section.offset, section.size))


def test_sections_needed_and_soname_are_read() -> None:
    data = shared_object(needed=["libc10.so", "libcudart.so.12"], soname="libext.so")
    image = elf.parse(data)
    assert image.needed == ("libc10.so", "libcudart.so.12")
    assert image.soname == "libext.so"
    assert image.section(".nv_fatbin") is None
    assert [s.name for s in image.sections] == ["", ".dynstr", ".dynamic", ".shstrtab"]


def test_sass_and_ptx_are_told_apart_and_the_baseline_is_what_every_container_has() -> None:
    common = [entry(SASS, 80), entry(SASS, 90), entry(PTX, 90, isa=(8, 4))]
    data = shared_object(container(common) + container([*common, entry(SASS, 90, ARCH_SPECIFIC)]))
    found = archs(data)
    assert found.containers == 2
    assert found.baseline == ("sm_80", "sm_90", "compute_90")
    assert found.extra == ("sm_90a",)
    assert found.ptx_isa == "8.4"
    assert set(found.sets) == {("sm_80", "sm_90", "compute_90"), ("sm_80", "sm_90", "sm_90a", "compute_90")}


def test_bytes_between_containers_are_skipped() -> None:
    one = container([entry(SASS, 75)])
    data = shared_object(one + b"\0" * 24 + one + b"garbage!")
    assert archs(data).containers == 2


def test_architectures_sort_by_number_not_text() -> None:
    assert fatbin.sort_names(["sm_120", "compute_120", "sm_90a", "sm_90", "sm_100", "sm_75"]) == (
        "sm_75", "sm_90", "sm_90a", "sm_100", "sm_120", "compute_120")


@pytest.mark.parametrize(("data", "message"), [
    (b"", "not an ELF"),
    (b"\x7fELF" + b"\0" * 100, "64-bit little-endian"),
    (b"MZ" + b"\0" * 200, "not an ELF"),
], ids=["empty", "32-bit", "not-elf"])
def test_what_is_not_a_64_bit_elf_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(elf.ElfError, match=message):
        elf.parse(data)


def test_a_truncated_file_is_an_error_not_a_crash() -> None:
    data = shared_object(container([entry(SASS, 80)]), needed=["libtorch.so"])
    for cut in (70, len(data) // 2, len(data) - 10):
        with pytest.raises(elf.ElfError):
            elf.parse(data[:cut])


def test_a_container_claiming_more_than_its_section_stops_at_the_section() -> None:
    bogus = container([entry(SASS, 80)])
    bogus = bogus[:8] + (10**12).to_bytes(8, "little") + bogus[16:]
    assert archs(shared_object(bogus)).baseline == ("sm_80",)


def _read_seconds(data: bytes) -> float:
    began = time.process_time()
    assert archs(data).containers == 0
    return time.process_time() - began


def test_a_huge_section_of_nothing_is_read_in_linear_time() -> None:
    # Four times the section costs about four times as much; a ratio of two readings in the same run holds on any
    # machine, where a bound in seconds holds only where it was measured.
    whole = _read_seconds(shared_object(b"\0" * 20_000_000))
    quarter = _read_seconds(shared_object(b"\0" * 5_000_000))
    assert whole < 8 * quarter + 0.05, (whole, quarter)


@given(st.binary(max_size=2048))
def test_random_bytes_after_an_elf_header_raise_only_elf_errors(tail: bytes) -> None:
    head = shared_object()[:64]
    try:
        image = elf.parse(head + tail)
    except elf.ElfError:
        return
    for section in image.sections:
        fatbin.containers(head + tail, section.offset, section.size)


@given(st.binary(max_size=4096))
def test_random_fatbin_bytes_never_raise(body: bytes) -> None:
    magic = (0xBA55ED50).to_bytes(4, "little")
    data = magic + b"\x01\x00\x10\x00" + len(body).to_bytes(8, "little") + body
    fatbin.summarize(fatbin.containers(data, 0, len(data)))
