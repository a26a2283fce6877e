"""Judging an inventory against a host (harness/stack/findings.py), pure: the stack's findings and their fixes.

The texts are those the real libraries print (reproduced here where the wheels were at hand: torchvision 0.28.0
on torch 2.14.1; the others from their sources, named in harness/data/failures.json).
"""

from __future__ import annotations

from typing import Any

from harness.schema import ARCH_UNSUPPORTED, DRIVER_TOO_OLD
from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import SEVERITY_WARNING as WARNING
from harness.schema.jsondata import decode, encode
from harness.schema.stack_document import Inventory
from harness.stack import findings
from harness.stack.findings import Gpu, Host, Judgement


def judge(stack: dict[str, Any], host: Host | None = None) -> Judgement:
    """The inventory written as the document has it, read back, judged: the tests speak the document's keys."""
    return findings.judge(decode(Inventory, stack), host)


TORCH_ARCH = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def dist(name: str, version: str, kind: str = "extension", *, requires: dict[str, str] | None = None,
         cuda: str | None = None, libs: list[dict[str, Any]] | None = None, imported: dict[str, Any] | None = None,
         per_cuda: list[str] | None = None, pinned: str | None = None) -> dict[str, Any]:
    key = name.lower()
    return {"name": name, "key": key, "version": version, "kind": kind, "why": [],
            "requires": [{"name": k, "spec": v} for k, v in (requires or {}).items()], "pinned_by_torch": pinned,
            "built_for": {"cuda": cuda, "cuda_from": "its version" if cuda else None, "torch": None,
                          "torch_from": None, "per_cuda": per_cuda or []},
            "arch": sorted({a for lib in libs or [] for a in lib["arch"]}), "extra_arch": [], "libraries": libs or [],
            "shared_objects": len(libs or []), "module": key if kind != "cuda-library" else None,
            "files_listed": True, "errors": [],
            "import": ({"ok": True} if imported is None else imported) if kind != "cuda-library" else None}


def lib(path: str, arch: list[str], sets: list[list[str]] | None = None, links_torch: bool = True) -> dict[str, Any]:
    return {"path": path, "arch": arch, "extra": [], "sets": sets or [arch], "containers": 3, "ptx_isa": None,
            "bundled": False, "links_torch": links_torch, "cudart": None}


def torch(version: str = "2.14.1", cuda: str | None = "13.0", requires: dict[str, str] | None = None) -> dict[str, Any]:
    return dist("torch", version, "torch", requires=requires, cuda=cuda,
                libs=[lib("torch/lib/libtorch_cuda.so", TORCH_ARCH), lib("torch/lib/libtorch_cuda_linalg.so",
                                                                          TORCH_ARCH[1:])])


def failed(error: str, **more: list[str]) -> dict[str, Any]:
    return {"ok": False, "error": error, "causes": [], "warnings": [], "log": [], "output": [], "loader": [], **more}


def test_torchvision_built_for_another_torch_does_not_import_and_the_fix_is_its_pair() -> None:
    tv = dist("torchvision", "0.28.0", requires={"torch": "==2.13.0"}, cuda="13.0",
              libs=[lib("torchvision/_C.so", [*TORCH_ARCH, "compute_120"])],
              imported=failed("RuntimeError: operator torchvision::nms does not exist",
                              loader=["/opt/venv/lib/python3.11/site-packages/torchvision/_C.so: undefined symbol: "
                                      "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb"]))
    verdict = judge({"distributions": [torch(), tv]})
    assert not verdict.ready and verdict.status == {"torch": "ok", "torchvision": "broken"}
    (f,) = verdict.findings
    assert f.severity == ERROR and f.layer == "stack"
    assert f.title == "torchvision 0.28.0 does not import: RuntimeError: operator torchvision::nms does not exist"
    assert "it requires torch==2.13.0; torch 2.14.1 is installed" in f.evidence
    assert any(e.startswith("'operator torchvision::nms does not exist': a library's custom operators") for e in f.evidence)
    assert any("undefined symbol: _ZN3c104cuda" in e and "built against another torch" in e for e in f.evidence)
    assert f.remediation[0].startswith("pip install torchvision==0.29.1   # the torchvision release paired with torch "
                                       "2.14.1")


def test_xformers_built_for_another_torch_says_which_in_its_log() -> None:
    log = ["xformers: WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
           "    PyTorch 2.5.1+cu121 with CUDA 1201 (you have 2.6.0+cu124)"]
    xf = dist("xformers", "0.0.28.post3", requires={"torch": "==2.5.1"},
              imported=failed("ImportError: cannot import name 'memory_efficient_attention'", log=log))
    (f,) = judge({"distributions": [torch("2.6.0", "12.4"), xf]}).findings
    assert any("'PyTorch 2.5.1+cu121 with CUDA 1201 (you have 2.6.0+cu124)'" in e for e in f.evidence)
    assert f.remediation == ("pip install --force-reinstall xformers torch==2.6.0 --index-url "
                             "https://download.pytorch.org/whl/cu124   # PyTorch's index has a xformers build pinned to "
                             "each torch release",)


