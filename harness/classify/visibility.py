"""The visibility layer: devices hidden by CUDA_VISIBLE_DEVICES or by how the container was started (pure)."""

from __future__ import annotations

from harness import catalogue, cvd
from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.schema import NOT_VISIBLE, SEVERITY_ERROR, SEVERITY_INFO, Finding, Remedy

LAYER = "visibility"
CUDA_ERROR_NO_DEVICE = catalogue.code_of("cuda.no_device")


def _uuids(ctx: Context) -> list[str] | None:
    devices = ctx.nvml.get("devices")
    if not devices or not all(d.get("uuid") for d in devices):
        return None if devices is None else ([] if devices == [] else None)
    return [str(d["uuid"]) for d in devices]


def _device_list(ctx: Context) -> str:
    devices = ctx.nvml.get("devices") or []
    return "; ".join(f"{d.get('index')}: {d.get('name')} {d.get('uuid')}" for d in devices)


def check_cuda_visible_devices(ctx: Context) -> list[Finding]:
    value = ctx.vis.get("cuda_visible_devices")
    if value is None:
        return []
    uuids = _uuids(ctx)
    if uuids:
        result = cvd.parse(value, uuids)
        if result.visible:
            severity_title = (f"CUDA_VISIBLE_DEVICES={value!r} shows {len(result.visible)} of {len(uuids)} devices"
                              if len(result.visible) < len(uuids) else f"CUDA_VISIBLE_DEVICES={value!r}")
            return [Finding("", SEVERITY_INFO, severity_title, (result.reason,), layer=LAYER)]
        reason: str | None = result.reason
    else:
        reason = cvd.hides_all_devices(value)
        if reason is None:
            return [Finding("", SEVERITY_INFO, f"CUDA_VISIBLE_DEVICES={value!r}",
                            ("the device list is unknown, so which devices it selects cannot be told",), layer=LAYER)]
    evidence = [str(reason)]
    if ctx.torch.get("device_count") == 0:
        evidence.append("torch.cuda.device_count() = 0, and torch says nothing about why")
    if ctx.torch.get("init_error"):
        evidence.append(f"torch.cuda.init(): {ctx.torch['init_error']}")
    remedy = Remedy("unset_variable").with_params(name="CUDA_VISIBLE_DEVICES", value=value,
                                                  devices=_device_list(ctx) or None)
    return [Finding(NOT_VISIBLE, SEVERITY_ERROR, "CUDA_VISIBLE_DEVICES hides every GPU", tuple(evidence),
                    render(remedy), LAYER, remedy)]


def check_no_device(ctx: Context) -> list[Finding]:
    """The driver loads but sees no device, while CUDA_VISIBLE_DEVICES is not to blame."""
    if ctx.vis.get("cuda_visible_devices") is not None:
        return []
    rc = ctx.libcuda.get("cuinit")
    devices = ctx.nvml.get("devices")
    if rc != CUDA_ERROR_NO_DEVICE and not (devices == [] and ctx.libcuda.get("loaded")):
        return []
    evidence = []
    if rc == CUDA_ERROR_NO_DEVICE:
        message = ctx.libcuda.get("cuinit_message") or catalogue.entry("cuda.no_device").text
        evidence.append(f"cuInit(0) = 100 ({message})")
    if devices == []:
        evidence.append("NVML lists no device")
    nvd = ctx.vis.get("nvidia_visible_devices")
    if ctx.in_container:
        if nvd is not None:
            evidence.append(f"NVIDIA_VISIBLE_DEVICES={nvd!r}")
        remedy = Remedy("expose_devices", (("where", "container"),))
        title = "the container has the driver but no GPU device"
    else:
        remedy = Remedy("expose_devices", (("where", "host"),))
        title = "the driver sees no GPU"
    return [Finding(NOT_VISIBLE, SEVERITY_ERROR, title, tuple(evidence), render(remedy), LAYER, remedy)]
