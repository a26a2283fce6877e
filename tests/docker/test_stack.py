"""The stack inventory on real wheels: torch's own libraries, a real torchvision, and one built for another torch.

The architectures read from the ELF fatbins of a real torch build must be the list that build reports
(`torch.cuda.get_arch_list()`, or `torch._C._cuda_getArchFlags()` where the former needs a GPU), SASS and PTX
told apart. torchvision is added to the cu130 image by unpacking its wheel, without its dependencies (as
`pip install --no-deps` would): 0.29.1, paired with torch 2.14.1, and 0.28.0, built for torch 2.13.0, which must
fail to import with torchvision's and the loader's own words, named with the fix.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refenv import paths
from refenv.build.environment import EnvBuild
from refenv.build.wheelhouse import pip_download
from refenv.engines.docker.sdk import Engine
from tests.docker.support import CU128, CU130, JSON_MARK, python_in_image

INVENTORY = f"""
import json
import torch
from harness.stack.inventory import inventory
from harness.stack.findings import judge
listed = torch.cuda.get_arch_list() or torch._C._cuda_getArchFlags().split()
found = inventory(imports=IMPORTS)
print({JSON_MARK!r} + json.dumps({{"listed": listed, "inventory": found, "judged": judge(found).to_dict(),
                                   "dists": {{d["key"]: d for d in found["distributions"]}}}}))
"""
# Unpacked as `pip install --no-deps` would (the image has no pip): the wheel's files and its dist-info.
DOCKERFILE = """FROM {base}
USER root
COPY wheels /tmp/wheels
RUN for w in /tmp/wheels/*.whl; do python -m zipfile -e "$w" /opt/venv/lib/python3.11/site-packages; done \\
 && rm -rf /tmp/wheels
USER 10001:10001
"""


def inventory_of(engine: Engine, image: str, imports: bool) -> dict[str, Any]:
    return python_in_image(engine, image, INVENTORY.replace("IMPORTS", str(imports)), timeout=300)


def wheel(requirement: str) -> Path:
    """A cp311 manylinux wheel of `requirement` in the shared wheelhouse (downloaded once, without dependencies)."""
    house = paths.wheelhouse()
    name, version = requirement.split("==") if "==" in requirement else (requirement, "")
    stem = name.replace("-", "_")
    found = sorted(house.glob(f"{stem}-{version}*.whl")) if version else sorted(house.glob(f"{stem}-*.whl"))
    if not found:
        pip_download(["--python-version", "3.11", "--abi", "cp311", "--abi", "abi3", "--abi", "none", "--no-deps",
                      "--", requirement], house)
        found = sorted(house.glob(f"{stem}-{version}*.whl")) if version else sorted(house.glob(f"{stem}-*.whl"))
    assert found, f"pip downloaded no wheel for {requirement}"
    return found[-1]


def build_with(engine: Engine, base: str, wheels: list[Path], tag: str) -> str:
    """`docker build` of DOCKERFILE over `base`, the wheels in its context."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        data = DOCKERFILE.format(base=base).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for w in wheels:
            tar.add(str(w), arcname=f"wheels/{w.name}")
    context.seek(0)
    return engine.build(context, tag, lambda line: None, labels={"refenv.managed": "true", "refenv.kind": "test"})


@pytest.fixture(scope="module")
def torchvision_images(engine: Engine, env_builds: dict[str, EnvBuild]) -> Iterator[dict[str, str]]:
    """The cu130 image with torchvision 0.29.1 (and pillow, which it imports), and with 0.28.0; removed after."""
    base = str(env_builds[CU130].tag)
    tags = {"paired": "refenv-test/stack-torchvision:0.29.1", "mismatched": "refenv-test/stack-torchvision:0.28.0"}
    build_with(engine, base, [wheel("torchvision==0.29.1"), wheel("pillow")], tags["paired"])
    build_with(engine, base, [wheel("torchvision==0.28.0")], tags["mismatched"])
    yield tags
    for tag in tags.values():
        engine.remove_image(tag)


@pytest.mark.parametrize("env", [CU130, CU128])
def test_the_architectures_read_from_torchs_libraries_are_its_arch_list(engine: Engine,
                                                                        env_builds: dict[str, EnvBuild],
                                                                        env: str) -> None:
    seen = inventory_of(engine, str(env_builds[env].tag), imports=False)
    torch = seen["dists"]["torch"]
    assert seen["listed"], "the build lists no architecture"
    assert torch["arch"] == seen["listed"]
    main = next(lib for lib in torch["libraries"] if lib["path"].endswith("libtorch_cuda.so"))
    assert main["arch"] == seen["listed"]  # every kernel of torch's main CUDA library has them all
    sass = [a for a in seen["listed"] if a.startswith("sm_")]
    ptx = [a for a in seen["listed"] if a.startswith("compute_")]
    assert [a for a in torch["arch"] if a.startswith("sm_")] == sass
    assert [a for a in torch["arch"] if a.startswith("compute_")] == ptx
    assert seen["inventory"]["read"]["fatbin_containers"] > 100


def test_a_real_torchvision_is_read_the_same_way(engine: Engine, env_builds: dict[str, EnvBuild],
                                                 torchvision_images: dict[str, str]) -> None:
    seen = inventory_of(engine, torchvision_images["paired"], imports=True)
    tv = seen["dists"]["torchvision"]
    # torchvision's wheels are built for torch's architecture list, the newest also as PTX (TORCH_CUDA_ARCH_LIST
    # '...;12.0+PTX' in pytorch/vision's release builds)
    newest = seen["listed"][-1]
    assert tv["arch"] == [*seen["listed"], newest.replace("sm_", "compute_")]
    assert tv["version"] == "0.29.1" and tv["built_for"]["cuda"] == "13.0"
    assert {"name": "torch", "spec": ">=2.14.0"} in tv["requires"]
    assert tv["import"]["ok"] is True, tv["import"]
    assert seen["judged"]["ready"] is True, seen["judged"]["findings"]


def test_a_torchvision_built_for_another_torch_fails_in_its_own_words_with_the_fix(
        engine: Engine, torchvision_images: dict[str, str]) -> None:
    seen = inventory_of(engine, torchvision_images["mismatched"], imports=True)
    tv = seen["dists"]["torchvision"]
    assert tv["import"]["ok"] is False
    assert tv["import"]["error"] == "RuntimeError: operator torchvision::nms does not exist"
    assert any("_C.so: undefined symbol: _ZN3c10" in line for line in tv["import"]["loader"])
    assert not seen["judged"]["ready"]
    (found,) = [f for f in seen["judged"]["findings"] if f["title"].startswith("torchvision 0.28.0 does not import")]
    assert "it requires torch==2.13.0; torch 2.14.1 is installed" in found["evidence"]
    assert found["remediation"][0].startswith("pip install torchvision==0.29.1   # the torchvision release paired "
                                              "with torch 2.14.1")
