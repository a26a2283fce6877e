"""The `stack` section of a harness document: the inventory, the host it was judged against, the judgement.

`diagnose --stack`, `cell --stack on` and `stack` write the same shape (harness/schema/stack_document.py);
`judged` re-judges a saved inventory against other facts (the host side does so for each cell of an
environment inventoried once).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import document
from harness.facts import Facts
from harness.schema.envelope import Failed, StackSection
from harness.schema.stack_document import Gpu, Host, Inventory, JudgedStack
from harness.stack.findings import host_of, judge


def judged(inventory: Inventory, host: Host) -> JudgedStack:
    return JudgedStack.of_parts(inventory, host, judge(inventory, host))


def host_from(facts: Facts | None, capabilities: Sequence[str] = (), driver_cuda: int | None = None) -> Host:
    """The host of these facts, with named capabilities and a driver CUDA version added (`stack --capability`)."""
    base = host_of(facts) if facts is not None else Host()
    gpus = base.gpus + tuple(Gpu("the named GPU", cc) for cc in capabilities)
    return Host(gpus, driver_cuda if driver_cuda is not None else base.driver_cuda)


def stack_section(facts: Facts | None, import_timeout: float) -> StackSection:
    """Inventory this environment and judge it against these facts; a failure is recorded, never raised."""
    from harness.stack.inventory import inventory

    try:
        return judged(inventory(import_timeout=import_timeout), host_from(facts))
    except Exception as exc:  # the stack is a section of the document: its failure must not lose the diagnosis
        return Failed(document.error_of(exc))
