"""What a cluster backend leaves to the local engine: building and finding images, and its inventory.

The cells go to the scheduler; the images they run are built (or found) by the engine on this machine,
as for a local run.
"""

from __future__ import annotations

from refenv.engines.seam import CellEngine, ContainerSpec, ImageRequest, Inventory, Progress, RunOutcome
from refenv.errors import NoGpuRuntime
from refenv.model.builds import EnvBuild


class OnLocalEngine:
    """The image side of a cluster engine, delegated to `local`."""

    def __init__(self, local: CellEngine) -> None:
        self.local = local

    def inventory(self) -> Inventory:
        return self.local.inventory()

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        return self.local.ensure_image(request, progress)

    def image_id(self, ref: str) -> str | None:
        return self.local.image_id(ref)

    def image_labels(self, ref: str) -> dict[str, str] | None:
        return self.local.image_labels(ref)

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        return self.local.run_here(spec, timeout)

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        return self.local.gpu_runtime_error(image)
