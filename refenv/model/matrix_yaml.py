"""Read matrix.yaml into the model, validating every field; an error names the file, line and field.

Parsing goes through PyYAML's node tree (compose) rather than plain dicts so that each value keeps
its line. Unknown keys are errors, as are duplicate keys (YAML itself would keep the last silently).
The file is read bounded and strictly (harness.inputs); every pattern must match whole values, and values
that reach Docker, pip or debootstrap are checked against what those accept (refenv.model.accepts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from harness import compat, inputs
from harness.inputs import InputError, shorten
from refenv.errors import MatrixError
from refenv.model import accepts, project_paths, yaml_tree
from refenv.model.matrix import (
    DOCKERFILE,
    HOST_KINDS,
    IMAGE,
    MODES,
    NETWORK_DEFAULT,
    NETWORKS,
    Base,
    Bootstrap,
    Environment,
    Host,
    Matrix,
    RunSettings,
    Scenario,
    Secret,
    TeamImage,
)
from refenv.model.placement import BACKENDS, LAUNCHERS, KubePlacement, SlurmPlacement

T = TypeVar("T")
STR = "tag:yaml.org,2002:str"
# Every pattern here is matched with fullmatch: `$` would let a trailing newline through. Digits are
# ASCII only ([0-9]; `\d` also takes Arabic-Indic and full-width digits, which no tool reads as numbers).
VERSION_RE = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")
VARIANT_RE = re.compile(r"cpu|cu[0-9]{3,4}")
PYTHON_RE = re.compile(r"3\.[0-9]{1,2}")
BOOL = "tag:yaml.org,2002:bool"
GPUS_RE = re.compile(r"all|none|device=[0-9]{1,3}(?:,[0-9]{1,3}){0,63}")
# A fully qualified CDI device name, vendor/class=name (the CDI spec's rules; refenv/run/cdi_rules.py).
CDI_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?/[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}"
                         r"[A-Za-z0-9])?=[A-Za-z0-9](?:[A-Za-z0-9_.:-]{0,126}[A-Za-z0-9])?")
ENGINES = ("docker", "podman")
SIZE_RE = re.compile(r"[0-9]{1,9}[kmg]?", re.I)
# The daemon refuses a smaller --memory: "Minimum memory limit allowed is 6MB" (moby daemon/daemon_unix.go,
# linuxMinMemory = 6291456).
DOCKER_MIN_MEMORY = 6 << 20
MAX_BYTES = 1024 * 1024  # matrix.yaml is a few kB
# The characters the YAML 1.1 spec (and PyYAML's reader) refuses to read; refused here with their line.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
MAX_TEXT = 500           # descriptions; other strings have tighter limits from their consumers
SCENARIO_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_DEVICE_ORDER",
                 "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING", "PYTORCH_CUDA_ALLOC_CONF")


class _Reader:
    """Typed access to YAML nodes that raises MatrixError with the node's line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: yaml.Node | None, field: str, expected: str) -> MatrixError:
        line = node.start_mark.line + 1 if node is not None else None
        return MatrixError(self.path, line, field, expected)

    def check(self, node: yaml.Node, field: str, accept: Callable[[str, str], str]) -> str:
        """A string that `accept` (a refenv.model.accepts or harness.inputs check) takes; its refusal gets the line."""
        value = self.string(node, field)
        try:
            return accept(value, field)
        except InputError as exc:
            raise self.fail(node, field, str(exc).removeprefix(f"{field}: ")) from None

    def mapping(self, node: yaml.Node, field: str, allowed: tuple[str, ...] | None = None) -> dict[str, yaml.Node]:
        return {key: value for key, (_, value) in self.entries(node, field, allowed).items()}

    def entries(self, node: yaml.Node, field: str,
                allowed: tuple[str, ...] | None = None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """Each key with its own node (for errors on the key's line) and its value's node."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field or "file", f"expected a mapping (key: value lines), got {_shown(node)}")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, field or "file", f"keys must be plain names, got {_shown(key_node)}")
            key = str(key_node.value)
            sub = f"{field}.{key}" if field else key
            if len(key) > MAX_TEXT:
                raise self.fail(key_node, field or "file", f"a key of {len(key)} characters: {shorten(key)}")
            if key in out:
                raise self.fail(key_node, sub, "appears twice")
            if allowed is not None and key not in allowed:
                raise self.fail(key_node, sub, f"unknown key; expected one of: {', '.join(allowed)}")
            out[key] = (key_node, value_node)
        return out

    def string(self, node: yaml.Node, field: str, pattern: re.Pattern[str] | None = None, hint: str = "",
               max_len: int = MAX_TEXT) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            shown = getattr(node, "value", "?")
            extra = " (quote it: YAML reads an unquoted 2.10 as the number 2.1)" if isinstance(shown, str) and \
                re.fullmatch(r"[0-9]+\.[0-9]+", shown) else ""
            what = "" if not hint else f" {hint}" if hint.startswith("(") else f": {hint}"
            raise self.fail(node, field, f"expected a string{what}{extra}, got {_shown(node)}")
        value = str(node.value)
        if len(value) > max_len:
            raise self.fail(node, field, f"longer than {max_len} characters ({len(value)}): {shorten(value)}")
        if pattern is not None and not pattern.fullmatch(value):
            raise self.fail(node, field, f"expected {hint or pattern.pattern}, got {shorten(value)}")
        return value

    def number(self, node: yaml.Node, field: str, kind: Callable[[str], T], minimum: float = 0,
               maximum: float = 1e6) -> T:
        """A finite number of ASCII digits in [minimum, maximum]; nan, inf, 1e400 and 5,000 digits refused."""
        text = str(node.value) if isinstance(node, yaml.ScalarNode) and node.tag != STR else None
        expected = f"expected a number from {minimum:g} to {maximum:g}, got {_shown(node)}"
        try:
            if text is None:
                raise InputError(expected)
            value: float = inputs.parse_int(text, field, int(minimum), int(maximum)) if kind is int \
                else inputs.parse_float(text, field, minimum, maximum)
        except InputError:
            raise self.fail(node, field, expected) from None
        return kind(str(value))

    def boolean(self, node: yaml.Node, field: str) -> bool:
        if not isinstance(node, yaml.ScalarNode) or node.tag != BOOL:
            raise self.fail(node, field, f"expected true or false, got {_shown(node)}")
        return str(node.value).lower() in ("true", "yes", "on", "y")

    def strings(self, node: yaml.Node, field: str) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, f"expected a list, e.g. [numpy, einops], got {_shown(node)}")
        return tuple(self.string(item, f"{field}[{i}]") for i, item in enumerate(node.value))

    def checked_strings(self, node: yaml.Node, field: str, accept: Callable[[str, str], str]) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, f"expected a list, e.g. [numpy, einops], got {_shown(node)}")
        return tuple(self.check(item, f"{field}[{i}]", accept) for i, item in enumerate(node.value))


def _shown(node: yaml.Node | None) -> str:
    """A node as its user wrote it, for an error: a scalar's value (shortened), else what kind of thing it is."""
    if isinstance(node, yaml.ScalarNode):
        return shorten(node.value)
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    return "nothing"


def _as_field(key: str) -> str:
    """A key as part of a field path: itself when short and printable, else its shortened repr."""
    return key if len(key) <= 60 and key.isprintable() else shorten(key)


def _control_line(text: str) -> int | None:
    """The line of the first character YAML does not print (C0/C1 controls but tab and line ends)."""
    m = _CONTROL_RE.search(text)
    return None if m is None else text.count("\n", 0, m.start()) + 1


def load(path: str | os.PathLike[str]) -> Matrix:
    """Read and validate a matrix file."""
    p = Path(path)
    if not p.exists():
        raise MatrixError(str(p), None, "file", "not found; pass --matrix PATH or run from the project folder")
    try:
        data = inputs.read_bounded(p, "file", MAX_BYTES)
        text = inputs.decode_utf8(data, "file")
    except InputError as exc:
        line, _, rest = str(exc).removeprefix("file: ").partition(": ")
        if line.startswith("line "):
            raise MatrixError(str(p), int(line[5:]), "file", rest) from None
        raise MatrixError(str(p), None, "file", str(exc).removeprefix("file: ")) from None
    return parse(text, str(p))


def parse(text: str, path: str = "matrix.yaml") -> Matrix:
    r = _Reader(path)
    if len(text) > MAX_BYTES:
        raise MatrixError(path, None, "file", f"{len(text)} characters, more than the {MAX_BYTES} a matrix may hold")
    bad = _control_line(text)
    if bad is not None:
        raise MatrixError(path, bad, "file", "holds a control character; a matrix is plain text")
    deep = inputs.nesting_error(text, inputs.MAX_DEPTH)
    if deep is not None:
        raise MatrixError(path, int(deep[5:]), "syntax", f"brackets nest deeper than {inputs.MAX_DEPTH} levels")
    root = yaml_tree.compose(text, path)
    if root is None:
        raise MatrixError(path, None, "file", "is empty; expected version, environments, hosts and scenarios")
    top = r.mapping(root, "", ("version", "base", "environments", "hosts", "scenarios", "run"))
    for key in ("version", "environments", "hosts", "scenarios"):
        if key not in top:
            raise r.fail(root, key, "missing; a matrix needs version, environments, hosts and scenarios")
    if r.number(top["version"], "version", int, 0, 1000) != 1:
        raise r.fail(top["version"], "version", "expected 1 (the only version this refenv reads)")
    base = _base(r, top["base"], "base") if "base" in top else Base()
    folder = Path(path).resolve().parent  # where a dockerfile: and its context: are found
    envs = _named(r, top["environments"], "environments",
                  lambda n, name, f: _environment(r, n, name, f, base, folder), accepts.environment_name)
    hosts = _named(r, top["hosts"], "hosts", lambda n, name, f: _host(r, n, name, f))
    scenarios = _named(r, top["scenarios"], "scenarios", lambda n, name, f: _scenario(r, n, name, f))
    run = _run(r, top["run"], "run") if "run" in top else RunSettings()
    return Matrix(path, tuple(envs), tuple(hosts), tuple(scenarios), run)


def _named(r: _Reader, node: yaml.Node, field: str, make: Callable[[yaml.Node, str, str], T],
           accept: Callable[[str, str], str] = accepts.plain_name) -> list[T]:
    items = r.entries(node, field)
    if not items:
        raise r.fail(node, field, "is empty; name at least one")
    out = []
    for name, (key, value) in items.items():
        try:
            accept(name, "name")
        except InputError as exc:
            # The key's own line (the value's may be the next one) and its path, as for any other field.
            raise r.fail(key, f"{field}.{_as_field(name)}", f"bad name: {str(exc).removeprefix('name: ')}") from None
        out.append(make(value, name, f"{field}.{name}"))
    return out


def _base(r: _Reader, node: yaml.Node, field: str) -> Base:
    m = r.mapping(node, field, ("image", "bootstrap"))
    image = r.check(m["image"], f"{field}.image", accepts.image_reference) if "image" in m else None
    boot = Bootstrap()
    if "bootstrap" in m:
        # debootstrap runs as root: its suite, mirror and packages are checked here, before it sees them.
        b = r.mapping(m["bootstrap"], f"{field}.bootstrap", ("suite", "mirror", "packages"))
        boot = Bootstrap(
            r.check(b["suite"], f"{field}.bootstrap.suite", accepts.suite) if "suite" in b else boot.suite,
            r.check(b["mirror"], f"{field}.bootstrap.mirror", accepts.url) if "mirror" in b else boot.mirror,
            r.checked_strings(b["packages"], f"{field}.bootstrap.packages", accepts.deb_package)
            if "packages" in b else boot.packages,
        )
    return Base(image, boot)


RECIPE_KEYS = ("torch", "variant", "python", "packages", "index_url", "base")
BUILD_KEYS = ("context", "build_args", "target", "platform", "network", "secrets", project_paths.ALLOW)
TEAM_KEYS = ("image", "dockerfile", *BUILD_KEYS)
# A build stage's name (moby's `FROM ... AS name`: letters, digits, '_', '-', '.'), a platform (os/arch[/variant],
# containerd's platforms package), a BuildKit secret id, an environment variable's name.
STAGE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,127}")
PLATFORM_RE = re.compile(r"[a-z0-9]{1,32}/[a-z0-9_]{1,32}(?:/[a-z0-9]{1,32})?")
SECRET_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ENV_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
BUILD_ARG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}")
# An image's Python: a command on its PATH or an absolute path, whose last name names an interpreter (python,
# python3.12, python3.13t free-threaded, pypy3, a team's own wrapper such as team-python); no '.' or '..'
# component, no option, and not in the kernel's or the devices' folders (/dev/null would 'run' and say nothing).
_INTERPRETER_NAME = r"(?![.-])[A-Za-z0-9_.+-]{0,32}(?:python|pypy)[A-Za-z0-9_.+-]{0,32}"
_COMPONENT_RE = r"(?!\.{1,2}/)[A-Za-z0-9_.+-]{1,64}"
INTERPRETER_RE = re.compile(rf"{_INTERPRETER_NAME}|(?!/(?:dev|proc|sys)/)/(?:{_COMPONENT_RE}/){{0,16}}"
                            rf"{_INTERPRETER_NAME}")
