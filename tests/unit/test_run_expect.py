"""Expected verdicts from the compatibility rules alone (refenv.run.expect), checked against the facts they encode.

The figures are shared/facts: a CUDA 13 runtime needs a driver reporting 13000 (R580), a CUDA 12 one
12000 (R525); R570 reports 12080 and R470 11040; cu130 wheels start at Turing (sm_75), cu128 at Volta.
"""

from __future__ import annotations

import pytest

from harness import compat
from harness.schema import (
    ARCH_UNSUPPORTED,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    VERDICTS,
)
from refenv.model import profiles
from refenv.model.matrix import Environment, Host, Scenario
from refenv.model.records import Expected
from refenv.run.expect import expect, selection

# torch's own words for each cause (shared/facts/torch-failures.md), written out here rather than taken
# from refenv.run.expect, so that a wrong phrase there fails these tests.
NOT_COMPILED = "Torch not compiled with CUDA enabled"
NO_GPUS = "No CUDA GPUs are available"
TORCH_SAYS = {
    3: "CUDA driver initialization failed, you might not have a CUDA gpu.",
    34: "Error 34: CUDA driver is a stub library",
    803: "Error 803: system has unsupported display driver / cuda driver combination",
    804: "Error 804: forward compatibility was attempted on non supported HW",
    999: "CUDA unknown error - this may be due to an incorrectly set up environment",
}

TOO_OLD = ("The NVIDIA driver on your system is too old (found version {version}). Please update your GPU driver by "
           "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
           "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
           "version of the CUDA driver.")

CU130 = Environment("cu130", "2.14.1", "cu130")
CU128 = Environment("cu128", "2.10.0", "cu128")
CPU = Environment("cpu", "2.13.0", "cpu")
NONE = Host("none", "none")
GPU = Scenario("gpu", "all")
NO_GPU = Scenario("no-gpu", "none")


def on(env: Environment, profile: str, scenario: Scenario = GPU) -> Expected:
    return expect(env, Host(profile, "simulated", profile), profiles.get(profile), scenario)


def env_scenario(**env: str) -> Scenario:
    return Scenario("s", "all", tuple(env.items()))


@pytest.mark.parametrize(("env", "profile", "version"), [(CU130, "r570", 12080), (CU130, "r535", 12020),
                                                         (CU130, "r470", 11040), (CU128, "r470", 11040)])
def test_a_runtime_newer_than_the_driver_is_too_old(env: Environment, profile: str, version: int) -> None:
    got = on(env, profile)
    assert got.verdict == DRIVER_TOO_OLD
    assert got.torch_text and f"found version {version}" in got.torch_text
    assert got.torch_text == TOO_OLD.format(version=version)
    assert not compat.runtime_accepts(str(env.cuda), version)


@pytest.mark.parametrize(("env", "profile"), [(CU130, "r580"), (CU128, "r535"), (CU128, "r525"), (CU128, "r580")])
def test_a_driver_the_runtime_accepts_is_ok(env: Environment, profile: str) -> None:
    got = on(env, profile)
    assert got == Expected(OK, (), None, got.reason)
    assert "simulated" in got.reason


def test_no_driver_injected_is_not_visible() -> None:
    assert expect(CU130, NONE, None, GPU).verdict == NOT_VISIBLE
    assert on(CU130, "r580", NO_GPU).verdict == NOT_VISIBLE
    assert on(CU130, "r580", env_scenario(NVIDIA_VISIBLE_DEVICES="void")).verdict == NOT_VISIBLE


def test_a_cpu_wheel_says_so_first() -> None:
    got = on(CPU, "r580")
    assert got.verdict == CPU_WHEEL and got.verdicts == (CPU_WHEEL,) and got.torch_text == NOT_COMPILED
    nowhere = expect(CPU, NONE, None, GPU)
    assert nowhere.verdicts == (CPU_WHEEL, NOT_VISIBLE) and nowhere.torch_text == NOT_COMPILED


@pytest.mark.parametrize("value", ["", "-1", "7", "GPU-00000000-dead-beef-0000-000000000000", "2,0"])
def test_cuda_visible_devices_that_hide_every_gpu(value: str) -> None:
    got = on(CU130, "r580", env_scenario(CUDA_VISIBLE_DEVICES=value))
    assert got.verdict == NOT_VISIBLE and got.torch_text == NO_GPUS


@pytest.mark.parametrize("value", ["1", "0,7", profiles.get("r580").gpus[1].uuid])
def test_cuda_visible_devices_that_keep_a_gpu(value: str) -> None:
    assert on(CU130, "r580", env_scenario(CUDA_VISIBLE_DEVICES=value)).verdict == OK


@pytest.mark.parametrize(("profile", "code"), [("r580-cuinit-999", 999), ("r580-cuinit-3", 3), ("r580-stub", 34),
                                               ("r580-forward-compat", 804), ("r580-cuinit-803", 803),
                                               ("r580-mismatch", 803)])
