"""What a report could not tell, said as sentences the diagnosis can show beside its verdict."""

from __future__ import annotations

from typing import Any

from harness.intake.sections import PRINTED, Dump

# The facts the classifier leans on: (fact path, what it is, the collect_env field that tells it,
# or None where collect_env never does).
ASKED = (
    ("torch.version", "the torch version", "torch_version"),
    ("torch.cuda", "the CUDA version torch was built for", "cuda_built"),
    ("torch.is_available", "whether torch.cuda.is_available() is True", "cuda_available"),
    ("torch.cudart_version", "the CUDA runtime the wheel loads (cudart)", None),
    ("torch.arch_list", "the GPU architectures compiled into the wheel", None),
    ("torch.device_count", "how many devices torch counts", None),
    ("driver.nvml.driver_version", "the NVIDIA driver version", "driver"),
    ("driver.nvml.devices", "which GPUs the driver sees", "gpus"),
    ("driver.libcuda.loaded", "whether libcuda.so.1 loads", None),
    ("driver.libcuda.driver_version", "the CUDA version the driver supports (cuDriverGetVersion)", None),
    ("driver.libcuda.cuinit", "what cuInit(0) returns", None),
    ("visibility.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", None),
    ("visibility.nvidia_visible_devices", "NVIDIA_VISIBLE_DEVICES", None),
    ("visibility.in_container", "whether it ran in a container", None),
    ("host.os", "the operating system", "os"),
    ("host.python", "the Python version", "python"),
)
_CAPABILITY = "the GPUs' compute capability"
# In a gathered document a null variable is an observation: the variable was unset.
_OBSERVED_WHEN_NULL = ("visibility.cuda_visible_devices", "visibility.nvidia_visible_devices")


def _value(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _has_capability(facts: Any) -> bool:
    devices = (_value(facts, "driver.nvml.devices") or []) + (_value(facts, "torch.devices") or [])
    return any(isinstance(d, dict) and d.get("compute_capability") for d in devices)


def for_dump(facts: Any, observed: set[str], dump: Dump) -> list[str]:
    """Unknowns of a collect_env dump, each with the reason the dump cannot tell it."""
    found: list[str] = []
    if dump.missing:
        last = max((name for name in dump.fields), key=lambda n: list(PRINTED).index(n))
        found.append(f"the dump is cut off after '{PRINTED[last]}': "
                     + ", ".join(f"'{PRINTED[name]}'" for name in dump.missing) + " are missing")
    for path, what, name in ASKED:
        if path in observed:
            continue
        if name is None:
            found.append(f"{what}: collect_env does not say")
        elif name in dump.missing:
            found.append(f"{what}: the dump is cut off before '{PRINTED[name]}'")
        elif name in dump.fields:
            found.append(f"{what}: the dump says '{dump.fields[name].value or '(nothing)'}'")
        else:
            found.append(f"{what}: this dump has no '{PRINTED[name]}' line")
    if not _has_capability(facts):
        found.append(f"{_CAPABILITY}: collect_env prints GPU names only")
    return found


def for_document(facts: Any) -> list[str]:
    """Unknowns of a saved document: the asked-for facts it holds as null."""
    found = []
    for path, what, _ in ASKED:
        if path in _OBSERVED_WHEN_NULL or (path == "torch.cuda" and _value(facts, "torch.importable")):
            continue  # null here is an observation: unset, or a CPU-only build
        if _value(facts, path) is None:
            found.append(f"{what}: the saved document does not know it")
    if not _has_capability(facts):
        found.append(f"{_CAPABILITY}: the saved document does not know it")
    return found


def for_text(facts: Any, observed: set[str]) -> list[str]:
    """Unknowns of free text: every asked-for fact it does not state."""
    found = [f"{what}: the report does not say" for path, what, _ in ASKED if path not in observed]
    if not _has_capability(facts):
        found.append(f"{_CAPABILITY}: the report does not say")
    return found
