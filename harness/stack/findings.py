"""Judge an inventory (harness/stack/inventory.py) against a host: findings per distribution (pure).

Without a host (no GPU, driver unknown) only what the environment holds is judged: an import that fails, a
requirement that is not met, an extension built for another CUDA major than torch's, no library for torch's
CUDA. With one, also each GPU's architecture against the code compiled for it, and each extension's CUDA
against the driver. An error means the image is not ready on that host even where torch itself gets a GPU;
a warning is worth fixing but runs. torch's own verdict is the classifier's (harness/classify): the stack
repeats nothing it says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness import catalogue, compat
from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.facts import Facts
from harness.schema import ARCH_UNSUPPORTED, DRIVER_TOO_OLD, Finding, Remedy
from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import SEVERITY_WARNING as WARNING
from harness.stack.versions import VersionError, satisfies

LAYER = "stack"


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: str  # '8.9'


@dataclass(frozen=True)
class Host:
    """What of the host the stack is judged against; empty when judged without one."""

    gpus: tuple[Gpu, ...] = ()
    driver_cuda: int | None = None   # cuDriverGetVersion, e.g. 12080


@dataclass(frozen=True)
class Judgement:
    findings: tuple[Finding, ...]
    status: dict[str, str] = field(default_factory=dict)  # distribution -> ok | warning | broken

    @property
    def ready(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"ready": self.ready, "status": dict(self.status), "findings": [f.to_dict() for f in self.findings]}


def _major(cuda: str | None) -> int | None:
    try:
        return int(str(cuda).split(".")[0]) if cuda else None
    except ValueError:
        return None


def _remedy(d: dict[str, Any], torch: dict[str, Any], **params: object) -> Remedy:
    return Remedy("install_matching").with_params(dist=d["key"], torch=torch.get("version"),
                                                  torch_cuda=(torch.get("built_for") or {}).get("cuda"), **params)


def _finding(severity: str, title: str, evidence: list[str], remedy: Remedy | None, verdict: str = "") -> Finding:
    return Finding(verdict, severity, title, tuple(evidence), render(remedy) if remedy else (), LAYER, remedy)


def _said(texts: list[str]) -> list[str]:
    """What the catalogue knows of these texts: each text it recognises, with its row's meaning the first time."""
    out: dict[str, str] = {}
    meant: set[str] = set()
    for hit in catalogue.scan_text("\n".join(texts)):
        if hit.text not in out:
            out[hit.text] = f"'{hit.text}'" + ("" if hit.id in meant else f": {hit.entry.meaning}")
            meant.add(hit.id)
    return list(out.values())


def _import(d: dict[str, Any], torch: dict[str, Any]) -> list[Finding]:
    """A failed import; or one that succeeded while saying one of the catalogue's extension failures (xFormers only
    logs that its C++/CUDA part did not load)."""
    tried = d.get("import") or {}
    if not tried:
        return []
    error = tried.get("error")
    texts = [str(error or ""), *tried.get("causes", []), *tried.get("loader", []), *tried.get("warnings", []),
             *tried.get("log", []), *tried.get("output", [])]
    hits = [h for h in catalogue.scan_text("\n".join(texts)) if h.entry.layer == "extension"]
    if tried.get("ok") is not False and not hits:
        return []
    evidence = [*([f"import {d.get('module')}: {error}"] if error else []),
                *[f"caused by {c}" for c in tried.get("causes", [])],
                *[f"the loader: {line}" for line in tried.get("loader", [])[:2]], *_said(texts)]
    wants = next((r["spec"] for r in d.get("requires", []) if r["name"] == "torch"), None)
    if wants is not None and torch.get("version"):
        evidence.append(f"it requires torch{wants or ' (any)'}; torch {torch['version']} is installed")
    evidence += [f"another install of {d['name']} is here too: {other} (the files of one may have overwritten the "
                 "other's)" for other in d.get("also_installed") or []]
    why = "cuda" if any(h.id in ("extension.cuda_major_mismatch", "extension.cuda_library_missing") for h in hits) \
        else "torch"
    remedy = _remedy(d, torch, why=why)
    if tried.get("ok") is False:
        return [_finding(ERROR, f"{d['name']} {d['version']} does not import: {error}", evidence, remedy)]
    severity = ERROR if any(h.entry.remedy is not None for h in hits) else WARNING
    return [_finding(severity, f"{d['name']} {d['version']} imports, but says: {hits[0].text}", evidence,
                     remedy if severity == ERROR else None)]