def test_driver_faults_are_broken_with_torchs_phrase(profile: str, code: int) -> None:
    got = on(CU130, profile)
    assert got.verdict == DRIVER_BROKEN and got.torch_text and TORCH_SAYS[code] in got.torch_text
    # A broken driver hides nothing else: the same host with every GPU hidden is still broken first.
    hidden = on(CU130, profile, env_scenario(CUDA_VISIBLE_DEVICES=""))
    assert hidden.verdict == DRIVER_BROKEN and hidden.torch_text == got.torch_text


def test_nvml_failing_to_start_is_broken_even_for_a_cpu_wheel() -> None:
    got = on(CPU, "r580-mismatch")
    assert got.verdict == DRIVER_BROKEN and CPU_WHEEL in got.verdicts
    assert "NVML" in got.reason


def test_utility_capability_is_not_visible_yet_nvml_still_judges_the_driver() -> None:
    utility = env_scenario(NVIDIA_DRIVER_CAPABILITIES="utility")
    assert on(CU130, "r580", utility).verdict == NOT_VISIBLE
    old = on(CU130, "r470", utility)
    # R470's V100s (7.0) are older than the cu130 wheel's first architecture (sm_75), which NVML tells too.
    assert old.verdicts == (DRIVER_TOO_OLD, NOT_VISIBLE, ARCH_UNSUPPORTED)
    assert old.torch_text is None, "without libcuda the runtime never reports the driver's version"


@pytest.mark.parametrize("env", [CU130, CU128])
def test_a_pascal_gpu_is_not_in_either_wheel(env: Environment) -> None:
    got = on(env, "r580-pascal")
    assert got.verdict == ARCH_UNSUPPORTED and "6.1" in got.reason
    assert on(env, "r580-pascal", env_scenario(CUDA_VISIBLE_DEVICES="")).verdict == NOT_VISIBLE


def test_an_unknown_device_stops_the_container() -> None:
    got = on(CU130, "r580", env_scenario(NVIDIA_VISIBLE_DEVICES="5"))
    assert got.verdict == "" and "cannot start" in got.reason and "unknown device" in got.reason


@pytest.mark.parametrize("profile", profiles.names())
@pytest.mark.parametrize("env", [CU130, CU128, CPU])
def test_every_prediction_is_ordered_like_the_verdicts(env: Environment, profile: str) -> None:
    got = on(env, profile)
    if profiles.get(profile).faults.no_runtime:  # the engine refuses --gpus: nothing to order
        assert got.verdict == "" and "cannot start" in got.reason and "could not select device driver" in got.reason
        return
    assert got.verdict in VERDICTS
    assert list(got.verdicts) == sorted(set(got.verdicts), key=VERDICTS.index)
    assert got.verdict == (got.verdicts[0] if got.verdicts else OK)
    assert got.reason


def test_the_gpus_selection_follows_the_scenario() -> None:
    assert selection(GPU) == "all"
    assert selection(Scenario("d", "device=0,1")) == "0,1"
    assert selection(env_scenario(NVIDIA_VISIBLE_DEVICES="1")) is None


# ---- a real host without a working driver is predicted from its PCI bus, as the harness reads it there ----------

REAL = Host("real", "real")
VIRTIO_ONLY = (profiles.PciDevice("0000:00:01.0", "0x1af4", "0x010000", "virtio-pci"),
               profiles.PciDevice("0000:00:02.0", "0x1234", "0x030000", "bochs-drm"))
NOUVEAU = (profiles.PciDevice("0000:18:00.0", profiles.NVIDIA_VENDOR, "0x030000", "nouveau"),)
UNBOUND = (profiles.PciDevice("0000:18:00.0", profiles.NVIDIA_VENDOR, profiles.GPU_CLASS, None),)


@pytest.mark.parametrize("env", [CU130, CPU])
def test_a_real_host_whose_bus_has_no_nvidia_gpu_is_no_driver_first(env: Environment) -> None:
    e = expect(env, REAL, None, NO_GPU, VIRTIO_ONLY)
    assert e.verdict == NO_DRIVER, e
    assert NOT_VISIBLE not in e.verdicts, "no access would help where there is no GPU"
    assert (CPU_WHEEL in e.verdicts) == (env.cuda is None)
    assert expect(env, REAL, None, env_scenario(CUDA_VISIBLE_DEVICES=""), VIRTIO_ONLY).verdict == NO_DRIVER


@pytest.mark.parametrize("bus", [NOUVEAU, UNBOUND])
def test_a_real_host_whose_gpu_another_driver_holds_is_the_driver_layer(bus: tuple[profiles.PciDevice, ...]) -> None:
    e = expect(CU130, REAL, None, NO_GPU, bus)
    assert e.verdict == DRIVER_BROKEN, e
    assert "bound to" in e.reason


def test_an_unread_bus_predicts_as_before() -> None:
    assert expect(CU130, REAL, None, NO_GPU, None) == expect(CU130, REAL, None, NO_GPU)
    assert expect(CPU, REAL, None, NO_GPU).verdict == CPU_WHEEL
