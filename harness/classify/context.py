"""Values derived from the facts that several checks need (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from harness import compat
from harness.catalogue import Hit, scan_text
from harness.facts import (
    DriverFacts,
    Facts,
    GpuFact,
    LibcudaFact,
    NvmlFact,
    SimulatedDriver,
    SimulatedStage,
    SmiFact,
    TorchFacts,
    VisibilityFacts,
    driver_of,
    host_of,
    libcuda_of,
    nvml_of,
    smi_of,
    torch_of,
    torch_texts,
    visibility_of,
)


@dataclass(frozen=True)
class Context:
    facts: Facts

    @property
    def driver(self) -> DriverFacts:
        return driver_of(self.facts)

    @property
    def libcuda(self) -> LibcudaFact:
        return libcuda_of(self.facts)

    @property
    def nvml(self) -> NvmlFact:
        return nvml_of(self.facts)

    @property
    def smi(self) -> SmiFact:
        return smi_of(self.facts)

    @property
    def torch(self) -> TorchFacts:
        return torch_of(self.facts)

    @property
    def vis(self) -> VisibilityFacts:
        return visibility_of(self.facts)

    @property
    def os_name(self) -> str | None:
        return host_of(self.facts).get("os")

    @property
    def in_container(self) -> bool | None:
        return self.vis.get("in_container")

    @property
    def torch_texts(self) -> str:
        """Everything torch said: the init warning, the init error, other warnings."""
        return torch_texts(self.facts)

    @property
    def torch_hits(self) -> list[Hit]:
        """The failure catalogue's messages in what torch said (harness.catalogue)."""
        return scan_text(self.torch_texts)

    def said(self, *ids: str) -> Hit | None:
        """The first of these catalogue entries torch said, if any."""
        return next((h for h in self.torch_hits if h.id in ids), None)

    @property
    def too_old_found(self) -> int | None:
        hit = self.said("torch.driver_too_old")
        return int(hit.params["found"]) if hit else None

    @property
    def driver_string(self) -> str | None:
        sim = (self.driver.get("simulated") or {}).get("libcuda") or {}
        return self.nvml.get("driver_version") or self.driver.get("kernel_module_version") or sim.get("driver_version")

    @property
    def driver_cuda_version(self) -> int | None:
        """The CUDA version the driver supports, from the best source available."""
        for value in (self.libcuda.get("driver_version"), self.nvml.get("cuda_driver_version"), self.too_old_found):
            if isinstance(value, int) and value > 0:
                return value
        drv = self.driver_string
        if drv and self.os_name in (None, "Linux"):
            try:
                cuda = compat.cuda_for_driver(drv)
            except ValueError:
                return None
            return compat.cuda_to_int(cuda) if cuda else None
        return None

    @property
    def gpus(self) -> list[GpuFact]:
        devices = self.nvml.get("devices")
        if devices:
            return list(devices)
        return list(self.torch.get("devices") or [])

    @property
    def simulated(self) -> SimulatedDriver | None:
        return self.driver.get("simulated")

    @property
    def stage(self) -> SimulatedStage:
        """The simulated driver's stage record from torch's own process."""
        sim = self.torch.get("simulated_stage") or {}
        return sim.get("stage") or {}

    @property
    def simulated_visible(self) -> list[int]:
        """The devices the simulated driver let this process see (after CUDA_VISIBLE_DEVICES)."""
        sim = self.torch.get("simulated_stage") or {}
        return list(sim.get("visible_devices") or [])

    @property
    def runtime_accepted_simulated(self) -> bool:
        """The runtime checked the driver's version, went on to cuInit, and it succeeded with devices."""
        stage = self.stage
        return (bool(stage.get("runtime_accepted")) and stage.get("cuinit_result") == 0
                and len(self.simulated_visible) > 0)

    @property
    def cpu_wheel(self) -> bool:
        t = self.torch
        version = t.get("version") or ""
        if version.endswith("+cpu") or self.said("torch.not_compiled"):
            return True
        return bool(t.get("importable")) and t.get("cuda") is None and not t.get("hip")


def fmt_driver(ctx: Context) -> str:
    parts = []
    if ctx.driver_string:
        parts.append(f"driver {ctx.driver_string}")
    if ctx.driver_cuda_version:
        parts.append(f"CUDA {compat.int_to_cuda(ctx.driver_cuda_version)} ({ctx.driver_cuda_version})")
    return ", ".join(parts) or "driver of unknown version"
