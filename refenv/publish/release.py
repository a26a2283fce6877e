"""What a release is called and what it says of itself: registry, tags, OCI labels, its Dockerfile (pure).

A release image is the environment image with labels added: a Dockerfile of `FROM` and one `LABEL`,
built with the classic builder, so no layer changes and the verified bytes are the published bytes.
Label keys follow the OCI image spec's annotations (`org.opencontainers.image.*`); refenv's own keys
say where torch gets a GPU (ready hosts), where it does not with the verdict and the minimum fix
(refused hosts), and by which runs and report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness import compat
from refenv.errors import RefenvError
from refenv.model.labels import MANAGED

# The reference grammar of the distribution project (reference/regexp.go): a registry host is a
# domain or IP with an optional port; path components are lower-case alphanumerics with separators.
_HOST_RE = re.compile(r"^(?:localhost|\[[0-9a-fA-F:]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)(?::\d{1,5})?$")
_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
OCI = "org.opencontainers.image"


@dataclass(frozen=True)
class Registry:
    host: str          # "127.0.0.1:5000"
    namespace: str     # "team/ml"

    def repository(self, name: str) -> str:
        return f"{self.host}/{self.namespace}/{name}"


def parse_registry(text: str) -> Registry:
    """--registry HOST[:PORT]/NAMESPACE, or RefenvError saying what is expected."""
    host, _, namespace = text.strip().strip("/").partition("/")
    expected = "expected HOST[:PORT]/NAMESPACE, e.g. registry.example.com/ml or 127.0.0.1:5000/refenv"
    if not namespace:
        raise RefenvError(f"--registry {text!r}: no namespace; {expected}")
    if not _HOST_RE.match(host) or not ("." in host or ":" in host or host == "localhost"):
        raise RefenvError(f"--registry {text!r}: {host!r} is not a registry host (docker reads a first part without "
                          f"a dot or a port as a Docker Hub account); {expected}")
    bad = [c for c in namespace.split("/") if not _COMPONENT_RE.match(c)]
    if bad:
        raise RefenvError(f"--registry {text!r}: namespace part {bad[0]!r} must be lower-case letters and digits, "
                          f"separated by '.', '_' or '-'; {expected}")
    return Registry(host, namespace)


def repository_name(name: str) -> str:
    """An environment name as a repository path component ('Torch_2.14' -> 'torch_2.14')."""
    lowered = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("._-")
    if not _COMPONENT_RE.match(lowered):
        raise RefenvError(f"environment {name!r} does not make a repository name: pass --repository NAME")
    return lowered


def release_tag(torch: str, variant: str, python: str) -> str:
    """'torch2.14.1-cu130-py3.11'."""
    tag = f"torch{torch}-{variant}-py{python}"
    if not _TAG_RE.match(tag):
        raise RefenvError(f"{tag!r} is not a valid image tag")
    return tag


def hash_tag(content_hash: str) -> str:
    """The content hash's first 16 hex digits, as the environment image's own tag has them."""
    return content_hash[:16]


@dataclass(frozen=True)
class ReleaseInfo:
    """What the labels say."""

    environment: str
    torch: str
    variant: str
    python: str
    content_hash: str
    run_id: str                    # the full-coverage run that decides
    report_digest: str             # sha256 of that run's cells.json
    ready_hosts: tuple[str, ...]   # 'r580 (simulated)': torch got a GPU there
    refused_hosts: tuple[str, ...]  # 'r470: DRIVER_TOO_OLD (needs >= 580.65.06)'
    untested_hosts: tuple[str, ...]  # 'real: NOT_RUN (...)': no answer with GPU access
    runs: tuple[str, ...]          # every run read: the deciding one first
    created: str                   # RFC 3339
    revision: str | None = None    # the project's git commit
    source: str | None = None      # the repository's remote URL, never a local path
    stack: tuple[str, ...] = ()    # 'torchvision 0.29.1': what the image holds beside torch (harness/stack)


def description(info: ReleaseInfo) -> str:
    """One paragraph that says what the labels say: the build, where torch gets a GPU, where not and why."""
    cuda = compat.variant_cuda(info.variant)
    refused = f"; no GPU on {'; '.join(info.refused_hosts)}" if info.refused_hosts else ""
    untested = f"; not tested on {'; '.join(info.untested_hosts)}" if info.untested_hosts else ""
    return (f"torch {info.torch}+{info.variant} ({'CUDA ' + cuda if cuda else 'CPU only'}), Python {info.python}; "
            f"torch gets a GPU on {', '.join(info.ready_hosts)}{refused}{untested}; refenv run {info.run_id}")


def labels(info: ReleaseInfo) -> tuple[tuple[str, str], ...]:
    """The release's labels: OCI annotations, then refenv's."""
    cuda = compat.variant_cuda(info.variant)
    floor = compat.minor_floor(compat.parse_version(cuda)[0]) if cuda else None
    full = compat.min_driver_for_cuda(cuda) if cuda else None
    out = [
        (f"{OCI}.title", f"refenv {info.environment}"),
        (f"{OCI}.description", description(info)),
        (f"{OCI}.version", release_tag(info.torch, info.variant, info.python)),
        (f"{OCI}.created", info.created),
    ]
    if info.revision:
        out.append((f"{OCI}.revision", info.revision))
    if info.source:
        out.append((f"{OCI}.source", info.source))
    out += [
        (MANAGED, "true"),
        ("refenv.kind", "release"),
        ("refenv.environment", info.environment),
        ("refenv.torch", info.torch if "+" in info.torch else f"{info.torch}+{info.variant}"),  # as torch says it
        ("refenv.variant", info.variant),
        ("refenv.cuda", cuda or "none"),
        ("refenv.python", info.python),
        ("refenv.min-driver", floor[0] if floor else "none"),
        ("refenv.min-driver-full", full or "none"),
        ("refenv.content-hash", info.content_hash),
        ("refenv.ready-hosts", ", ".join(info.ready_hosts)),
        ("refenv.refused-hosts", "; ".join(info.refused_hosts)),
        ("refenv.untested-hosts", "; ".join(info.untested_hosts)),
        ("refenv.run", info.run_id),
        ("refenv.runs", ", ".join(info.runs)),
        ("refenv.report-digest", f"sha256:{info.report_digest}"),
    ]
    if info.stack:
        out.append(("refenv.stack", ", ".join(info.stack)))
    return tuple(out)


def _quoted(value: str) -> str:
    """A Dockerfile double-quoted string on one line."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def dockerfile(base: str, pairs: tuple[tuple[str, str], ...]) -> str:
    """FROM the environment image, one LABEL with every pair (classic builder syntax only)."""
    lines = [f"# refenv release: {base} with its verification labels; no layer changes.", f"FROM {base}"]
    body = [f"{key}={_quoted(value)}" for key, value in pairs]
    lines.append("LABEL " + " \\\n      ".join(body))
    return "\n".join(lines) + "\n"
