"""The built images: what their labels say is what is inside, the arch tables match the wheels, no root."""

from __future__ import annotations

from typing import Any

import pytest

from harness import __version__ as harness_version
from harness import compat
from refenv.builder.images import UID
from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Matrix
from tests.docker.support import CPU, CU128, CU130, JSON_MARK, python_in_image

# Read inside the image, by the image's own Python and user.
INSIDE = f"""
import json, os, sys
from importlib import metadata
import torch
import harness
flags = torch._C._cuda_getArchFlags() if torch.version.cuda else None
print({JSON_MARK!r} + json.dumps({{"uid": os.getuid(), "gid": os.getgid(),
    "python": "%d.%d" % sys.version_info[:2], "torch": torch.__version__, "torch_dist": metadata.version("torch"), "cuda": torch.version.cuda,
    "arch_flags": flags, "harness": harness.__version__}}))
"""


@pytest.fixture(scope="module")
def inside(engine: Engine, env_builds: dict[str, EnvBuild]) -> dict[str, dict[str, Any]]:
    """What each default image says about itself from inside, by environment."""
    return {name: python_in_image(engine, str(build.tag), INSIDE) for name, build in env_builds.items()}


@pytest.mark.parametrize("env", [CU130, CU128])
def test_the_arch_table_agrees_with_the_wheel(inside: dict[str, dict[str, Any]], default_matrix: Matrix,
                                              env: str) -> None:
    e = default_matrix.environment(env)
    seen = inside[env]
    assert seen["cuda"] == e.cuda
    assert compat.parse_arch_list(seen["arch_flags"]) == compat.arch_list(seen["torch"], seen["cuda"])


@pytest.mark.parametrize("env", [CU130, CU128, CPU])
def test_the_labels_say_what_is_inside(engine: Engine, env_builds: dict[str, EnvBuild],
                                       inside: dict[str, dict[str, Any]], default_matrix: Matrix, env: str) -> None:
    labels = engine.image_labels(str(env_builds[env].tag))
    assert labels is not None
    seen = inside[env]
    # What torch.__version__ says (PyPI's CUDA wheels are installed as 2.10.0; torch itself adds +cu128).
    assert labels["refenv.torch"] == seen["torch"]
    assert compat.public_version(labels["refenv.torch"]) == compat.public_version(seen["torch_dist"])
    assert labels["refenv.variant"] == compat.variant_of(seen["torch"], seen["cuda"])
    assert labels["refenv.python"] == seen["python"] == default_matrix.environment(env).python
    assert labels["refenv.harness-version"] == seen["harness"] == harness_version
    assert labels["refenv.content-hash"] == env_builds[env].content_hash
    if seen["cuda"] is None:
        assert labels["refenv.cuda"] == "none" and labels["refenv.min-driver"] == "none"
        return
    assert labels["refenv.cuda"] == seen["cuda"]
    # The oldest driver the bundled runtime starts on (minor-version compatibility, shared/facts/cuda-compat.md).
    floor = compat.minor_floor(compat.parse_version(seen["cuda"])[0])
    assert floor is not None and labels["refenv.min-driver"] == floor[0]
    assert labels["refenv.min-driver-full"] == compat.min_driver_for_cuda(seen["cuda"])


@pytest.mark.parametrize("env", [CU130, CU128, CPU])
def test_the_container_runs_as_a_user_not_root(inside: dict[str, dict[str, Any]], env: str) -> None:
    assert inside[env]["uid"] == UID and inside[env]["gid"] == UID
    assert inside[env]["uid"] != 0
