"""Why a team's build failed to reach a registry or a package index, from the builder's own last lines (pure).

A build that cannot pull its base image or fetch its packages fails with the words of whoever refused: the
engine's registry client (moby's and containers/image's: "pull access denied", "no basic auth credentials",
"unauthorized: authentication required", "dial tcp ...: connect: connection refused", "no such host", "server
gave HTTP response to HTTPS client") or pip ("Failed to establish a new connection", "Temporary failure in name
resolution", "Could not find a version that satisfies the requirement"). Those words stay in the record; this
adds which registry or index it was, and what to do: authenticate, reach it, or build offline.
"""

from __future__ import annotations

import re

from refenv.model.matrix import NETWORK_DEFAULT

_AUTH = ("pull access denied", "no basic auth credentials", "unauthorized", "authentication required",
         "denied: requested access", "401 unauthorized", "403 forbidden")
_UNREACHABLE = ("connection refused", "no such host", "i/o timeout", "tls handshake timeout", "network is unreachable",
                "server gave http response to https client", "name or service not known", "context deadline exceeded")
_PIP_NETWORK = ("failed to establish a new connection", "temporary failure in name resolution", "newconnectionerror",
                "network is unreachable", "connection refused", "max retries exceeded", "proxyerror")
_PIP_MISSING = "could not find a version that satisfies the requirement"
_REGISTRY_HOST = re.compile(r"(?:https?://)?((?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+(?::[0-9]+)?|localhost(?::[0-9]+)?|"
                            r"\[[0-9a-fA-F:]+\](?::[0-9]+)?)/v2/")
_REPO_HOST = re.compile(r"(?:repository|image|for|pull) [\"']?((?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+(?::[0-9]+)?|"
                        r"localhost(?::[0-9]+)?)/")
_INDEX = re.compile(r"(https?://[^\s'\"]+?)/(?:simple|[^\s'\"]*\.whl)\b|Looking in indexes: (\S+)")
_DOCKER_HUB = "registry-1.docker.io (Docker Hub)"


def _registry(text: str) -> str:
    m = _REGISTRY_HOST.search(text) or _REPO_HOST.search(text)
    return m.group(1) if m else _DOCKER_HUB


def _index(text: str) -> str:
    m = _INDEX.search(text)
    return (m.group(1) or m.group(2)).rstrip(",") if m else "the package index (pip's index-url)"


def explain(tail: str, network: str = NETWORK_DEFAULT) -> str | None:
    """What to do about a build that could not reach a registry or an index, or None when the tail shows neither."""
    low = tail.lower()
    offline = ("or build offline: put the base image in the engine where a registry answers (docker pull, or "
               "docker save there and docker load here), then run again")
    if any(w in low for w in _AUTH) and ("pull" in low or "/v2/" in low or "manifest" in low):
        host = _registry(tail)
        login = "docker login" if host == _DOCKER_HUB else f"docker login {host}"
        return (f"the registry {host} refused the pull without valid credentials: {login} (refenv builds with the "
                "engine's credentials: Docker's config.json, and Podman's auth.json or Docker's), then run again; "
                f"{offline}")
    if any(w in low for w in _UNREACHABLE) and ("/v2/" in low or "pull" in low or "manifest" in low):
        host = _registry(tail)
        return f"the registry {host} cannot be reached from this machine; check its name and the network, {offline}"
    if (any(w in low for w in _PIP_NETWORK) or _PIP_MISSING in low) and ("pip" in low or "/simple" in low):
        index = _index(tail)
        if network == "none":
            return (f"the build has no network (network: none), so {index} cannot be reached from it: build with "
                    "the network (remove network: none), or install from wheels in the build context "
                    "(pip install --no-index --find-links)")
        return (f"{index} cannot be reached from the build; an index on this machine needs network: host, a "
                "private one its credentials (a build secret: secrets: {ID: {env: VAR}} and RUN --mount=type=secret); "
                "or build offline: put the wheels in the build context and pip install --no-index --find-links")
    return None
