"""Locks and the wheelhouse (refenv.builder.wheelhouse): what is resolved, how it is pinned, and a wheel that changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness import compat
from refenv.builder.wheelhouse import (
    WHEEL_RE,
    HashCache,
    Lock,
    Wheel,
    check_hashes,
    digest,
    extra_index,
    inputs_of,
    is_current,
    lock_path,
    read_lock,
    requirements_text,
    torch_requirement,
    write_lock,
)
from refenv.errors import LockError
from refenv.model.matrix import Environment

CU130 = Environment("torch-2.14.1-cu130", "2.14.1", "cu130", packages=("numpy",))
CU128_ON_210 = Environment("torch-2.10.0-cu128", "2.10.0", "cu128")
CU126_ON_210 = Environment("torch-2.10.0-cu126", "2.10.0", "cu126")
CPU = Environment("torch-2.13.0-cpu", "2.13.0", "cpu", packages=("numpy",))


def make_wheelhouse(folder: Path, env: Environment, files: dict[str, bytes]) -> Lock:
    """Wheels on disk and a lock that pins their bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for name, data in files.items():
        (folder / name).write_bytes(data)
        m = WHEEL_RE.match(name)
        assert m is not None
        wheels.append(Wheel(m.group("name"), m.group("version"), name, hashlib.sha256(data).hexdigest(), len(data)))
    inputs = inputs_of(env)
    return Lock(env.name, inputs, digest(inputs), tuple(wheels))


TORCH_WHL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
NUMPY_WHL = "numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def test_pypis_default_build_is_pinned_plainly_others_with_their_variant() -> None:
    # torch 2.14's PyPI build bundles CUDA 13.0, 2.10's CUDA 12.8 (shared/facts/cuda-compat.md).
    assert torch_requirement(CU130) == "torch==2.14.1" and extra_index(CU130) is None
    assert torch_requirement(CU128_ON_210) == "torch==2.10.0" and extra_index(CU128_ON_210) is None
    assert torch_requirement(CU126_ON_210) == "torch==2.10.0+cu126"
    assert extra_index(CU126_ON_210) == compat.index_url("cu126")
    assert torch_requirement(CPU) == "torch==2.13.0+cpu" and extra_index(CPU) == compat.index_url("cpu")


def test_a_named_index_wins() -> None:
    env = Environment("e", "2.14.1", "cu130", index_url="https://mirror.example/simple")
    assert extra_index(env) == "https://mirror.example/simple"


def test_the_inputs_are_what_decides_a_resolution() -> None:
    inputs = inputs_of(CPU)
    assert inputs["requirements"] == ["torch==2.13.0+cpu", "nvidia-ml-py", "numpy"]
    assert inputs["python"] == "3.11"
    assert digest(inputs) == digest(dict(reversed(list(inputs.items())))), "key order does not matter"


def test_a_lock_is_current_only_for_the_inputs_it_was_made_from(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {TORCH_WHL: b"t"})
    assert is_current(lock, CPU)
    assert not is_current(None, CPU)
    assert not is_current(lock, Environment(CPU.name, "2.13.0", "cpu", packages=("numpy", "einops")))
    assert not is_current(lock, Environment(CPU.name, "2.13.0", "cpu", python="3.12", packages=("numpy",)))


def test_a_lock_survives_the_disk_and_keeps_its_digest(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path / "wh", CPU, {TORCH_WHL: b"t", NUMPY_WHL: b"n"})
    path = lock_path(tmp_path / "matrix.yaml", CPU.name)
    assert path == tmp_path / "locks" / f"{CPU.name}.json"
    write_lock(lock, path)
    again = read_lock(path)
    assert again == lock and again.sha256 == lock.sha256
    assert read_lock(tmp_path / "locks" / "absent.json") is None


def test_an_unreadable_lock_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"schema": "something else", "wheels": []}')
    with pytest.raises(LockError, match=r"bad\.json"):
        read_lock(path)


def test_requirements_pin_every_wheel_by_hash(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {TORCH_WHL: b"t", NUMPY_WHL: b"n"})
    lines = requirements_text(lock).splitlines()
    assert lines[0].startswith("#")
    assert lines[1:] == [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for w in lock.wheels]


@pytest.mark.parametrize(("filename", "name", "version"), [
    (TORCH_WHL, "torch", "2.13.0+cpu"),
    ("nvidia_ml_py-13.580.82-py3-none-any.whl", "nvidia_ml_py", "13.580.82"),
    ("pkg-1.0-1build-py3-none-any.whl", "pkg", "1.0"),
])
def test_wheel_names(filename: str, name: str, version: str) -> None:
    m = WHEEL_RE.match(filename)
    assert m is not None and (m.group("name"), m.group("version")) == (name, version)


def test_wheels_are_found_by_any_spelling_of_their_name(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {"nvidia_ml_py-13.580.82-py3-none-any.whl": b"x"})
    assert lock.wheel("nvidia-ml-py") is lock.wheel("NVIDIA.ML_py") is lock.wheels[0]
    assert lock.wheel("torch") is None


def test_unchanged_wheels_pass_the_check(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {TORCH_WHL: b"torch bytes", NUMPY_WHL: b"numpy bytes"})
    check_hashes(lock, tmp_path)


def test_a_changed_wheel_stops_the_build_and_is_named(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {TORCH_WHL: b"torch bytes", NUMPY_WHL: b"numpy bytes"})
    check_hashes(lock, tmp_path)  # warms the hash cache: a change must be seen through it
    # Another length: the cache keys on (size, mtime), and two writes may share a coarse mtime tick.
    (tmp_path / TORCH_WHL).write_bytes(b"other torch bytes")
    with pytest.raises(LockError) as err:
        check_hashes(lock, tmp_path)
    assert TORCH_WHL in str(err.value) and CPU.name in str(err.value)
    assert "changed since it was locked" in str(err.value)
    assert err.value.hint is not None and f"invoke lock --env {CPU.name}" in err.value.hint


def test_a_missing_wheel_is_named(tmp_path: Path) -> None:
    lock = make_wheelhouse(tmp_path, CPU, {TORCH_WHL: b"t"})
    (tmp_path / TORCH_WHL).unlink()
    with pytest.raises(LockError, match="not in the wheelhouse"):
        check_hashes(lock, tmp_path)


def test_the_hash_cache_remembers_and_notices_changes(tmp_path: Path) -> None:
    wheel = tmp_path / TORCH_WHL
    wheel.write_bytes(b"abc")
    cache = HashCache(tmp_path)
    assert cache.sha256(wheel) == hashlib.sha256(b"abc").hexdigest()
    cache.save()
    assert HashCache(tmp_path).data[TORCH_WHL][2] == hashlib.sha256(b"abc").hexdigest()
    wheel.write_bytes(b"abcd")
    assert HashCache(tmp_path).sha256(wheel) == hashlib.sha256(b"abcd").hexdigest()
