"""A built simulated driver's files (where they are) and the variables that make a process load them.

The builder (refenv/builder/simdriver.py) makes them; the planners and the predictor only name them (which
libraries a container gets, not how they were compiled), so they import this record, not the builder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The variable that names a simulated PCI bus to the harness (harness/gather/pci.py SIMULATED_ROOT_ENV).
SIMULATED_PCI_ENV = "REFENV_SIMULATED_PCI"


@dataclass(frozen=True)
class SimDriver:
    """A built simulated driver: the directory to put on LD_LIBRARY_PATH and the three files in it."""

    root: Path
    libcuda: Path
    libnvidia_ml: Path
    nvidia_smi: Path
    digest: str
    glibc: str | None = None   # the newest GLIBC_x.y version node the three files need (elfneeds)
    built_in: str = ""         # where it was compiled: "Debian bullseye (glibc 2.31)" or "this machine (...)"

    def env(self, config: Path | str, pci: Path | str | None = None) -> dict[str, str]:
        """Variables that make a host process load this driver with the configuration at `config`, and (with
        `pci`, a tree `write_pci_view` wrote) read the simulated host's PCI bus instead of this machine's."""
        out = {"LD_LIBRARY_PATH": str(self.root), "REFENV_SIMDRIVER_CONF": str(config)}
        if pci is not None:
            out[SIMULATED_PCI_ENV] = str(pci)
        return out