INTERPRETER_HINT = ("the image's Python: a command on its PATH such as python3 or python3.12, or an absolute path "
                    "such as /opt/conda/bin/python")


def _environment(r: _Reader, node: yaml.Node, name: str, field: str, base: Base, root: Path) -> Environment:
    m = r.mapping(node, field, RECIPE_KEYS + TEAM_KEYS)
    if "image" in m or "dockerfile" in m:
        return _team_environment(r, node, m, name, field, base, root)
    for key in BUILD_KEYS:
        if key in m:
            raise r.fail(m[key], f"{field}.{key}", "only a dockerfile: environment takes a build context, "
                         "build arguments, target, platform, network, secrets and allow_outside")
    if "torch" not in m:
        raise r.fail(node, f"{field}.torch", "missing; the torch release, e.g. \"2.14.1\"")
    torch = r.string(m["torch"], f"{field}.torch", VERSION_RE, "a torch release such as \"2.14.1\"")
    variant = r.string(m["variant"], f"{field}.variant", VARIANT_RE, "'cpu' or 'cuXYZ' such as 'cu130'") \
        if "variant" in m else _default_variant(r, m["torch"], f"{field}.variant", torch)
    release = compat.torch_release(torch)
    if release is not None and variant not in release.variants and \
            compat.cuda_variant(release.default_cuda) != variant:
        raise r.fail(m.get("variant", node), f"{field}.variant",
                     f"torch {compat.torch_series(torch)} has no {variant} build; it has "
                     f"{', '.join(release.variants)} (default CUDA {release.default_cuda})")
    python = _python(r, m["python"], f"{field}.python") if "python" in m else "3.11"
    # pip would read "-r/etc/passwd" or "--extra-index-url=..." as options: only requirements pass.
    packages = r.checked_strings(m["packages"], f"{field}.packages", accepts.requirement) if "packages" in m else ()
    index_url = r.check(m["index_url"], f"{field}.index_url", accepts.url) if "index_url" in m else None
    env_base = _base(r, m["base"], f"{field}.base") if "base" in m else base
    return Environment(name, torch, variant, python, packages, index_url, env_base)


