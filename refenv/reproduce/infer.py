"""What a pasted report describes: the torch build, the Python, the driver, the GPUs, the faults (pure).

It reads the facts `harness.intake` parsed (a collect_env dump with the messages pasted around it, or
a saved diagnose document) and says where each value came from. torch's and NVML's messages name the
faults as the simulated driver raises them (facts/torch-failures.md): a driver/library mismatch is
NVML error 18 with cuInit 803, "CUDA unknown error" is cuInit 999, and so on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import catalogue, compat
from harness.classify import classify
from harness.facts import Facts, devices_of, host_of, libcuda_of, nvml_of, torch_of, torch_texts, visibility_of
from harness.intake import ParsedReport
from harness.intake.hints import ENV_FACTS
from refenv.model import faults as named
from refenv.model.profiles import CUINIT_ERRORS, Faults
from refenv.reproduce import drivers
from refenv.reproduce.gpus import GpuGuess
from refenv.reproduce.values import Inferred, Reported, ReproduceError

# ASCII digits: `\d` also reads Arabic-Indic and full-width digits, which name no torch or Python release.
_RELEASE_RE = re.compile(r"^([0-9]{1,4})\.([0-9]{1,4})(?:\.([0-9]{1,4}))?")
# harness/intake/hints.py records a `docker run` line without a GPU flag with these words.
_NO_GPU_FLAG = "without --gpus"


def release_of(version: str) -> str:
    """'2.14.1+cu130' -> '2.14.1'; '2.1.0a0+git8ac9b20' -> '2.1.0'; '2.1' -> '2.1.0'."""
    m = _RELEASE_RE.match(version.strip())
    if not m:
        raise ReproduceError(f"torch version {version!r} is not a release number such as 2.14.1")
    return f"{m.group(1)}.{m.group(2)}.{m.group(3) or 0}"


def python_of(version: str | None) -> str | None:
    """'3.11.2' -> '3.11'."""
    m = _RELEASE_RE.match(version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def variant_from(version: str, cuda_known: bool, cuda: str | None, evidence: list[str]) -> str:
    """The build variant: torch.version.cuda decides; the version label, then PyPI's default, when it is unknown."""
    if cuda_known:
        return compat.variant_of(version, cuda)
    label = re.search(r"\+(cpu|cu[0-9]{3,4})\b", version)
    if label:
        evidence.append(f"variant {label.group(1)} from the version label alone (torch.version.cuda not reported)")
        return label.group(1)
    release = compat.torch_release(version)
    if release is None:
        raise ReproduceError(f"torch {version}: the report says neither its CUDA version nor its variant, and the "
                             "release is not in refenv's tables: pass --torch VERSION+VARIANT")
    evidence.append(f"variant {compat.cuda_variant(release.default_cuda)}: PyPI's default build of "
                    f"{release.series} (the report does not say which CUDA torch was built with)")
    return compat.cuda_variant(release.default_cuda)


def faults_from(facts: Facts, texts: str, evidence: list[str]) -> Faults:
    """The faults torch's and NVML's messages name, or a driver call the report says never returns."""
    stuck = libcuda_of(facts).get("blocked_in") or torch_of(facts).get("blocked_in")
    if stuck:
        hang = next(f for f in named.NAMED if f.faults.cuinit_hang)
        evidence.append(f"{stuck} never returns ({catalogue.entry(hang.entry).meaning})")
        return hang.faults
    nvml = nvml_of(facts)
    code, text = nvml.get("init_error_code"), str(nvml.get("init_error") or "")
    if not isinstance(code, int) and text:
        code = catalogue.nvml_code_of(text)
    fault = named.for_nvml(code)
    if fault is not None:
        f = fault.faults
        evidence.append(f"NVML: {catalogue.nvml_error_texts()[f.nvml_init_error]} -> NVML error {f.nvml_init_error} "
                        f"and cuInit {f.cuinit_error} ({catalogue.entry(fault.entry).meaning})")
        return f
    hits = catalogue.scan_text(texts)
    rc = next((h.entry.code.value for h in hits if h.entry.code and h.entry.code.api == "cuda_driver"
               and h.entry.code.value in CUINIT_ERRORS), None)
    unexpected = next((h for h in hits if h.id == "torch.unexpected_error"), None)
    if rc is None and unexpected and int(unexpected.params["code"]) in CUINIT_ERRORS:
        rc = int(unexpected.params["code"])
    found = named.for_cuda_error(rc) if rc is not None else None
    if rc is None or found is None:
        return Faults()
    evidence.append(f"torch's message names cuInit error {rc} ({CUINIT_ERRORS[rc]})")
    return found


def _driver(facts: Facts, details: dict[str, str], os_name: str, evidence: list[str]) -> tuple[
        str | None, int | None]:
    """The driver version and the CUDA version it reports, from nvidia-smi, NVML's library or torch's words."""
    nvml = nvml_of(facts)
    dcv = nvml.get("cuda_driver_version") or libcuda_of(facts).get("driver_version")
    version = nvml.get("driver_version")
    if version:
        evidence.append(f"driver {version} (nvidia-smi)")
        if os_name == "Windows":
            evidence.append(f"driver {version} is a Windows driver number; simulated as a Linux driver of that "
                            "number, whose branch decides its CUDA version")
    elif details.get("nvml_library"):
        library = details["nvml_library"]
        version = drivers.with_prefix(library) or library
        evidence.append(f"driver {version} from 'NVML library version: {library}' (nvidia-smi could not talk to "
                        "the kernel module)")
    elif isinstance(dcv, int) and dcv > 0:
        try:
            version, source = drivers.for_cuda(dcv)
        except ValueError as exc:
            raise ReproduceError(str(exc)) from None
        evidence.append(f"driver {version} ({source}): the report names no driver, torch found it reports {dcv}")
    why = drivers.problem(version) if version is not None else None
    if why:
        raise ReproduceError(f"driver version {version!r}: {why}")
    return version, dcv if isinstance(dcv, int) and dcv > 0 else None


