"""Judge an inventory (harness/stack/inventory.py) against a host: findings per distribution (pure).

Without a host (no GPU, driver unknown) only what the environment holds is judged: an import that fails, a
requirement that is not met, an extension built for another CUDA major than torch's, no library for torch's
CUDA. With one, also each GPU's architecture against the code compiled for it, and each extension's CUDA
against the driver. An error means the image is not ready on that host even where torch itself gets a GPU;
a warning is worth fixing but runs. torch's own verdict is the classifier's (harness/classify): the stack
repeats nothing it says.
"""

from __future__ import annotations

from harness import catalogue, compat
from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.facts import Facts
from harness.schema import ARCH_UNSUPPORTED, DRIVER_TOO_OLD, Finding, Remedy
from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import SEVERITY_WARNING as WARNING
from harness.schema.stack_document import Distribution, Gpu, Host, Inventory, Judgement
from harness.stack.versions import VersionError, satisfies

__all__ = ["LAYER", "Gpu", "Host", "Judgement", "host_of", "judge"]

LAYER = "stack"
_NOTHING = Distribution("", "", "", kind="torch")  # torch where the inventory has none


def _major(cuda: str | None) -> int | None:
    try:
        return int(str(cuda).split(".")[0]) if cuda else None
    except ValueError:
        return None


def _remedy(d: Distribution, torch: Distribution, **params: object) -> Remedy:
    return Remedy("install_matching").with_params(dist=d.key, torch=torch.version or None,
                                                  torch_cuda=torch.built_for.cuda, **params)


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


def _import(d: Distribution, torch: Distribution) -> list[Finding]:
    """A failed import; or one that succeeded while saying one of the catalogue's extension failures (xFormers only
    logs that its C++/CUDA part did not load)."""
    tried = d.trial
    if tried is None:
        return []
    error = tried.error
    texts = [str(error or ""), *tried.causes, *tried.loader, *tried.warnings, *tried.log, *tried.output]
    hits = [h for h in catalogue.scan_text("\n".join(texts)) if h.entry.layer == "extension"]
    if tried.ok and not hits:
        return []
    evidence = [*([f"import {d.module}: {error}"] if error else []),
                *[f"caused by {c}" for c in tried.causes],
                *[f"the loader: {line}" for line in tried.loader[:2]], *_said(texts)]
    wants = d.requires_torch()
    if wants is not None and torch.version:
        evidence.append(f"it requires torch{wants or ' (any)'}; torch {torch.version} is installed")
    evidence += [f"another install of {d.name} is here too: {other} (the files of one may have overwritten the "
                 "other's)" for other in d.also_installed]
    why = "cuda" if any(h.id in ("extension.cuda_major_mismatch", "extension.cuda_library_missing") for h in hits) \
        else "torch"
    remedy = _remedy(d, torch, why=why)
    if not tried.ok:
        return [_finding(ERROR, f"{d.name} {d.version} does not import: {error}", evidence, remedy)]
    severity = ERROR if any(h.entry.remedy is not None for h in hits) else WARNING
    return [_finding(severity, f"{d.name} {d.version} imports, but says: {hits[0].text}", evidence,
                     remedy if severity == ERROR else None)]


def _twice(d: Distribution, broken: bool) -> list[Finding]:
    """A distribution installed twice (two dist-info folders of one name): which one imports is luck."""
    others = d.also_installed
    if not others or broken:
        return []
    remedy = Remedy("install_matching").with_params(dist=d.key, why="reinstall", have=d.version)
    return [_finding(WARNING, f"{d.name} is installed more than once: {d.version} and {', '.join(others)}",
                     [f"{d.name} {d.version} is the one Python finds first",
                      *[f"also: {d.name} {o}" for o in others],
                      "`pip install --no-deps` over an install (or conda and pip both) leaves both records, and "
                      "files of both versions"], remedy)]


def _requirements(d: Distribution, members: dict[str, Distribution], torch: Distribution,
                  broken: bool) -> list[Finding]:
    out = []
    for req in d.requires:
        other = members.get(req.name)
        if other is None or not req.spec or (broken and req.name == "torch"):
            continue
        try:
            met = satisfies(other.version, req.spec)
        except VersionError:
            continue
        if met:
            continue
        # torch's own pins (triton) are its contract; a library linking libtorch breaks on another torch's ABI.
        links = any(lib.links_torch for lib in d.libraries)
        severity = ERROR if d.kind == "torch" or (req.name == "torch" and links) else WARNING
        target = other if req.name != "torch" else d
        remedy = (_remedy(other, torch, why="requirement", wanted=req.spec, by=f"{d.name} {d.version}")
                  if target is other else _remedy(d, torch, why="torch"))
        out.append(_finding(severity, f"{d.name} {d.version} requires {req.name}{req.spec}; "
                            f"{other.name} {other.version} is installed",
                            [f"{d.name}'s metadata: Requires-Dist {req.name}{req.spec}",
                             f"installed: {other.name} {other.version}"], remedy))
    return out


