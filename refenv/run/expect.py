"""What each cell should report, predicted from the compatibility rules alone (pure).

The prediction walks the same stack the harness examines — what the container toolkit injects, the
driver's faults, the wheel's CUDA runtime against the driver's CUDA version, visibility, the compiled
architectures — using `harness.compat` and `harness.cvd`, the data and rules the harness itself uses,
so a disagreement means the model or the software stack changed, never two tables drifting apart.
"""

from __future__ import annotations

from pathlib import Path

from harness import catalogue, compat, cvd
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
from refenv.builder.driverfiles import SimDriver
from refenv.model import profiles
from refenv.model.cells import Expected
from refenv.model.matrix import Environment, Host, Scenario
from refenv.model.profiles import PciDevice, Profile
from refenv.run import cdi, toolkit
from refenv.run import injection as injection_of

# The placeholder driver: prediction needs to know which libraries are injected, not where they live.
_NOWHERE = Path("/nonexistent")
_DRIVER = SimDriver(_NOWHERE, _NOWHERE / "libcuda.so.1", _NOWHERE / "libnvidia-ml.so.1", _NOWHERE / "nvidia-smi", "")

selection = injection_of.selection  # the --gpus selection (kept here for the planners that import it)
VISIBILITY = injection_of.VISIBILITY
# The scenario as a container of an image sees it (refenv/run/injection.py): the matrix's plan and
# `refenv check` both predict through it, so an image's baked visibility variables count the same in both.
in_image = injection_of.in_image


def host_profile(host: Host, real: Profile | None) -> Profile | None:
    """The driver profile a host stands for: its inline or shipped simulated profile, or the real machine's."""
    if host.kind == "simulated" and host.inline is not None:
        return host.inline
    if host.kind == "simulated" and host.profile:
        return profiles.get(host.profile)
    if host.kind == "real":
        return real
    return None


def injection(profile: Profile, scenario: Scenario) -> toolkit.Injection:
    """What the container gets: by the toolkit (--gpus, NVIDIA_VISIBLE_DEVICES), or by CDI."""
    return injection_of.inject(profile, _DRIVER, scenario, config_host_path="/nonexistent/simdriver.conf")


def refused_gpus() -> str:
    """Docker's words for --gpus without the NVIDIA runtime (the failure catalogue's row)."""
    return catalogue.entry("docker.no_gpu_runtime").text.replace("{driver}", "")


