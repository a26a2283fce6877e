"""`invoke reproduce --torch ... --driver ...`: the same inference from flags instead of a report (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness import compat
from refenv.faults import FAULTS
from refenv.profiles import Faults
from refenv.reproduce.gpus import GpuGuess
from refenv.reproduce.model import Inferred, ReproduceError

_TORCH_RE = re.compile(r"^(\d+\.\d+\.\d+)(?:\+(cpu|cu\d{3,4}))?$")
_DRIVER_RE = re.compile(r"^\d{3}\.\d{1,3}(\.\d{1,3})?$")
_PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
_COUNT_RE = re.compile(r"^(\d+)\s*[x×]\s*(.+)$")
__all__ = ["FAULTS", "from_flags", "parse_gpus"]  # FAULTS: the names --fault takes (refenv/faults.py)


def parse_gpus(names: Sequence[str]) -> tuple[GpuGuess, ...]:
    """--gpu values: a name, or 'N x NAME' for N of them."""
    out: list[GpuGuess] = []
    for raw in names:
        text = raw.strip()
        if not text:
            raise ReproduceError("--gpu: expected a GPU name such as 'Tesla T4' or '2 x NVIDIA A100-SXM4-80GB'")
        m = _COUNT_RE.match(text)
        count, name = (int(m.group(1)), m.group(2).strip()) if m else (1, text)
        if not 1 <= count <= 16:
            raise ReproduceError(f"--gpu {raw!r}: expected between 1 and 16 GPUs")
        out.extend(GpuGuess(name) for _ in range(count))
    return tuple(out)


def from_flags(torch: str, driver: str | None = None, gpus: Sequence[str] = (), cuda_visible_devices: str | None = None,
               python: str | None = None, no_gpus: bool = False, fault: str | None = None) -> Inferred:
    """The stack the flags describe; ReproduceError naming the flag that is malformed."""
    m = _TORCH_RE.match(torch.strip())
    if not m:
        raise ReproduceError(f"--torch {torch!r}: expected a release such as 2.1.0 or 2.1.0+cu121 (or +cpu)")
    version, variant = m.group(1), m.group(2)
    evidence = [f"torch {torch} (--torch)"]
    if variant is None:
        release = compat.torch_release(version)
        if release is None:
            raise ReproduceError(f"--torch {torch}: not in refenv's tables, so its default build is unknown: "
                                 "name the variant (e.g. +cu121)")
        variant = compat.cuda_variant(release.default_cuda)
        evidence.append(f"variant {variant}: PyPI's default build of torch {release.series}")
    if driver is not None and not _DRIVER_RE.match(driver.strip()):
        raise ReproduceError(f"--driver {driver!r}: expected a Linux driver version such as 470.182.03")
    if driver is not None and compat.cuda_for_driver(driver) is None:
        raise ReproduceError(f"--driver {driver}: older than every driver branch in refenv's tables")
    if python is not None and not _PYTHON_RE.match(python.strip()):
        raise ReproduceError(f"--python {python!r}: expected MAJOR.MINOR such as 3.10")
    if fault is not None and fault not in FAULTS:
        raise ReproduceError(f"--fault {fault!r}: expected one of {', '.join(FAULTS)}")
    env: tuple[tuple[str, str], ...] = ()
    if cuda_visible_devices is not None:
        env = (("CUDA_VISIBLE_DEVICES", cuda_visible_devices),)
        evidence.append(f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} (--cuda-visible-devices)")
    if driver is None:
        evidence.append("no --driver: a host without an NVIDIA driver")
    else:
        evidence.append(f"driver {driver} (--driver)")
    if no_gpus:
        evidence.append("a container started without GPU access (--no-gpus)")
    dcv = compat.cuda_to_int(compat.cuda_for_driver(driver) or "0.0") if driver else None
    return Inferred(version, variant, python.strip() if python else None, "Linux", driver.strip() if driver else None,
                    dcv, parse_gpus(gpus), FAULTS[fault] if fault else Faults(), driver is None and not no_gpus,
                    not no_gpus, env, tuple(evidence), None)