def _team_environment(r: _Reader, node: yaml.Node, m: dict[str, yaml.Node], name: str, field: str, base: Base,
                      root: Path) -> Environment:
    """`image: REF` or `dockerfile: PATH` (with `context:` and `build_args:`): torch is read from the image."""
    if "image" in m and "dockerfile" in m:
        raise r.fail(m["dockerfile"], f"{field}.dockerfile", "an environment is an image or a Dockerfile, not both")
    for key in ("torch", "variant", "packages", "index_url", "base"):
        if key in m:
            raise r.fail(m[key], f"{field}.{key}", "an image or dockerfile environment takes its torch, CUDA and "
                         "packages from the image itself: remove this key")
    interpreter = r.string(m["python"], f"{field}.python", INTERPRETER_RE, INTERPRETER_HINT, 1100) \
        if "python" in m else "python3"
    if "image" in m:
        for key in BUILD_KEYS:
            if key in m:
                raise r.fail(m[key], f"{field}.{key}", "only a dockerfile: environment is built: an image: is used as "
                             "it is")
        ref = r.check(m["image"], f"{field}.image", accepts.image_reference)
        return Environment(name, "", "", "", base=base, team=TeamImage(IMAGE, image=ref, interpreter=interpreter))
    outside = r.boolean(m[project_paths.ALLOW], f"{field}.{project_paths.ALLOW}") if project_paths.ALLOW in m \
        else False
    dockerfile = _inside(r, m["dockerfile"], f"{field}.dockerfile", root, False, outside)
    context = _inside(r, m["context"], f"{field}.context", root, True, outside) if "context" in m \
        else str(Path(dockerfile).parent)
    args: list[tuple[str, str]] = []
    if "build_args" in m:
        for key, (key_node, value) in r.entries(m["build_args"], f"{field}.build_args").items():
            if not BUILD_ARG_RE.fullmatch(key):
                raise r.fail(key_node, f"{field}.build_args.{_as_field(key)}", "a build argument name (letters, "
                             "digits and _)")
            args.append((key, r.check(value, f"{field}.build_args.{key}", accepts.env_value)))
    return Environment(name, "", "", "", base=base, team=TeamImage(
        DOCKERFILE, dockerfile=dockerfile, context=context, build_args=tuple(args), interpreter=interpreter,
        target=r.string(m["target"], f"{field}.target", STAGE_RE, "a stage name of the Dockerfile (FROM ... AS "
                        "name)") if "target" in m else None,
        platform=r.string(m["platform"], f"{field}.platform", PLATFORM_RE, "a platform such as linux/amd64 or "
                          "linux/arm64/v8") if "platform" in m else None,
        network=_network(r, m["network"], f"{field}.network") if "network" in m else NETWORK_DEFAULT,
        secrets=_secrets(r, m["secrets"], f"{field}.secrets", root) if "secrets" in m else ()))


