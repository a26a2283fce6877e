"""The inventory over a real folder of installed distributions (importlib.metadata reads it, a real child imports).

The folder is written here: dist-info folders as pip writes them, packages with an ELF shared object carrying a
fatbin (tests/unit/stack_samples.py), one whose import raises, one whose import kills its process. Real CUDA wheels
are inventoried in tests/docker/test_stack.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.schema.jsondata import encode
from harness.stack.findings import Gpu, Host, judge
from harness.stack.inventory import inventory
from tests.unit.stack_samples import PTX, SASS, container, entry, install, shared_object


@pytest.fixture()
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site-packages"
    kernels = shared_object(container([entry(SASS, 80), entry(SASS, 90), entry(PTX, 90, isa=(8, 4))]),
                            needed=["libc10.so", "libcudart.so.12"])
    install(site, "kernelext", "1.2.0", {"kernelext/__init__.py": "VALUE = 1\n", "kernelext/_C.so": kernels})
    install(site, "badext", "2.0", {"badext/__init__.py": "raise RuntimeError('operator badext::fused does not exist')\n"},
            requires=("torch (==1.0.0)",))
    install(site, "crasher", "0.1", {"crasher/__init__.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"},
            requires=("torch>=1.0",))
    install(site, "nvidia-cuda-runtime-cu12", "12.8.90", {"nvidia/cuda_runtime/lib/libcudart.so.12": b"not an elf"})
    install(site, "plain", "1.0", {"plain/__init__.py": ""})
    monkeypatch.setenv("PYTHONPATH", str(site))  # the import child finds them as `import` would
    return site


def test_the_stack_is_found_by_what_it_ships_and_requires(site: Path) -> None:
    found = inventory(path=[str(site)], import_timeout=60)
    by = {d.key: d for d in found.distributions}
    assert set(by) == {"kernelext", "badext", "crasher", "nvidia-cuda-runtime-cu12"}  # not `plain`
    k = by["kernelext"]
    assert k.why == ("ships CUDA kernels",)
    assert k.arch == ("sm_80", "sm_90", "compute_90")
    assert k.libraries[0].ptx_isa == "8.4" and k.libraries[0].links_torch
    assert k.built_for.cuda == "12" and "libcudart.so.12" in (k.built_for.cuda_from or "")
    assert by["nvidia-cuda-runtime-cu12"].kind == "cuda-library"
    assert by["nvidia-cuda-runtime-cu12"].built_for.cuda == "12"
    assert found.read.distributions == 5
    assert found.read.shared_objects == 1  # NVIDIA's own wheels are listed, not read


def test_each_import_is_tried_in_a_child_with_its_exact_words(site: Path) -> None:
    # read back as the document has it: the import trial is written under `import`
    by = {d["key"]: d for d in encode(inventory(path=[str(site)], import_timeout=60))["distributions"]}
    assert by["kernelext"]["import"]["ok"] is True
    assert by["badext"]["import"]["error"] == "RuntimeError: operator badext::fused does not exist"
    crashed = by["crasher"]["import"]
    assert crashed["ok"] is False and "killed by SIGSEGV" in crashed["error"]
    assert by["nvidia-cuda-runtime-cu12"]["import"] is None


def test_judged_the_failures_are_named_and_a_gpu_the_kernels_miss_is_found(site: Path) -> None:
    found = inventory(path=[str(site)], import_timeout=60)
    verdict = judge(found, Host((Gpu("NVIDIA GeForce RTX 5090", "12.0"),)))
    titles = [f.title for f in verdict.findings]
    assert "badext 2.0 does not import: RuntimeError: operator badext::fused does not exist" in titles
    assert any(t.startswith("crasher 0.1 does not import: importing it ended the process") for t in titles)
    assert verdict.status["kernelext"] == "ok"  # compute_90 PTX is JIT-compiled for sm_120
    assert judge(found, Host((Gpu("Tesla T4", "7.5"),))).status["kernelext"] == "broken"


def test_without_imports_nothing_is_run(site: Path) -> None:
    found = inventory(path=[str(site)], imports=False)
    assert found.imports_tried is False
    assert all(d.trial is None for d in found.distributions)


def test_a_distribution_installed_twice_is_named_with_both_versions(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "kernelext", "1.2.0", {"kernelext/__init__.py": ""}, requires=("torch>=1",))
    install(site, "kernelext", "1.1.0", {"kernelext/old.py": ""}, requires=("torch>=1",))
    found = inventory(path=[str(site)], imports=False)
    (d,) = found.distributions
    assert len(d.also_installed) == 1 and d.also_installed[0].startswith(("1.1.0 in ", "1.2.0 in "))
    (f,) = judge(found).findings
    assert f.title.startswith("kernelext is installed more than once")
    assert f.remediation[0].startswith("pip uninstall -y kernelext (again, until pip finds none)")