def test_triton_at_another_version_than_torch_pins_is_an_error() -> None:
    stack = {"distributions": [torch("2.10.0", "12.8", requires={"triton": "==3.6.0"}),
                               dist("triton", "3.8.0", pinned="==3.6.0")]}
    verdict = judge(stack)
    (f,) = verdict.findings
    assert f.severity == ERROR and f.title == "torch 2.10.0 requires triton==3.6.0; triton 3.8.0 is installed"
    assert f.remediation == ('pip install "triton==3.6.0"   # what torch 2.10.0 requires',)
    assert verdict.status["torch"] == "broken"


def test_a_pure_python_requirement_not_met_is_a_warning_and_a_met_one_nothing() -> None:
    loose = dist("peft", "0.3.0", requires={"torch": ">=2.20"}, libs=[])
    fine = dist("torchaudio", "2.11.1", requires={"torch": ">=2.11"}, cuda="13.2")
    (f,) = judge({"distributions": [torch(), loose, fine]}).findings
    assert f.severity == WARNING and f.title.startswith("peft 0.3.0 requires torch>=2.20")


def test_an_extension_of_another_cuda_major_than_torch() -> None:
    ext = dist("torchvision", "0.29.1", cuda="12.8", requires={"torch": ">=2.14.0"})
    (f,) = judge({"distributions": [torch(), ext]}).findings
    assert f.severity == ERROR and f.title == "torchvision 0.29.1 was built for CUDA 12.8; torch uses CUDA 13.0"
    cpu = judge({"distributions": [torch("2.13.0+cpu", None), dist("torchvision", "0.28.0", cuda="13.0")]})
    assert [x.severity for x in cpu.findings] == [WARNING]


def test_bitsandbytes_without_a_library_for_torchs_cuda() -> None:
    bnb = dist("bitsandbytes", "0.45.0", per_cuda=["11.8", "12.1", "12.8"])
    (f,) = judge({"distributions": [torch(), bnb]}).findings
    assert f.title == "bitsandbytes 0.45.0 has no library for torch's CUDA 13.0"
    assert f.remediation == ("pip install -U bitsandbytes   # a release with a library for CUDA 13.0 (this one has "
                             "11.8, 12.1, 12.8)",)
    assert judge({"distributions": [torch(), dist("bitsandbytes", "0.48", per_cuda=["12.8", "13.0"])]}).ready


def test_kernels_for_sm80_and_sm90_run_on_an_sm89_by_binary_compatibility_but_not_on_an_sm120() -> None:
    fa = dist("flash-attn", "2.7.4", libs=[lib("flash_attn_2_cuda.so", ["sm_80", "sm_90"])])
    stack = {"distributions": [torch(), fa]}
    assert judge(stack, Host((Gpu("NVIDIA L4", "8.9"),))).ready
    verdict = judge(stack, Host((Gpu("NVIDIA GeForce RTX 5090", "12.0"),)))
    (f,) = verdict.findings
    assert (f.verdict, f.severity) == (ARCH_UNSUPPORTED, ERROR)
    assert f.title == "flash-attn 2.7.4 has no code for NVIDIA GeForce RTX 5090 (sm_120)"
    assert any("no kernel image is available" in e for e in f.evidence)
    assert 'TORCH_CUDA_ARCH_LIST="12.0"' in f.remediation[1]


def test_a_library_of_torch_lacking_one_architecture_is_a_warning_not_torchs_verdict() -> None:
    verdict = judge({"distributions": [torch()]}, Host((Gpu("Tesla T4", "7.5"),)))
    (f,) = verdict.findings
    assert f.severity == WARNING and "1 of 2 libraries lack code for Tesla T4 (sm_75)" in f.title
    assert verdict.ready


def test_an_extension_newer_than_the_driver() -> None:
    audio = dist("torchaudio", "2.11.1", cuda="13.2")
    (f,) = judge({"distributions": [torch(), audio]}, Host(driver_cuda=13000)).findings
    assert f.severity == WARNING and "newer than the driver's 13.0" in f.title
    newer = dist("ext", "1.0", cuda="14.0")
    found = judge({"distributions": [torch("2.14.1", "14.0"), newer]}, Host(driver_cuda=13000)).findings
    assert found == ()  # torch's own CUDA is as new: the classifier says DRIVER_TOO_OLD for torch itself
    found = judge({"distributions": [torch(), newer]}, Host(driver_cuda=13000)).findings
    assert [(x.verdict, x.severity) for x in found] == [("", ERROR), (DRIVER_TOO_OLD, ERROR)]


def test_when_torch_itself_does_not_import_the_extensions_are_not_blamed() -> None:
    t = torch()
    t["import"] = failed("OSError: libcudart.so.13: cannot open shared object file: No such file or directory")
    tv = dist("torchvision", "0.29.1", imported=failed("OSError: libcudart.so.13: cannot open shared object file"))
    assert judge({"distributions": [t, tv]}).findings == ()


def test_a_healthy_stack_is_ready() -> None:
    tv = dist("torchvision", "0.29.1", requires={"torch": ">=2.14.0"}, cuda="13.0",
              libs=[lib("torchvision/_C_stable.so", [*TORCH_ARCH, "compute_120"])])
    verdict = judge({"distributions": [torch(), tv, dist("nvidia-cuda-runtime", "13.0.96", "cuda-library")]},
                    Host((Gpu("NVIDIA H100", "9.0"),), 13000))
    assert verdict.ready and verdict.findings == ()
    assert encode(verdict)["status"] == {"torch": "ok", "torchvision": "ok", "nvidia-cuda-runtime": "ok"}
