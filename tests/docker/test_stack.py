"""The stack inventory on real wheels: torch's own libraries, and the default cu130 image's torchvision and torchaudio.

The architectures read from the ELF fatbins of a real torch build must be the list that build reports
(`torch.cuda.get_arch_list()`, or `torch._C._cuda_getArchFlags()` where the former needs a GPU), SASS and PTX
told apart; torchvision's and torchaudio's are read the same way from the same image (matrix.yaml's
torch-2.14.1-cu130 carries them). A torchvision built for another torch is run as a matrix cell in
tests/docker/test_team_images.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from tests.docker.support import CU128, CU130, JSON_MARK, python_in_image

INVENTORY = f"""
import json
import torch
from harness.stack.inventory import inventory
from harness.stack.findings import judge
from harness.schema.jsondata import decode, encode
from harness.schema.stack_document import Inventory
listed = torch.cuda.get_arch_list() or torch._C._cuda_getArchFlags().split()
found = encode(inventory(imports=IMPORTS))
print({JSON_MARK!r} + json.dumps({{"listed": listed, "inventory": found, "judged": encode(judge(decode(Inventory, found))),
                                   "dists": {{d["key"]: d for d in found["distributions"]}}}}))
"""


def inventory_of(engine: Engine, image: str, imports: bool) -> dict[str, Any]:
    return python_in_image(engine, image, INVENTORY.replace("IMPORTS", str(imports)), timeout=300)


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


def test_a_real_torchvision_and_torchaudio_are_read_the_same_way(engine: Engine,
                                                                 env_builds: dict[str, EnvBuild]) -> None:
    seen = inventory_of(engine, str(env_builds[CU130].tag), imports=True)
    newest = seen["listed"][-1]
    # torchvision's and torchaudio's wheels are built for torch's architecture list, the newest also as PTX
    # (TORCH_CUDA_ARCH_LIST '...;12.0+PTX' in their release builds)
    for name, version, cuda in (("torchvision", "0.29.1", "13.0"), ("torchaudio", "2.11.1", "13.2")):
        d = seen["dists"][name]
        assert d["arch"] == [*seen["listed"], newest.replace("sm_", "compute_")], name
        assert (d["version"], d["built_for"]["cuda"]) == (version, cuda)
        assert d["import"]["ok"] is True, d["import"]
        assert any(lib["ptx_isa"] for lib in d["libraries"]), name
    assert {"name": "torch", "spec": ">=2.14.0"} in seen["dists"]["torchvision"]["requires"]
    assert seen["judged"]["ready"] is True, seen["judged"]["findings"]