def _network(r: _Reader, node: yaml.Node, field: str) -> str:
    text = r.string(node, field)
    if text not in NETWORKS:
        raise r.fail(node, field, f"expected {', '.join(NETWORKS)} (default: the builder's own network, as docker "
                     f"build has it; none: a hermetic build), got {shorten(text)}")
    return text


def _secrets(r: _Reader, node: yaml.Node, field: str, root: Path) -> tuple[Secret, ...]:
    """`secrets: {ID: {env: VAR}}` or `{ID: {file: PATH}}`: what `docker build --secret id=ID,env=VAR|src=PATH`
    takes. A file may live anywhere (it is mounted for one RUN, never sent in the context nor kept in a layer)."""
    out = []
    for key, (key_node, value) in r.entries(node, field).items():
        if not SECRET_ID_RE.fullmatch(key):
            raise r.fail(key_node, f"{field}.{_as_field(key)}", "a secret id (letters, digits, '_', '-', '.')")
        source = r.mapping(value, f"{field}.{key}", ("env", "file"))
        if len(source) != 1:
            raise r.fail(value, f"{field}.{key}", "give one of env: VARIABLE or file: PATH")
        if "env" in source:
            out.append(Secret(key, env=r.string(source["env"], f"{field}.{key}.env", ENV_VAR_RE,
                                                "an environment variable's name")))
            continue
        text = r.string(source["file"], f"{field}.{key}.file", max_len=project_paths.PATH_MAX)
        path = (root / os.path.expanduser(text)).resolve()
        if not path.is_file():
            raise r.fail(source["file"], f"{field}.{key}.file", f"{shorten(text)} is not a file (looked for {path})")
        out.append(Secret(key, file=str(path)))
    return tuple(out)


