"""The words of a stack fix (remedy kind `install_matching`): the build of an extension that goes with this torch.

Parameters: `dist` (the distribution), `torch` and `torch_cuda` (the torch present), `why` (`torch`: built
for another torch; `cuda`: for another CUDA; `per_cuda`: no library for torch's CUDA; `requirement`: a pin not
met, with `wanted` and `by`; `arch`: no code for a GPU, with `capability`; `reinstall`: installed twice), and
`have` (what it has). The
matching release comes from the pairing table (harness/catalogue/pairing.py) where it has one.
"""

from __future__ import annotations

from harness import compat
from harness.catalogue import pairing
from harness.schema import Remedy


def _source(words: str) -> str:
    return words.split(":", 1)[0]


def _index(torch: str | None, cuda: str | None) -> str:
    """' --index-url …/cuXYZ' when this torch build is not the one PyPI serves for its release."""
    if not torch or not cuda:
        return ""
    release = compat.torch_release(compat.torch_series(torch))
    variant = compat.cuda_variant(cuda)
    if release is not None and release.default_cuda == cuda:
        return ""
    return f" --index-url {compat.index_url(variant)}"


def _requirement(dist: str, r: Remedy) -> list[str]:
    wanted, by = r.get("wanted") or "", r.get("by")
    return [f'pip install "{dist}{wanted}"' + (f"   # what {by} requires" if by else "")]


def _arch(dist: str, r: Remedy) -> list[str]:
    cc = r.get("capability") or "?"
    sm = "sm_" + cc.replace(".", "")
    return [f"install a build of {dist} whose architectures include {sm} (or PTX at or below it): its release notes "
            "or `python -m harness stack` on a build name them",
            f'or build it for this GPU: TORCH_CUDA_ARCH_LIST="{cc}" pip install --no-build-isolation --no-cache-dir '
            f"--force-reinstall {dist}"]


def matching(r: Remedy) -> list[str]:
    dist = r.get("dist") or "the extension"
    why = r.get("why")
    if why == "requirement" and r.get("wanted"):
        return _requirement(dist, r)
    if why == "arch":
        return _arch(dist, r)
    if why == "reinstall":
        return [f"pip uninstall -y {dist} (again, until pip finds none), then install the one you want: pip install "
                f"--force-reinstall {dist}=={r.get('have')}"]
    torch, cuda = r.get("torch"), r.get("torch_cuda")
    public = compat.public_version(torch) if torch else None
    rule = pairing.rule(dist)
    how = rule.how if rule else None
    if how == "paired" and torch:
        found = pairing.paired(dist, torch)
        if found is not None:
            return [f"pip install {found.requirement}{_index(torch, cuda)}   # the {dist} release paired with torch "
                    f"{public} ({_source(found.source)})"]
        return [f"no {dist} release is paired with torch {public} in refenv's pairing table: pin torch to a release "
                f"that has one, or build {dist} from source against this torch"]
    if how == "index" and torch and cuda:
        return [f"pip install --force-reinstall {dist} torch=={public} --index-url "
                f"{compat.index_url(compat.cuda_variant(cuda))}   # PyTorch's index has a {dist} build pinned to "
                "each torch release"]
    if how == "per-cuda" and cuda:
        have = r.get("have")
        return [f"pip install -U {dist}   # a release with a library for CUDA {cuda}"
                + (f" (this one has {have})" if have else "")]
    if how == "cuda-named" and cuda:
        major = cuda.split(".")[0]
        return [f"pip uninstall -y {dist} && pip install cupy-cuda{major}x   # the CuPy wheel for CUDA {major}"]
    if how == "source" and public:
        return [f"rebuild {dist} against torch {public}: pip install --no-build-isolation --no-cache-dir "
                f"--force-reinstall {dist}"]
    built = f" built for torch {public}" + (f" (CUDA {cuda})" if cuda else "") if public else ""
    return [f"reinstall {dist}{built}: pip install --force-reinstall --no-cache-dir {dist}, or rebuild it from source "
            "against this torch"]
