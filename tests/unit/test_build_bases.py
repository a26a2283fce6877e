"""What an environment on an older or newer base resolves: the wheels its glibc runs, the modules its torch
imports without declaring them, and markers judged for its own Python (refenv.builder.wheelhouse, crossresolve)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness import compat
from refenv.builder import crossresolve, wheelhouse
from refenv.errors import LockError
from refenv.model import suites
from refenv.model.matrix import Base, Bootstrap, Environment

ROOT = Path(__file__).resolve().parents[2]


def on(suite: str, torch: str = "2.1.0", variant: str = "cu121", python: str = "3.9") -> Environment:
    return Environment(f"{suite}-{torch}", torch, variant, python, (), None, Base(None, Bootstrap(suite)))


def test_the_oldest_suite_is_bullseye_and_every_suite_has_a_glibc() -> None:
    assert suites.oldest_suite() == "bullseye"
    assert set(suites.SUITE_GLIBC) == set(suites.SUITE_PYTHON)
    assert suites.glibc_key("2.31") < suites.glibc_key("2.36") < suites.glibc_key("2.41")
    with pytest.raises(ValueError, match="not a glibc version"):
        suites.glibc_key("2.x")


@pytest.mark.parametrize(("suite", "newest"), [("bullseye", "manylinux_2_31_x86_64"),
                                               ("bookworm", "manylinux_2_36_x86_64"),
                                               ("trixie", "manylinux_2_41_x86_64")])
def test_each_base_takes_the_wheels_its_glibc_runs(suite: str, newest: str) -> None:
    tags = wheelhouse.platforms(wheelhouse.glibc_of(on(suite)))
    assert tags[0] == newest and tags[-3:] == wheelhouse.LEGACY_PLATFORMS
    minor = int(newest.split("_")[2])
    assert f"manylinux_2_{minor + 1}_x86_64" not in tags and "manylinux_2_17_x86_64" in tags


def test_the_default_base_resolves_as_it_always_did() -> None:
    env = Environment("torch-2.14.1-cu130", "2.14.1", "cu130", "3.11",
                      ("numpy", "torchvision==0.29.1", "torchaudio==2.11.1"))
    assert wheelhouse.inputs_of(env)["platform"] == "manylinux x86_64 (glibc 2.36)"
    lock = json.loads((wheelhouse.lock_path(ROOT / "matrix.yaml", env.name)).read_text())
    assert wheelhouse.is_current(wheelhouse.Lock(env.name, lock["inputs"], lock["inputs_sha256"], ()), env)
    assert wheelhouse.inputs_of(on("bullseye"))["platform"] == "manylinux x86_64 (glibc 2.31)"


def test_releases_that_import_pkg_resources_carry_setuptools_before_70() -> None:
    for series in ("1.13", "2.0", "2.1"):
        assert compat.torch_release(f"{series}.0") is not None
        assert on("bullseye", f"{series}.0").requirements[2:] == ("setuptools<70",)
    assert on("trixie", "2.5.1", "cu124", "3.13").requirements == ("torch==2.5.1", "nvidia-ml-py")
    raw = json.loads(compat.DATA_FILE.read_text())
    raw["torch_releases"]["2.1"]["requires"] = ["setuptools; rm -rf /"]
    with pytest.raises(compat.CompatDataError, match=r"torch_releases.2.1.requires"):
        compat.validate(raw)


def test_another_python_is_resolved_by_uv_for_that_python_and_that_glibc() -> None:
    assert crossresolve.uv_platform("2.31") == "x86_64-manylinux_2_31"
    assert crossresolve.uv_platform("2.41") == "x86_64-manylinux_2_40"   # uv's newest target
    assert crossresolve.uv_platform("2.29") == "x86_64-manylinux_2_28"
    command = crossresolve.compile_command("uv", "3.13", "2.41", None)
    assert command[:4] == ["uv", "pip", "compile", "-"] and command[4:6] == ["--python-version", "3.13"]
    assert wheelhouse.cross_python("3.13") and not wheelhouse.cross_python("{}.{}".format(*sys.version_info[:2]))


def test_only_plain_pins_are_taken_from_uv() -> None:
    assert crossresolve.parse_pins("# header\ntorch==2.5.1\nsetuptools==84.2.1\n") == ["torch==2.5.1",
                                                                                     "setuptools==84.2.1"]
    for bad in ("", "torch>=2\n", "-r /etc/passwd\n", "torch==2.5.1 ; python_version < '3'\n"):
        with pytest.raises(LockError):
            crossresolve.parse_pins(bad)


def test_the_breadth_matrix_shares_the_default_environment_and_its_lock() -> None:
    from refenv.model import matrix_yaml
    default = {e.name: e for e in matrix_yaml.load(ROOT / "matrix.yaml").environments}
    breadth = {e.name: e for e in matrix_yaml.load(ROOT / "breadth.yaml").environments}
    shared = set(default) & set(breadth)
    assert shared, "breadth.yaml proves the default matrix's newest environment too"
    for name in shared:  # one lock file per name (locks/NAME.json): two definitions would relock each other's
        assert default[name] == breadth[name], name
