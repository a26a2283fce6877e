"""The `stack` section of a harness document: the inventory, the host it was judged against, the judgement.

`diagnose --stack`, `cell --stack on` and `stack` write the same shape; `judged` re-judges a saved inventory
against other facts (the host side does so for each cell of an environment inventoried once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness import document
from harness.facts import Facts
from harness.schema.jsondata import encode
from harness.stack.findings import Gpu, Host, host_of, judge


def host_dict(host: Host) -> dict[str, Any]:
    return {"gpus": [{"name": g.name, "compute_capability": g.capability} for g in host.gpus],
            "driver_cuda": host.driver_cuda}


def judged(inventory: dict[str, Any], host: Host) -> dict[str, Any]:
    return {"inventory": inventory, "host": host_dict(host), **judge(inventory, host).to_dict()}


def host_from(facts: Facts | None, capabilities: Sequence[str] = (), driver_cuda: int | None = None) -> Host:
    """The host of these facts, with named capabilities and a driver CUDA version added (`stack --capability`)."""
    base = host_of(facts) if facts is not None else Host()
    gpus = base.gpus + tuple(Gpu("the named GPU", cc) for cc in capabilities)
    return Host(gpus, driver_cuda if driver_cuda is not None else base.driver_cuda)


def stack_section(facts: Facts | None, import_timeout: float) -> dict[str, Any]:
    """Inventory this environment and judge it against these facts; a failure is recorded, never raised."""
    from harness.stack.inventory import inventory

    try:
        return judged(inventory(import_timeout=import_timeout), host_from(facts))
    except Exception as exc:  # the stack is a section of the document: its failure must not lose the diagnosis
        return {"error": encode(document.error_of(exc))}