def expect(env: Environment, host: Host, profile: Profile | None, scenario: Scenario,
           bus: tuple[PciDevice, ...] | None = None) -> Expected:
    """The expected primary verdict, every failing verdict, and the words torch's message must contain (the
    failure catalogue's text for this torch release, harness.catalogue). `bus` is the host's PCI bus where no
    profile stands for it (a real host without a working driver: the bus as read there); None, unknown."""
    verdicts: list[str] = []
    texts: list[str] = []
    reasons: list[str] = []
    if profile is None and scenario.devices:  # no driver, no toolkit, so no spec: the engine cannot resolve them
        return Expected("", (), None, f"the container cannot start: {cdi.unresolvable(scenario.devices)}")
    if profile is None:  # host `none`: nothing is injected
        libcuda = nvml = False
        gpus: tuple[tuple[str, str], ...] = ()
        nvml_error = cuinit_error = 0
        stub = hang = False
    else:
        if profile.faults.no_runtime and scenario.gpu_access and not scenario.devices:
            return Expected("", (), None, f"the container cannot start: the engine has no NVIDIA runtime "
                            f"({refused_gpus()})")
        try:
            inj = injection(profile, scenario)
        except toolkit.ToolkitError as exc:
            return Expected("", (), None, f"the container cannot start: {exc}")
        libcuda = any(m.container_path.endswith("/libcuda.so.1") for m in inj.mounts)
        nvml = any(m.container_path.endswith("/libnvidia-ml.so.1") for m in inj.mounts)
        gpus = tuple((g.uuid, g.compute_capability) for g in inj.gpus)
        faults = profile.faults
        nvml_error, cuinit_error, stub, hang = faults.nvml_init_error, faults.cuinit_error, faults.stub, \
            faults.cuinit_hang
        denied, uvm_dead = toolkit.node_state(inj)
        if denied:  # the control node cannot be opened: NVML "Unknown Error", cuInit 999 (refenv/images/simdriver)
            nvml_error, cuinit_error = 999, 999
        elif uvm_dead and cuinit_error in (0, 100):
            cuinit_error = 999
        if denied or uvm_dead:
            reasons.append("the device cgroup denies the GPU nodes" if denied else
                           "/dev/nvidia-uvm reaches no driver (a stale CDI spec)")

    # The PCI bus, which every container of the host sees (harness/classify/pci.py): no NVIDIA GPU at all, or one
    # another driver holds, is the driver layer whatever the container was given.
    view = profile.pci_devices if profile is not None else bus
    holder = profiles.gpu_holder(view) if view is not None else None
    if view is not None and not profiles.has_nvidia_gpu(view):
        verdicts.append(NO_DRIVER)
        reasons.append("the host's PCI bus shows no NVIDIA GPU")
    elif holder is not None:
        verdicts.append(DRIVER_BROKEN)  # cells run in containers: the host's driver is there, its GPU held
        reasons.append(f"the host's NVIDIA GPU is bound to {holder}, not nvidia")

    cvd_value = scenario.env_dict.get("CUDA_VISIBLE_DEVICES")
    visible = tuple(range(len(gpus))) if cvd_value is None else cvd.parse(cvd_value, [u for u, _ in gpus]).visible

    # Driver layer.
    nvml_works = nvml and not nvml_error
    # A hung driver's cuInit blocks once it has a GPU to bring up (refenv/images/simdriver/libcuda.c, hangs_here), and
    # torch.cuda.is_available() with it: nothing is printed, the harness reports the call it gave up on.
    hangs = libcuda and hang and not stub and cuinit_error == 0 and bool(visible)
    if hangs:
        verdicts.append(DRIVER_BROKEN)
        reasons.append("cuInit never returns (a hung driver or GPU), so torch.cuda.is_available() blocks")
    if nvml and nvml_error:
        verdicts.append(DRIVER_BROKEN)
        reasons.append(f"NVML fails to initialise (error {nvml_error})")
    if libcuda and (stub or cuinit_error not in (0, 100)):
        verdicts.append(DRIVER_BROKEN)
        code = 34 if stub else cuinit_error
        reasons.append(f"cuInit fails with {code}")
        texts.append(catalogue.torch_words_for_cuda_error(code, env.torch))
    if not libcuda and (view is None or profiles.has_nvidia_gpu(view)):  # no GPU: no access would help
        verdicts.append(NOT_VISIBLE)
        reasons.append("no CUDA driver library in the container" + (" (NVML only)" if nvml else ""))

    # Wheel and runtime.
    if env.cuda is None:
        verdicts.append(CPU_WHEEL)
        reasons.append("a CPU-only wheel")
        texts.insert(0, catalogue.torch_text("torch.not_compiled", env.torch))
    elif profile is not None and ((libcuda and not stub) or nvml_works):
        dcv = profile.cuda_driver_version
        if not compat.runtime_accepts(env.cuda, dcv):
            verdicts.append(DRIVER_TOO_OLD)
            reasons.append(f"CUDA {env.cuda} runtime on a driver reporting {dcv}")
            if libcuda and not stub:
                # the runtime checks the version before cuInit
                texts.insert(0, catalogue.torch_text("torch.driver_too_old", env.torch, found=dcv))

    # Visibility.
    if cvd_value is not None and not visible:
        verdicts.append(NOT_VISIBLE)
        reasons.append(f"CUDA_VISIBLE_DEVICES={cvd_value!r} hides every device")
        if env.cuda and libcuda and DRIVER_BROKEN not in verdicts:
            texts.append(catalogue.torch_text("torch.no_gpus", env.torch))
    if libcuda and not gpus and not (stub or cuinit_error not in (0, 100)):
        verdicts.append(NOT_VISIBLE)
        reasons.append("the driver sees no GPU")

    # Compiled architectures (judged from NVML's capabilities and the wheel's list).
    # A team image's architectures were read from its torch (refenv/run/imagefacts.py); a recipe's are in the tables.
    arches = env.arch or (compat.arch_list(env.torch, env.cuda) if env.cuda else None)
    if arches and nvml_works:
        for i in visible:
            _, cc = gpus[i]
            if not compat.arch_supports(cc, arches):
                verdicts.append(ARCH_UNSUPPORTED)
                reasons.append(f"compute capability {cc} is not in {' '.join(arches)}")
                break

    ordered = tuple(dict.fromkeys(sorted(verdicts, key=VERDICTS.index)))
    primary = ordered[0] if ordered else OK
    if not ordered:
        reasons.append("the runtime accepts this driver" + (" (simulated)" if profile is not None else ""))
    return Expected(primary, ordered, texts[0] if texts else None, "; ".join(reasons))
