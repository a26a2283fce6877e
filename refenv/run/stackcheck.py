"""Each cell's stack: its environment's inventory (read once from the image) judged against the cell's host.

The extensions' own failures (an import, a pin, a CUDA major) hold on every host; a GPU whose architecture
no library of an extension serves, or a driver older than an extension's CUDA, only on some. The host is the
cell's driver profile (simulated, or the real machine's): its GPUs with GPU access, none without. Those are
judged only where torch itself got the GPU: elsewhere torch's own verdict stands first, with its own fix, and
an extension's needs on that host would only repeat it (pure).
"""

from __future__ import annotations

from harness.schema.stack_document import Gpu, Host, Inventory
from harness.stack.findings import judge
from refenv.model.matrix import Scenario
from refenv.model.profiles import Profile
from refenv.model.records import StackCheck


def host_of(profile: Profile | None, scenario: Scenario) -> Host:
    """The host as the stack is judged against it: the driver's CUDA, and the GPUs a container with access sees."""
    if profile is None:
        return Host()
    gpus = tuple(Gpu(g.name, g.compute_capability) for g in profile.gpus if g.compute_capability) \
        if scenario.gpu_access else ()
    return Host(gpus, profile.cuda_driver_version)


def check(inventory: Inventory | None, profile: Profile | None, scenario: Scenario,
          torch_ok: bool = True) -> StackCheck | None:
    """The cell's stack judgement (against its host where `torch_ok`); None when the stack was not read."""
    if inventory is None:
        return None
    return judge(inventory, host_of(profile, scenario) if torch_ok else Host())
