"""PEP 440 versions and specifiers, and PEP 508 requirements with markers, as the stack reads installed metadata."""

from __future__ import annotations

import pytest

from harness.stack import requirements
from harness.stack.versions import VersionError, local_label, parse, satisfies


@pytest.mark.parametrize(("version", "spec", "met"), [
    ("2.14.1+cu130", ">=2.14.0", True),        # torchvision 0.29.1's requirement, torch from PyTorch's index
    ("2.14.1", "==2.13.0", False),             # torchvision 0.28.0's, beside torch 2.14.1
    ("2.13.0+cpu", "==2.13.0", True),          # a local label is ignored by a specifier without one
    ("2.5.1+cu124", "==2.5.1+cu121", False),   # and compared by one that has it
    ("3.8.0", "~=3.8.0", True), ("3.9.0", "~=3.8.0", False),
    ("0.0.28.post3", "==0.0.28.post3", True), ("0.0.28.post3", ">0.0.28", False),
    ("8.3.1", "!=8.3.*,>=5.3.0", False), ("11.3.0", "!=8.3.*,>=5.3.0", True),
    ("2.6.0rc1", ">=2.6", False), ("2.6.0.dev20240101", "<2.6", False), ("2.5.9", "<2.6", True),
    ("2.12", "==2.12.0", True), ("1!1.0", ">=2.0", True), ("1.0", "", True),
])
def test_specifiers_follow_pep_440(version: str, spec: str, met: bool) -> None:
    assert satisfies(version, spec) is met


@pytest.mark.parametrize("bad", ["", "latest", "2.x", "1.0+"])
def test_what_is_not_a_version_is_refused(bad: str) -> None:
    with pytest.raises(VersionError):
        parse(bad)


def test_an_unreadable_specifier_is_refused() -> None:
    with pytest.raises(VersionError, match="specifier"):
        satisfies("1.0", "about 1.0")


def test_the_local_label_is_what_follows_the_plus() -> None:
    assert local_label("0.29.1+cu130") == "cu130"
    assert local_label("2.14.1") is None


def test_requires_dist_in_both_spellings() -> None:
    old = requirements.parse("torch (==2.13.0)")
    new = requirements.parse('triton==3.6.0; platform_system == "Linux" and platform_machine == "x86_64"')
    assert old is not None and (old.key, old.spec, old.marker) == ("torch", "==2.13.0", "")
    assert new is not None and (new.key, new.spec) == ("triton", "==3.6.0")
    assert requirements.parse("Flash_Attn[dev]>=2.5") == requirements.Requirement("Flash_Attn", "flash-attn", ">=2.5", "")


LINUX = {"os_name": "posix", "sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux",
         "platform_release": "6.1.0", "platform_python_implementation": "CPython", "implementation_name": "cpython",
         "implementation_version": "3.11.2", "python_version": "3.11", "python_full_version": "3.11.2", "extra": ""}


@pytest.mark.parametrize(("marker", "holds"), [
    ('platform_system == "Linux" and platform_machine == "x86_64"', True),
    ('platform_system == "Windows"', False),
    ("extra == 'gdown'", False),                                   # the stack is judged without extras
    ('python_version < "3.12"', True), ('python_version >= "3.12"', False),
    ('python_version > "3.9" and (sys_platform == "win32" or os_name == "posix")', True),
    ('sys_platform not in "win32 cygwin"', True), ('"arm" in platform_machine', False),
    ("", True),
])
def test_markers_are_evaluated_for_this_interpreter(marker: str, holds: bool) -> None:
    assert requirements.applies(marker, LINUX) is holds


@pytest.mark.parametrize("marker", ['python_version <', 'colour == "red"', '(python_version > "3"', 'and or'])
def test_an_unreadable_marker_is_neither_true_nor_false(marker: str) -> None:
    assert requirements.applies(marker, LINUX) is None


def test_only_requirements_that_apply_are_active() -> None:
    lines = ["torch (==2.13.0)", "gdown (>=4.7.3) ; extra == 'gdown'", 'pywin32; sys_platform == "win32"', "numpy",
             "not a requirement ((("]
    assert [r.key for r in requirements.active(lines, LINUX)] == ["torch", "numpy"]