def _twice(d: dict[str, Any], broken: bool) -> list[Finding]:
    """A distribution installed twice (two dist-info folders of one name): which one imports is luck."""
    others = d.get("also_installed") or []
    if not others or broken:
        return []
    remedy = Remedy("install_matching").with_params(dist=d["key"], why="reinstall", have=d["version"])
    return [_finding(WARNING, f"{d['name']} is installed more than once: {d['version']} and {', '.join(others)}",
                     [f"{d['name']} {d['version']} is the one Python finds first",
                      *[f"also: {d['name']} {o}" for o in others],
                      "`pip install --no-deps` over an install (or conda and pip both) leaves both records, and "
                      "files of both versions"], remedy)]


def _requirements(d: dict[str, Any], members: dict[str, dict[str, Any]], torch: dict[str, Any],
                  broken: bool) -> list[Finding]:
    out = []
    for req in d.get("requires", []):
        other = members.get(req["name"])
        if other is None or not req["spec"] or (broken and req["name"] == "torch"):
            continue
        try:
            met = satisfies(other["version"], req["spec"])
        except VersionError:
            continue
        if met:
            continue
        # torch's own pins (triton) are its contract; a library linking libtorch breaks on another torch's ABI.
        links = any(lib.get("links_torch") for lib in d["libraries"])
        severity = ERROR if d["kind"] == "torch" or (req["name"] == "torch" and links) else WARNING
        target = other if req["name"] != "torch" else d
        remedy = (_remedy(other, torch, why="requirement", wanted=req["spec"], by=f"{d['name']} {d['version']}")
                  if target is other else _remedy(d, torch, why="torch"))
        out.append(_finding(severity, f"{d['name']} {d['version']} requires {req['name']}{req['spec']}; "
                            f"{other['name']} {other['version']} is installed",
                            [f"{d['name']}'s metadata: Requires-Dist {req['name']}{req['spec']}",
                             f"installed: {other['name']} {other['version']}"], remedy))
    return out


def _cuda(d: dict[str, Any], torch: dict[str, Any], broken: bool) -> list[Finding]:
    built = d.get("built_for") or {}
    torch_built = torch.get("built_for") or {}
    mine, theirs = built.get("cuda"), torch_built.get("cuda")
    out = []
    per_cuda = built.get("per_cuda") or []
    if per_cuda and theirs and theirs not in per_cuda:
        out.append(_finding(ERROR, f"{d['name']} {d['version']} has no library for torch's CUDA {theirs}",
                            [f"it ships libraries for CUDA {', '.join(per_cuda)} and loads the one for torch's CUDA",
                             f"torch {torch.get('version')} is built with CUDA {theirs}"],
                            _remedy(d, torch, why="per_cuda", have=", ".join(per_cuda))))
    if broken or not mine or per_cuda or d["kind"] != "extension":
        return out
    if theirs is None and torch.get("version"):
        out.append(_finding(WARNING, f"{d['name']} {d['version']} was built for CUDA {mine}; torch is a CPU build",
                            [f"{d['name']}: CUDA {mine} ({built.get('cuda_from')})",
                             f"torch {torch.get('version')} has no CUDA"], None))
    elif theirs and _major(mine) != _major(theirs):
        out.append(_finding(ERROR, f"{d['name']} {d['version']} was built for CUDA {mine}; torch uses CUDA {theirs}",
                            [f"{d['name']}: CUDA {mine} ({built.get('cuda_from')})",
                             f"torch {torch.get('version')}: CUDA {theirs} ({torch_built.get('cuda_from')})",
                             "a CUDA major is a different runtime library (libcudart.so.N): one process loads one"],
                            _remedy(d, torch, why="cuda")))
    return out