def _inside(r: _Reader, node: yaml.Node, field: str, root: Path, folder: bool, allow_outside: bool) -> str:
    """A file (or folder) named relative to the matrix file's folder: it exists, and it resolves inside that
    folder unless allow_outside (refenv/model/project_paths.py)."""
    text = r.string(node, field, max_len=project_paths.PATH_MAX)
    try:
        return project_paths.inside(text, root, folder, allow_outside)
    except InputError as exc:
        raise r.fail(node, field, str(exc)) from None


def _python(r: _Reader, node: yaml.Node, field: str) -> str:
    """A Python that exists for torch: from the oldest any torch release in refenv's tables supports to the
    newest (harness/data/compat.json's per-release [min, max]); '3.99' or '3.5' has no torch wheel to install."""
    text = r.string(node, field, PYTHON_RE, "a Python such as \"3.11\"")
    releases = compat.load().torch_releases.values()
    low = min((rel.python_min for rel in releases), key=compat.parse_version)
    high = max((rel.python_max for rel in releases), key=compat.parse_version)
    if not compat.parse_version(low) <= compat.parse_version(text) <= compat.parse_version(high):
        raise r.fail(node, field, f"Python {text}: no torch release in refenv's tables is built for it; torch "
                     f"wheels exist for Python {low} to {high}")
    return text