def _gpus(facts: Facts) -> tuple[GpuGuess, ...]:
    devices, seen = devices_of(nvml_of(facts)), devices_of(torch_of(facts))
    capability = {d.get("name"): d.get("compute_capability") for d in seen if d.get("compute_capability")}
    rows = devices or seen
    return tuple(GpuGuess(str(d.get("name")), d.get("compute_capability") or capability.get(d.get("name")),
                          d.get("uuid")) for d in rows if d.get("name"))


def _environment(facts: Facts) -> tuple[tuple[str, str], ...]:
    """The variables the report shows being set, as a scenario sets them."""
    out = []
    sections: dict[str, Mapping[str, object]] = {"visibility": visibility_of(facts), "torch": torch_of(facts),
                                                  "host": host_of(facts)}
    for name, path in ENV_FACTS.items():
        section, key = path.split(".")
        value = sections[section].get(key) if section in sections else None
        if value is not None:
            out.append((name, ("1" if value else "0") if isinstance(value, bool) else str(value)))
    return tuple(out)


def reported_of(facts: Facts) -> Reported:
    """What the report says happened, and the classifier's verdict and fix over its facts."""
    torch = torch_of(facts)
    message = catalogue.torch_message(torch.get("init_warning"), torch.get("init_error"))
    diagnosis = classify(facts)
    failing = diagnosis.failing
    return Reported(torch.get("is_available"), message, diagnosis.verdict, failing[0].remediation if failing else ())


def infer(report: ParsedReport) -> Inferred:
    """The environment and host a parsed report describes; ReproduceError when it cannot say."""
    facts = report.facts
    torch, host = torch_of(facts), host_of(facts)
    # The reader marks what the report implies but does not state (harness/intake/implied.py).
    evidence: list[str] = [f"{path} inferred, not stated: {why}" for path, why in report.inferred.items()]
    if torch.get("hip"):
        raise ReproduceError(f"a ROCm build of torch ({torch.get('version')}): refenv reproduces NVIDIA CUDA "
                             "stacks only")
    assumed = False
    if not torch.get("version"):
        chosen = torch_for_too_old(facts, evidence)
        if chosen is None:
            why = ("torch could not be imported where it was made" if torch.get("importable") is False
                   else "it has no 'PyTorch version:' line")
            raise ReproduceError(f"the report does not say which torch is installed ({why}): pass --torch VERSION")
        version, variant, assumed = chosen[0], chosen[1], True
    else:
        version = release_of(str(torch["version"]))
        variant = variant_from(str(torch["version"]), "cuda" in torch, torch.get("cuda"), evidence)
    os_name = host.get("os") or "Linux"
    if not host.get("os"):
        evidence.append("the report does not name its operating system: Linux assumed")
    texts = torch_texts(facts)
    faults = faults_from(facts, texts, evidence)
    driver, dcv = _driver(facts, report.details, os_name, evidence)
    vis = visibility_of(facts)
    gpu_access = _NO_GPU_FLAG not in str(vis.get("container_evidence") or "")
    if not gpu_access:
        evidence.append(f"a container started without GPU access ({vis.get('container_evidence')})")
    no_driver = catalogue.find(texts, ["torch.no_driver"]) is not None and driver is None and gpu_access
    if no_driver:
        evidence.append("torch found no NVIDIA driver, and the report names none: a host without a driver")
    env = _environment(facts)
    evidence.extend(f"{name}={value!r} (set in the report)" for name, value in env)
    return Inferred(version, variant, python_of(host.get("python")), os_name, driver, dcv, _gpus(facts), faults,
                    no_driver, gpu_access, env, tuple(evidence), reported_of(facts), torch_assumed=assumed)


def torch_for_too_old(facts: Facts, evidence: list[str]) -> tuple[str, str] | None:
    """(release, variant) of the torch most likely behind torch's too-old message when the report names none.

    The message ('found version 11040') says the driver's CUDA and that the runtime torch bundles is newer.
    The most likely torch is then the newest release's default build (what a plain `pip install torch` gets),
    when the driver cannot start its runtime; else the newest release whose default build it cannot start.
    None when the report holds no such message."""
    hit = catalogue.find(torch_texts(facts), ["torch.driver_too_old"])
    if hit is None:
        return None
    found = int(hit.params["found"])
    table = compat.load().torch_releases
    for series in sorted(table, key=compat.parse_version, reverse=True):
        cuda = table[series].default_cuda
        if not compat.runtime_accepts(cuda, found):
            evidence.append(f"torch {series} (its default build, CUDA {cuda}): the report names no torch; torch's "
                            f"message says its runtime is newer than the driver's CUDA "
                            f"{compat.int_to_cuda(found)} ({found}), and the newest release's default build is what "
                            "a plain pip install gets")
            return f"{series}.0", compat.cuda_variant(cuda)
    return None