def _cuda(d: Distribution, torch: Distribution, broken: bool) -> list[Finding]:
    built, torch_built = d.built_for, torch.built_for
    mine, theirs = built.cuda, torch_built.cuda
    out = []
    per_cuda = built.per_cuda
    if per_cuda and theirs and theirs not in per_cuda:
        out.append(_finding(ERROR, f"{d.name} {d.version} has no library for torch's CUDA {theirs}",
                            [f"it ships libraries for CUDA {', '.join(per_cuda)} and loads the one for torch's CUDA",
                             f"torch {torch.version or None} is built with CUDA {theirs}"],
                            _remedy(d, torch, why="per_cuda", have=", ".join(per_cuda))))
    if broken or not mine or per_cuda or d.kind != "extension":
        return out
    if theirs is None and torch.version:
        out.append(_finding(WARNING, f"{d.name} {d.version} was built for CUDA {mine}; torch is a CPU build",
                            [f"{d.name}: CUDA {mine} ({built.cuda_from})",
                             f"torch {torch.version} has no CUDA"], None))
    elif theirs and _major(mine) != _major(theirs):
        out.append(_finding(ERROR, f"{d.name} {d.version} was built for CUDA {mine}; torch uses CUDA {theirs}",
                            [f"{d.name}: CUDA {mine} ({built.cuda_from})",
                             f"torch {torch.version or None}: CUDA {theirs} ({torch_built.cuda_from})",
                             "a CUDA major is a different runtime library (libcudart.so.N): one process loads one"],
                            _remedy(d, torch, why="cuda")))
    return out


def _driver(d: Distribution, torch: Distribution, host: Host) -> list[Finding]:
    """An extension built with a newer CUDA than the driver's (where torch's own is not: that is torch's verdict)."""
    mine = d.built_for.cuda
    theirs = torch.built_for.cuda
    if host.driver_cuda is None or not mine or d.kind != "extension" or "." not in mine:
        return []
    driver = compat.int_to_cuda(host.driver_cuda)
    if compat.parse_version(mine)[:2] <= compat.parse_version(driver)[:2]:
        return []
    if theirs and "." in theirs and compat.parse_version(mine)[:2] <= compat.parse_version(theirs)[:2]:
        return []
    evidence = [f"{d.name}: CUDA {mine} ({d.built_for.cuda_from})",
                f"the driver supports CUDA {driver} ({host.driver_cuda})"]
    if _major(mine) == _major(driver):
        evidence.append("minor-version compatibility runs it, but its PTX cannot be JIT-compiled by an older driver")
        return [_finding(WARNING, f"{d.name} {d.version} was built with CUDA {mine}, newer than the driver's "
                         f"{driver}", evidence, None)]
    remedy = Remedy("install_driver").with_params(action="upgrade", cuda=mine)
    return [_finding(ERROR, f"{d.name} {d.version} needs a driver for CUDA {mine}; this one supports {driver}",
                     evidence, remedy, DRIVER_TOO_OLD)]


def _arch(d: Distribution, torch: Distribution, host: Host) -> list[Finding]:
    own = d.own_libraries
    if not own:
        return []
    out = []
    for gpu in {g.compute_capability: g for g in host.gpus}.values():
        cc, sm = gpu.compute_capability, compat.sm_name(gpu.compute_capability)
        served = {lib.path: [compat.arch_supports(cc, s) for s in lib.sets or [lib.arch]] for lib in own}
        missing = [lib for lib in own if not all(served[lib.path])]
        if not missing:
            continue
        none = [lib for lib in missing if not any(served[lib.path])]
        evidence = [f"{gpu.name}: compute capability {cc} ({sm})",
                    *[f"{lib.path}: {' '.join(lib.arch) or 'no common architecture'}" for lib in missing[:4]],
                    "no cubin of the same major at or below it, and no PTX at or below it to JIT (kernels fail: "
                    f"'{catalogue.entry('cuda.no_kernel_image').text}')"]
        if len(none) == len(own) and d.kind != "torch":
            out.append(_finding(ERROR, f"{d.name} {d.version} has no code for {gpu.name} ({sm})", evidence,
                                _remedy(d, torch, why="arch", capability=cc), ARCH_UNSUPPORTED))
        else:
            out.append(_finding(WARNING, f"{d.name} {d.version}: {len(missing)} of {len(own)} libraries lack "
                                f"code for {gpu.name} ({sm}) in some kernels", evidence, None))
    return out


def judge(stack: Inventory, host: Host | None = None) -> Judgement:
    """Every finding on this inventory, worst first, and each distribution's status."""
    host = host or Host()
    dists = stack.distributions
    members = {d.key: d for d in dists}
    torch = members.get("torch") or _NOTHING
    torch_broken = torch.trial is not None and not torch.trial.ok
    status: dict[str, str] = {}
    findings: list[Finding] = []
    for d in dists:
        mine: list[Finding] = []
        if d.kind != "torch" and not torch_broken:
            mine += _import(d, torch)
        broken = bool(mine)
        mine += _twice(d, broken)
        mine += _requirements(d, members, torch, broken)
        if d.kind != "cuda-library":
            mine += _cuda(d, torch, broken)
            mine += _driver(d, torch, host)
            mine += _arch(d, torch, host)
        status[d.name] = "broken" if any(f.severity == ERROR for f in mine) else "warning" if mine else "ok"
        findings += mine
    findings.sort(key=lambda f: f.severity != ERROR)
    return Judgement.of(tuple(findings), status)


def host_of(facts: Facts) -> Host:
    """The GPUs (with a known compute capability) and the driver's CUDA version in a diagnosis's facts."""
    ctx = Context(facts)
    gpus = tuple(Gpu(str(g.get("name") or "GPU"), str(g.get("compute_capability")))
                 for g in ctx.gpus if g.get("compute_capability"))
    return Host(gpus, ctx.driver_cuda_version)