def _default_variant(r: _Reader, node: yaml.Node, field: str, torch: str) -> str:
    release = compat.torch_release(torch)
    if release is None:
        raise r.fail(node, field, f"missing, and torch {torch} is not in refenv's tables: name the variant")
    return compat.cuda_variant(release.default_cuda)


def _host(r: _Reader, node: yaml.Node, name: str, field: str) -> Host:
    from refenv.model import profiles

    m = r.mapping(node, field, ("kind", "profile", "description", "slurm", "kubernetes"))
    if "kind" not in m:
        raise r.fail(node, f"{field}.kind", f"missing; one of {', '.join(HOST_KINDS)}")
    kind = r.string(m["kind"], f"{field}.kind", re.compile("|".join(HOST_KINDS)), " | ".join(HOST_KINDS))
    if kind == "real" and name == "cpu":  # run/measurements.CPU: the measurement ids ENV/cpu and ENV/HOST would clash
        raise r.fail(m["kind"], field, "a real host cannot be named cpu: ENV/cpu names each environment's CPU "
                     "measurement; rename the host")
    profile = r.string(m["profile"], f"{field}.profile", max_len=accepts.NAME_MAX) if "profile" in m else None
    if kind == "simulated":
        if profile is None:
            raise r.fail(node, f"{field}.profile", "a simulated host needs a driver profile, e.g. profile: r535")
        known = profiles.names()
        if profile not in known:
            raise r.fail(m["profile"], f"{field}.profile", f"unknown profile {shorten(profile)}; known: "
                         f"{', '.join(known)}")
    elif profile is not None:
        raise r.fail(m["profile"], f"{field}.profile", f"only simulated hosts take a profile (this one is {kind})")
    description = r.string(m["description"], f"{field}.description") if "description" in m else ""
    for key in ("slurm", "kubernetes"):
        if key in m and kind != "real":
            raise r.fail(m[key], f"{field}.{key}", f"only real hosts take a placement (this one is {kind}; "
                         "simulated hosts run on any node)")
    slurm = _slurm(r, m["slurm"], f"{field}.slurm") if "slurm" in m else None
    kube = _kubernetes(r, m["kubernetes"], f"{field}.kubernetes") if "kubernetes" in m else None
    return Host(name, kind, profile, description, slurm=slurm, kubernetes=kube)


