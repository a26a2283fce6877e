"""`invoke reproduce --torch ... --driver ...`: the same inference from flags instead of a report (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness import compat
from harness.inputs import InputError, shorten
from refenv.model import accepts
from refenv.model.faults import FAULTS
from refenv.model.profiles import MAX_GPUS, Faults, gpu_name_problem
from refenv.reproduce import drivers
from refenv.reproduce.gpus import GpuGuess
from refenv.reproduce.values import Inferred, ReproduceError

# Matched whole (fullmatch), in ASCII digits: "２.1.0" and a trailing newline are not versions.
_TORCH_RE = re.compile(r"([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})(?:\+(cpu|cu[0-9]{3,4}))?")
_PYTHON_RE = re.compile(r"3\.[0-9]{1,2}")
# 'N x NAME': the count in any script's digits is found (and refused unless ASCII), never read as a name.
_COUNT_RE = re.compile(r"(\d+)[ \t]*[x×][ \t]*(.+)", re.DOTALL)
MAX_FLAG = 200  # characters: every flag value is a short name or version
MAX_PER_FLAG = 16  # GPUs one --gpu names ('16 x Tesla T4'), as the task's help says
MAX_GPU_FLAGS = 16  # --gpu given at most this often; MAX_GPUS (64) bounds the GPUs in all
__all__ = ["FAULTS", "from_flags", "parse_gpus"]  # FAULTS: the names --fault takes (refenv/model/faults.py)


def _check_lengths(**flags: str | None) -> None:
    for flag, value in flags.items():
        if value is not None and len(value) > MAX_FLAG:
            raise ReproduceError(f"--{flag}: longer than {MAX_FLAG} characters ({len(value)}): {shorten(value)}")


def parse_gpus(names: Sequence[str]) -> tuple[GpuGuess, ...]:
    """--gpu values: a name, or 'N x NAME' for N of them."""
    if len(names) > MAX_GPU_FLAGS:
        raise ReproduceError(f"--gpu: given {len(names)} times; at most {MAX_GPU_FLAGS} (each 'N x NAME' with N up to "
                             f"{MAX_PER_FLAG}, {MAX_GPUS} GPUs in all)")
    out: list[GpuGuess] = []
    for raw in names:
        text = raw.strip(" \t")
        if not text:
            raise ReproduceError("--gpu: expected a GPU name such as 'Tesla T4' or '2 x NVIDIA A100-SXM4-80GB'")
        m = _COUNT_RE.fullmatch(text)
        digits = m.group(1) if m else "1"
        if not digits.isascii() or len(digits) > 3 or not 1 <= int(digits) <= MAX_PER_FLAG:
            raise ReproduceError(f"--gpu {shorten(raw)}: expected a count of 1 to {MAX_PER_FLAG} GPUs in ASCII digits "
                                 "('2 x Tesla T4')")
        count, name = (int(digits), m.group(2).strip(" \t")) if m else (1, text)
        # The name is written into the simulated driver's key=value configuration.
        problem = gpu_name_problem(name)
        if problem:
            raise ReproduceError(f"--gpu {shorten(raw)}: {problem}")
        out.extend(GpuGuess(name) for _ in range(count))
        if len(out) > MAX_GPUS:
            raise ReproduceError(f"--gpu: {len(out)} GPUs or more; the simulated driver holds at most {MAX_GPUS}")
    return tuple(out)


def from_flags(torch: str, driver: str | None = None, gpus: Sequence[str] = (), cuda_visible_devices: str | None = None,
               python: str | None = None, no_gpus: bool = False, fault: str | None = None) -> Inferred:
    """The stack the flags describe; ReproduceError naming the flag that is malformed."""
    _check_lengths(torch=torch, driver=driver, python=python, fault=fault)
    m = _TORCH_RE.fullmatch(torch.strip(" "))
    if not m:
        raise ReproduceError(f"--torch {shorten(torch)}: expected a release such as 2.1.0 or 2.1.0+cu121 (or +cpu)")
    version, variant = m.group(1), m.group(2)
    evidence = [f"torch {torch} (--torch)"]
    if variant is None:
        release = compat.torch_release(version)
        if release is None:
            raise ReproduceError(f"--torch {torch}: not in refenv's tables, so its default build is unknown: "
                                 "name the variant (e.g. +cu121)")
        variant = compat.cuda_variant(release.default_cuda)
        evidence.append(f"variant {variant}: PyPI's default build of torch {release.series}")
    why = drivers.problem(driver.strip(" ")) if driver is not None else None
    if driver is not None and why:
        raise ReproduceError(f"--driver {shorten(driver)}: {why}")
    if python is not None and not _PYTHON_RE.fullmatch(python.strip(" ")):
        raise ReproduceError(f"--python {shorten(python)}: expected MAJOR.MINOR such as 3.10")
    if fault is not None and fault not in FAULTS:
        raise ReproduceError(f"--fault {shorten(fault)}: expected one of {', '.join(FAULTS)}")
    env: tuple[tuple[str, str], ...] = ()
    if cuda_visible_devices is not None:
        try:
            accepts.env_value(cuda_visible_devices, "--cuda-visible-devices")
        except InputError as exc:
            raise ReproduceError(str(exc)) from None
        env = (("CUDA_VISIBLE_DEVICES", cuda_visible_devices),)
        evidence.append(f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} (--cuda-visible-devices)")
    if driver is None:
        evidence.append("no --driver: a host without an NVIDIA driver")
    else:
        evidence.append(f"driver {driver} (--driver)")
    if no_gpus:
        evidence.append("a container started without GPU access (--no-gpus)")
    dcv = compat.cuda_to_int(compat.cuda_for_driver(driver) or "0.0") if driver else None
    return Inferred(version, variant, python.strip(" ") if python else None, "Linux",
                    driver.strip(" ") if driver else None,
                    dcv, parse_gpus(gpus), FAULTS[fault] if fault else Faults(), driver is None and not no_gpus,
                    not no_gpus, env, tuple(evidence), None)
