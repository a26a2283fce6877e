"""A cell's stack is judged against its host as a container of that scenario sees it (refenv/run/stackcheck.py)."""

from __future__ import annotations

from typing import Any

from harness.schema.jsondata import decode
from harness.schema.stack_document import Inventory
from refenv.model import profiles
from refenv.model.matrix import Scenario
from refenv.run.stackcheck import check, host_of

FA = {"name": "flash-attn", "key": "flash-attn", "version": "2.7.4", "kind": "extension", "requires": [],
      "built_for": {"cuda": "12.8"}, "import": {"ok": True},
      "libraries": [{"path": "flash_attn_2_cuda.so", "arch": ["sm_80", "sm_90"], "sets": [["sm_80", "sm_90"]],
                     "bundled": False, "links_torch": True}]}
TORCH = {"name": "torch", "key": "torch", "version": "2.10.0", "kind": "torch", "requires": [],
         "built_for": {"cuda": "12.8"}, "import": {"ok": True}, "libraries": []}


def inventory(*dists: dict[str, Any]) -> Inventory:
    """The inventory as the stack document writes it, read back through the codec."""
    return decode(Inventory, {"distributions": [TORCH, *dists]})


def test_the_host_is_the_profiles_gpus_with_access_and_none_without() -> None:
    p = profiles.get("r580")
    with_access, without = host_of(p, Scenario("gpu", "all")), host_of(p, Scenario("no-gpu", "none"))
    assert [g.compute_capability for g in with_access.gpus] == [g.compute_capability for g in p.gpus]
    assert without.gpus == () and without.driver_cuda == with_access.driver_cuda == p.cuda_driver_version
    assert host_of(None, Scenario("gpu", "all")).gpus == ()


def test_an_architecture_is_judged_on_the_hosts_gpu_only() -> None:
    assert check(None, profiles.get("r580"), Scenario("gpu", "all")) is None
    pascal = profiles.get("r580-pascal")  # a compute capability 6.1 GPU
    judged = check(inventory(FA), pascal, Scenario("gpu", "all"))
    assert judged is not None and not judged.ready and judged.status["flash-attn"] == "broken"
    assert "has no code for" in judged.errors[0].title
    hidden = check(inventory(FA), pascal, Scenario("no-gpu", "none"))
    assert hidden is not None and hidden.ready


def test_where_torch_gets_no_gpu_only_what_holds_on_every_host_is_judged() -> None:
    pascal = profiles.get("r580-pascal")
    judged = check(inventory(FA), pascal, Scenario("gpu", "all"), torch_ok=False)
    assert judged is not None and judged.ready  # the GPU's architecture is torch's verdict there first