SLURM_FIELDS = ("constraint", "gres", "partition", "account")
# Every placement value reaches sbatch or the Kubernetes API as an argument: each is matched whole
# (fullmatch: no trailing newline, which `$` lets through) and bounded.
# sbatch(1): --gres name[[:type]:count]; --partition and --account a name or a comma-separated list of names;
# --constraint features joined by & (and), | (or), [..] (matching OR), *N (count), ( ) and ! (not).
GRES_RE = re.compile(r"[a-z][a-z0-9_]{0,31}(?::[A-Za-z0-9_.-]{1,64})?(?::[0-9]{1,4})?")
SLURM_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(?:,[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}){0,15}")
CONSTRAINT_RE = re.compile(r"[A-Za-z0-9_.:&|()\[\]*!-]{1,256}")
SLURM_PATTERNS = {
    "constraint": (CONSTRAINT_RE, "Slurm features such as 'a100&ib' or '[rack1|rack2]' (letters, digits, _ . : "
                   "and the operators & | [ ] ( ) * !)"),
    "gres": (GRES_RE, "a GRES such as 'gpu:1' or 'gpu:h100:2'"),
    "partition": (SLURM_NAME_RE, "a partition name such as 'gpu', or a comma-separated list of them"),
    "account": (SLURM_NAME_RE, "an account name such as 'ml-team'"),
}
# Kubernetes labels (kubernetes.io, "Labels and Selectors: syntax and character set"): a key is an optional
# DNS-subdomain prefix (253 characters at most) and '/', then a name of at most 63; a value at most 63.
_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
LABEL_KEY_RE = re.compile(rf"(?:(?=[a-z0-9.-]{{1,253}}/){_DNS_LABEL}(?:\.{_DNS_LABEL})*/)?"
                          r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
LABEL_VALUE_RE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
NAMESPACE_RE = re.compile(_DNS_LABEL)  # a namespace is a DNS label (RFC 1123)
MAX_SELECTOR = 32       # node_selector entries
# GPUs a pod asks for: no node holds more than 16 (DGX and HGX boards hold 8; the largest boards 16).
MAX_GPUS = 16
MAX_DEVICES = 64        # CDI devices one scenario names


def _slurm(r: _Reader, node: yaml.Node, field: str) -> SlurmPlacement:
    m = r.mapping(node, field, SLURM_FIELDS)
    values = {k: r.string(m[k], f"{field}.{k}", *SLURM_PATTERNS[k]) for k in SLURM_FIELDS if k in m}
    return SlurmPlacement(**values)


def _kubernetes(r: _Reader, node: yaml.Node, field: str) -> KubePlacement:
    m = r.mapping(node, field, ("node_selector", "gpus", "namespace"))
    selector: list[tuple[str, str]] = []
    if "node_selector" in m:
        entries = r.entries(m["node_selector"], f"{field}.node_selector")
        if len(entries) > MAX_SELECTOR:
            raise r.fail(m["node_selector"], f"{field}.node_selector", f"{len(entries)} labels; a selector holds at "
                         f"most {MAX_SELECTOR}")
        for key, (key_node, value) in entries.items():
            text = r.string(value, f"{field}.node_selector.{_as_field(key)}", hint="(quote numbers: \"535\")")
            if not LABEL_KEY_RE.fullmatch(key):
                raise r.fail(key_node, f"{field}.node_selector.{_as_field(key)}", "a Kubernetes label key such as "
                             "nvidia.com/cuda.driver.major (an optional DNS prefix and '/', then a name of at most "
                             "63 letters, digits, '-', '_' and '.')")
            if not LABEL_VALUE_RE.fullmatch(text):
                raise r.fail(value, f"{field}.node_selector.{key}", "a Kubernetes label value (at most 63 letters, "
                             "digits, '-', '_' and '.', e.g. \"535\")")
            selector.append((key, text))
    d = KubePlacement()
    return KubePlacement(
        node_selector=tuple(selector),
        gpus=r.number(m["gpus"], f"{field}.gpus", int, 0, MAX_GPUS) if "gpus" in m else d.gpus,
        namespace=r.string(m["namespace"], f"{field}.namespace", NAMESPACE_RE, "a namespace name (a DNS label: "
                           "lowercase letters, digits and '-', at most 63)") if "namespace" in m else d.namespace)


def _scenario(r: _Reader, node: yaml.Node, name: str, field: str) -> Scenario:
    m = r.mapping(node, field, ("gpus", "env", "description", "devices"))
    devices: tuple[str, ...] = ()
    if "devices" in m:
        if not isinstance(m["devices"], yaml.SequenceNode) or not m["devices"].value:
            raise r.fail(m["devices"], f"{field}.devices", "expected a list of CDI names, e.g. [nvidia.com/gpu=all]")
        if len(m["devices"].value) > MAX_DEVICES:
            raise r.fail(m["devices"], f"{field}.devices", f"{len(m['devices'].value)} devices; a scenario names at "
                         f"most {MAX_DEVICES} (nvidia.com/gpu=all names every GPU at once)")
        seen: dict[str, int] = {}
        for i, item in enumerate(m["devices"].value):
            device = r.string(item, f"{field}.devices[{i}]", CDI_NAME_RE, "a CDI device name vendor/class=name such "
                              "as nvidia.com/gpu=all, nvidia.com/gpu=0 or nvidia.com/gpu=GPU-<uuid>")
            if device in seen:
                raise r.fail(item, f"{field}.devices[{i}]", f"{device} is named twice (first as "
                             f"devices[{seen[device]}])")
            seen[device] = i
        devices = tuple(seen)
    gpus = r.string(m["gpus"], f"{field}.gpus", GPUS_RE, "'all', 'none' or 'device=0,1'") if "gpus" in m \
        else "none" if devices else "all"
    if devices and gpus != "none":
        raise r.fail(m["gpus"], f"{field}.gpus", "a scenario asks for GPUs by --gpus or by CDI devices, not both "
                     "(leave gpus out, or set it to none)")
    env: list[tuple[str, str]] = []
    if "env" in m:
        for key, (key_node, value) in r.entries(m["env"], f"{field}.env").items():
            if key not in SCENARIO_VARS:
                raise r.fail(key_node, f"{field}.env.{_as_field(key)}", f"not a variable scenarios set; expected "
                             f"one of {', '.join(SCENARIO_VARS)}")
            env.append((key, r.check(value, f"{field}.env.{key}", accepts.env_value)))
    description = r.string(m["description"], f"{field}.description") if "description" in m else ""
    return Scenario(name, gpus, tuple(env), description, devices)


def _run(r: _Reader, node: yaml.Node, field: str) -> RunSettings:
    m = r.mapping(node, field, ("timeout_s", "init_timeout_s", "memory", "pids", "parallel", "probes",
                                "memory_check", "backend", "launcher", "engine"))
    d = RunSettings()
    mode = re.compile("|".join(MODES))
    return RunSettings(
        timeout_s=r.number(m["timeout_s"], f"{field}.timeout_s", float, 1, 86_400) if "timeout_s" in m
        else d.timeout_s,
        init_timeout_s=r.number(m["init_timeout_s"], f"{field}.init_timeout_s", float, 1, 86_400)
        if "init_timeout_s" in m else d.init_timeout_s,
        memory=_memory(r, m["memory"], f"{field}.memory") if "memory" in m else d.memory,
        pids=r.number(m["pids"], f"{field}.pids", int, 16, 4_194_304) if "pids" in m else d.pids,
        parallel=r.number(m["parallel"], f"{field}.parallel", int, 0, 1024) if "parallel" in m else d.parallel,
        probes=r.string(m["probes"], f"{field}.probes", mode, "quick | full | off") if "probes" in m else d.probes,
        memory_check=r.string(m["memory_check"], f"{field}.memory_check", mode, "quick | full | off")
        if "memory_check" in m else d.memory_check,
        backend=r.string(m["backend"], f"{field}.backend", re.compile(f"^({'|'.join(BACKENDS)})$"),
                         " | ".join(BACKENDS)) if "backend" in m else d.backend,
        launcher=r.string(m["launcher"], f"{field}.launcher", re.compile(f"^({'|'.join(LAUNCHERS)})$"),
                          " | ".join(LAUNCHERS)) if "launcher" in m else d.launcher,
        engine=r.string(m["engine"], f"{field}.engine", re.compile("|".join(ENGINES)), " | ".join(ENGINES))
        if "engine" in m else d.engine,
    )


def _memory(r: _Reader, node: yaml.Node, field: str) -> str:
    """A container memory limit as Docker reads it (k, m, g are powers of 1024), at least Docker's minimum."""
    text = r.string(node, field, SIZE_RE, "a size such as '6g' or '512m'")
    if size_bytes(text) < DOCKER_MIN_MEMORY:
        raise r.fail(node, field, f"{text!r} is below the 6m (6 MiB) Docker allows a container at least; "
                     "a cell needs about 1g")
    return text


def size_bytes(text: str) -> int:
    """'6g' -> 6 GiB, '512m' -> 512 MiB, '4096' -> 4096 bytes (Docker's units for --memory)."""
    unit = text[-1].lower() if text[-1].isalpha() else ""
    return int(text[:-1] if unit else text) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]

