"""Device nodes that exist but do not open: the device cgroup after daemon-reload, a stale spec's nvidia-uvm."""

from __future__ import annotations

from harness.classify import classify
from harness.intake.source import parse_text
from harness.schema import DRIVER_BROKEN
from tests.unit.facts_builder import UNAVAILABLE, healthy

UNKNOWN = ("CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable "
           "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.")
NODES = ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"]
CUINIT_999 = {"cuinit": 999, "cuinit_name": "CUDA_ERROR_UNKNOWN", "cuinit_message": "unknown error"}


def test_a_device_cgroup_that_denies_the_nodes_is_driver_broken_with_its_workaround() -> None:
    facts = healthy(in_container=True,
                    driver={"dev_nodes": NODES, "dev_access": {n: "EPERM: Operation not permitted" for n in NODES},
                            "libcuda": CUINIT_999,
                            "nvml": {"init_error": "Unknown Error", "init_error_code": 999, "devices": None},
                            "nvidia_smi": {"works": False, "output": "Failed to initialize NVML: Unknown Error"}},
                    torch={**UNAVAILABLE, "init_warning": UNKNOWN})
    diag = classify(facts)  # type: ignore[arg-type]
    assert diag.verdict == DRIVER_BROKEN
    first = diag.findings[0]
    assert "may not be opened in this container" in first.title
    assert "/dev/nvidiactl: EPERM: Operation not permitted" in first.evidence
    assert "NVML init: Unknown Error" in first.evidence
    assert first.remedy is not None and first.remedy.kind == "restore_device_access"
    assert any("restart the container" in line for line in first.remediation)
    assert any("create-dev-char-symlinks" in line for line in first.remediation)
    # One finding stands for the driver layer: NVML's and cuInit's failures are its evidence.
    assert sum(f.layer == "driver" and f.verdict == DRIVER_BROKEN for f in diag.findings) == 1


def test_an_uvm_node_reaching_no_driver_is_a_stale_spec_in_a_container() -> None:
    access = {n: "ok" for n in NODES}
    access["/dev/nvidia-uvm"] = "ENXIO: No such device or address"
    facts = healthy(in_container=True, driver={"dev_nodes": NODES, "dev_access": access, "libcuda": CUINIT_999},
                    torch={**UNAVAILABLE, "init_warning": UNKNOWN})
    diag = classify(facts)  # type: ignore[arg-type]
    first = diag.findings[0]
    assert diag.verdict == DRIVER_BROKEN and "/dev/nvidia-uvm" in first.title
    assert first.remedy is not None and first.remedy.kind == "generate_cdi_spec"
    assert any("nvidia-ctk cdi generate" in line for line in first.remediation)
    assert "NVML and nvidia-smi work: the driver is loaded" in first.evidence
    # On a bare host the same nodes mean an unloaded nvidia_uvm.
    bare = classify(healthy(driver={"dev_nodes": NODES[1:], "dev_access": {n: "ok" for n in NODES[1:]},  # type: ignore[arg-type]
                                    "libcuda": CUINIT_999}, torch={**UNAVAILABLE, "init_warning": UNKNOWN}))
    assert bare.findings[0].remedy is not None and bare.findings[0].remedy.kind == "reload_modules"


def test_healthy_nodes_change_nothing() -> None:
    facts = healthy(driver={"dev_nodes": NODES, "dev_access": {n: "ok" for n in NODES}})
    assert classify(facts).verdict == "OK"  # type: ignore[arg-type]


def test_the_reader_knows_the_toolkits_failures() -> None:
    for text in ("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all",
                 'docker: Error response from daemon: could not select device driver "cdi" with capabilities: [].'):
        report = parse_text(text)
        assert any("refused the container's CDI devices" in n for n in report.notes), report.notes
    report = parse_text("after `sudo systemctl daemon-reload` nvidia-smi in the container says\n"
                        "Failed to initialize NVML: Unknown Error\n")
    diag = classify(report.facts)
    assert diag.verdict == DRIVER_BROKEN, diag
    assert any("restart the container" in line for line in diag.findings[0].remediation), diag.findings[0]
