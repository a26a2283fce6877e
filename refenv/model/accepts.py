"""What each consumer of a matrix value accepts: Docker, pip, debootstrap. Checked before the value reaches it.

Every pattern is used with `fullmatch` (through harness.inputs.require) and a length limit checked first,
so no pattern ever scans more than a few hundred characters.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from harness.inputs import InputError, require, shorten

# A repository path component of a Docker image name (distribution/reference's grammar, `path-component`):
# lowercase letters and digits, separated by one '.', one or two '_', or any number of '-'.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
ENV_NAME_RE = re.compile(_COMPONENT)
ENV_NAME_ALLOWED = ("lowercase letters and digits, joined by single '.' or '_' or by '-' (it becomes the "
                    "Docker image name refenv/env-NAME), at most 64 characters")
# Hosts and scenarios name cells and containers (Docker's container-name rule, [a-zA-Z0-9][a-zA-Z0-9_.-]*).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
NAME_ALLOWED = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters"
NAME_MAX = 64

# distribution/reference: [domain[:port]/]component(/component)*[:tag][@algorithm:hex]
_DOMAIN = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?"
# The digest algorithms go-digest registers, each with its hex length (opencontainers/image-spec
# descriptor.md, "Registered algorithms": sha256 and sha512; go-digest also sha384), lowercase hex only:
# Docker refuses `app@md5:...` or a 32-hex sha256 before it asks any registry.
DIGESTS = {"sha256": 64, "sha384": 96, "sha512": 128}
_DIGEST = "|".join(f"{name}:[0-9a-f]{{{size}}}" for name, size in DIGESTS.items())
IMAGE_RE = re.compile(rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                      rf"(?:@(?:{_DIGEST}))?")
IMAGE_ALLOWED = ("an image reference such as debian:bookworm-slim, registry.example:5000/ns/python:3.11 or "
                 "NAME@sha256:<64 hex digits> (a registry port from 1 to 65535)")
_PORT_RE = re.compile(r":([0-9]{1,5})$")

# A PEP 508 requirement without URLs or environment markers: a name, optional extras, optional versions.
_PKG = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPEC = r"(?:~=|===|==|!=|<=|>=|<|>) ?[A-Za-z0-9][A-Za-z0-9.*+!_-]*"
REQUIREMENT_RE = re.compile(rf"{_PKG}(?:\[{_PKG}(?:, ?{_PKG})*\])? ?(?:{_SPEC}(?: ?, ?{_SPEC})*)?")
REQUIREMENT_ALLOWED = "a package name with optional extras and versions, such as einops or numpy>=1.26,<3"

# Debian: suites are codenames or aliases (bookworm, stable, sid, bookworm-backports); package names are
# lowercase letters, digits, '+', '-' and '.', at least two characters, starting alphanumeric (Policy 5.6.1).
SUITE_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
SUITE_ALLOWED = "a Debian suite such as bookworm or stable (lowercase letters, digits and '-')"
DEB_PACKAGE_RE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
DEB_PACKAGE_ALLOWED = "a Debian package name such as python3-venv"

_HOST_RE = re.compile(_DOMAIN)
URL_SCHEMES = ("http", "https")


def environment_name(value: str, field: str) -> str:
    """An environment name that can be part of a Docker image name."""
    return require(ENV_NAME_RE, value, field, ENV_NAME_ALLOWED, NAME_MAX)


def plain_name(value: str, field: str) -> str:
    """A host or scenario name."""
    return require(NAME_RE, value, field, NAME_ALLOWED, NAME_MAX)


def image_reference(value: str, field: str) -> str:
    """An image reference that Docker parses as one image, never as an option."""
    require(IMAGE_RE, value, field, IMAGE_ALLOWED, 255)
    first, slash, _ = value.partition("/")
    # Docker reads the first component as a registry only when it has a '.' or ':' or is localhost;
    # otherwise it is a path component, which must be lowercase (distribution/reference).
    if slash and not ("." in first or ":" in first or first == "localhost") and not re.fullmatch(_COMPONENT, first):
        raise InputError(f"{field}: {shorten(value)} is not allowed; allowed: {IMAGE_ALLOWED}")
    port = _PORT_RE.search(first) if slash else None
    if port is not None and not 1 <= int(port.group(1)) <= 65535:
        raise InputError(f"{field}: {shorten(value)}: port {port.group(1)} is not a TCP port (1 to 65535)")
    return value


def requirement(value: str, field: str) -> str:
    """A requirement pip reads as a requirement (no '-r', no '--extra-index-url', no URL)."""
    return require(REQUIREMENT_RE, value, field, REQUIREMENT_ALLOWED, 200)


def suite(value: str, field: str) -> str:
    """A Debian suite for debootstrap (no path, no option)."""
    return require(SUITE_RE, value, field, SUITE_ALLOWED, 40)


def deb_package(value: str, field: str) -> str:
    """A Debian package name for debootstrap --include."""
    return require(DEB_PACKAGE_RE, value, field, DEB_PACKAGE_ALLOWED, 100)


def url(value: str, field: str) -> str:
    """An http(s) URL with a host, printable ASCII and no spaces: a mirror or a package index."""
    allowed = "an http:// or https:// URL with a host, such as https://deb.debian.org/debian"
    if not isinstance(value, str) or len(value) > 500:
        raise InputError(f"{field}: expected {allowed}, got {shorten(value)}")
    if not all("!" <= ch <= "~" for ch in value):
        raise InputError(f"{field}: {shorten(value)} holds spaces, control or non-ASCII characters; expected {allowed}")
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
    except ValueError:
        raise InputError(f"{field}: {shorten(value)} is not a URL; expected {allowed}") from None
    if parts.scheme not in URL_SCHEMES or not _HOST_RE.fullmatch(host):
        raise InputError(f"{field}: {shorten(value)} is not allowed; expected {allowed}")
    return value


def env_value(value: str, field: str) -> str:
    """A container environment value: printable text, no NUL or line break (which would forge a variable)."""
    if not isinstance(value, str) or len(value) > 1000:
        raise InputError(f"{field}: expected a value of at most 1000 characters, got {shorten(value)}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InputError(f"{field}: {shorten(value)} holds a NUL, line break or control character")
    return value