def _driver(d: dict[str, Any], torch: dict[str, Any], host: Host) -> list[Finding]:
    """An extension built with a newer CUDA than the driver's (where torch's own is not: that is torch's verdict)."""
    mine = (d.get("built_for") or {}).get("cuda")
    theirs = (torch.get("built_for") or {}).get("cuda")
    if host.driver_cuda is None or not mine or d["kind"] != "extension" or "." not in mine:
        return []
    driver = compat.int_to_cuda(host.driver_cuda)
    if compat.parse_version(mine)[:2] <= compat.parse_version(driver)[:2]:
        return []
    if theirs and "." in theirs and compat.parse_version(mine)[:2] <= compat.parse_version(theirs)[:2]:
        return []
    evidence = [f"{d['name']}: CUDA {mine} ({(d.get('built_for') or {}).get('cuda_from')})",
                f"the driver supports CUDA {driver} ({host.driver_cuda})"]
    if _major(mine) == _major(driver):
        evidence.append("minor-version compatibility runs it, but its PTX cannot be JIT-compiled by an older driver")
        return [_finding(WARNING, f"{d['name']} {d['version']} was built with CUDA {mine}, newer than the driver's "
                         f"{driver}", evidence, None)]
    remedy = Remedy("install_driver").with_params(action="upgrade", cuda=mine)
    return [_finding(ERROR, f"{d['name']} {d['version']} needs a driver for CUDA {mine}; this one supports {driver}",
                     evidence, remedy, DRIVER_TOO_OLD)]


def _arch(d: dict[str, Any], torch: dict[str, Any], host: Host) -> list[Finding]:
    own = [lib for lib in d.get("libraries", []) if not lib.get("bundled")]
    if not own:
        return []
    out = []
    for gpu in {g.capability: g for g in host.gpus}.values():
        cc, sm = gpu.capability, compat.sm_name(gpu.capability)
        served = {lib["path"]: [compat.arch_supports(cc, s) for s in lib.get("sets") or [lib["arch"]]] for lib in own}
        missing = [lib for lib in own if not all(served[lib["path"]])]
        if not missing:
            continue
        none = [lib for lib in missing if not any(served[lib["path"]])]
        evidence = [f"{gpu.name}: compute capability {cc} ({sm})",
                    *[f"{lib['path']}: {' '.join(lib['arch']) or 'no common architecture'}" for lib in missing[:4]],
                    "no cubin of the same major at or below it, and no PTX at or below it to JIT (kernels fail: "
                    f"'{catalogue.entry('cuda.no_kernel_image').text}')"]
        if len(none) == len(own) and d["kind"] != "torch":
            out.append(_finding(ERROR, f"{d['name']} {d['version']} has no code for {gpu.name} ({sm})", evidence,
                                _remedy(d, torch, why="arch", capability=cc), ARCH_UNSUPPORTED))
        else:
            out.append(_finding(WARNING, f"{d['name']} {d['version']}: {len(missing)} of {len(own)} libraries lack "
                                f"code for {gpu.name} ({sm}) in some kernels", evidence, None))
    return out


def judge(stack: dict[str, Any], host: Host | None = None) -> Judgement:
    """Every finding on this inventory, worst first, and each distribution's status."""
    host = host or Host()
    dists = list(stack.get("distributions") or [])
    members = {d["key"]: d for d in dists}
    torch = members.get("torch") or {}
    torch_broken = (torch.get("import") or {}).get("ok") is False
    status: dict[str, str] = {}
    findings: list[Finding] = []
    for d in dists:
        mine: list[Finding] = []
        if d["kind"] != "torch" and not torch_broken:
            mine += _import(d, torch)
        broken = bool(mine)
        mine += _twice(d, broken)
        mine += _requirements(d, members, torch, broken)
        if d["kind"] != "cuda-library":
            mine += _cuda(d, torch, broken)
            mine += _driver(d, torch, host)
            mine += _arch(d, torch, host)
        status[d["name"]] = "broken" if any(f.severity == ERROR for f in mine) else "warning" if mine else "ok"
        findings += mine
    findings.sort(key=lambda f: f.severity != ERROR)
    return Judgement(tuple(findings), status)


def host_of(facts: Facts) -> Host:
    """The GPUs (with a known compute capability) and the driver's CUDA version in a diagnosis's facts."""
    ctx = Context(facts)
    gpus = tuple(Gpu(str(g.get("name") or "GPU"), str(g.get("compute_capability")))
                 for g in ctx.gpus if g.get("compute_capability"))
    return Host(gpus, ctx.driver_cuda_version)
