"""Read matrix.yaml into the model, validating every field; an error names the file, line and field.

Parsing goes through PyYAML's node tree (compose) rather than plain dicts so that each value keeps
its line. Unknown keys are errors, as are duplicate keys (YAML itself would keep the last silently).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness import compat
from refenv.errors import MatrixError
from refenv.matrix import HOST_KINDS, Base, Bootstrap, Environment, Host, Matrix, RunSettings, Scenario
from refenv.placement import BACKENDS, LAUNCHERS, KubePlacement, SlurmPlacement

T = TypeVar("T")
STR = "tag:yaml.org,2002:str"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
VARIANT_RE = re.compile(r"^(cpu|cu\d{3,4})$")
GPUS_RE = re.compile(r"^(all|none|device=\d+(,\d+)*)$")
SIZE_RE = re.compile(r"^\d+[kmg]?$", re.I)
SCENARIO_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_DEVICE_ORDER",
                 "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING", "PYTORCH_CUDA_ALLOC_CONF")


class _Reader:
    """Typed access to YAML nodes that raises MatrixError with the node's line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: yaml.Node | None, field: str, expected: str) -> MatrixError:
        line = node.start_mark.line + 1 if node is not None else None
        return MatrixError(self.path, line, field, expected)

    def mapping(self, node: yaml.Node, field: str, allowed: tuple[str, ...] | None = None) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field, "expected a mapping (key: value lines)")
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, field, "keys must be plain names")
            key = str(key_node.value)
            sub = f"{field}.{key}" if field else key
            if key in out:
                raise self.fail(key_node, sub, "appears twice")
            if allowed is not None and key not in allowed:
                raise self.fail(key_node, sub, f"unknown key; expected one of: {', '.join(allowed)}")
            out[key] = value_node
        return out

    def string(self, node: yaml.Node, field: str, pattern: re.Pattern[str] | None = None, hint: str = "") -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            shown = getattr(node, "value", "?")
            extra = " (quote it: YAML reads an unquoted 2.10 as the number 2.1)" if isinstance(shown, str) and \
                re.fullmatch(r"\d+\.\d+", shown) else ""
            raise self.fail(node, field, f"expected a string{' ' + hint if hint else ''}{extra}, got {shown!r}")
        value = str(node.value)
        if pattern is not None and not pattern.match(value):
            raise self.fail(node, field, f"expected {hint or pattern.pattern}, got {value!r}")
        return value

    def number(self, node: yaml.Node, field: str, kind: Callable[[str], T], minimum: float = 0) -> T:
        try:
            value = kind(str(node.value)) if isinstance(node, yaml.ScalarNode) else None
        except ValueError:
            value = None
        if value is None or float(value) < minimum:  # type: ignore[arg-type]
            raise self.fail(node, field, f"expected a number >= {minimum:g}, got {getattr(node, 'value', '?')!r}")
        return value

    def strings(self, node: yaml.Node, field: str) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, "expected a list, e.g. [numpy, einops]")
        return tuple(self.string(item, f"{field}[{i}]") for i, item in enumerate(node.value))


def load(path: str | os.PathLike[str]) -> Matrix:
    """Read and validate a matrix file."""
    p = Path(path)
    if not p.is_file():
        raise MatrixError(str(p), None, "file", "not found; pass --matrix PATH or run from the project folder")
    return parse(p.read_text(encoding="utf-8"), str(p))


def parse(text: str, path: str = "matrix.yaml") -> Matrix:
    r = _Reader(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise MatrixError(path, line, "syntax", f"not valid YAML: {exc.problem}") from None
    if root is None:
        raise MatrixError(path, None, "file", "is empty; expected version, environments, hosts and scenarios")
    top = r.mapping(root, "", ("version", "base", "environments", "hosts", "scenarios", "run"))
    for key in ("version", "environments", "hosts", "scenarios"):
        if key not in top:
            raise r.fail(root, key, "missing; a matrix needs version, environments, hosts and scenarios")
    if r.number(top["version"], "version", int) != 1:
        raise r.fail(top["version"], "version", "expected 1 (the only version this refenv reads)")
    base = _base(r, top["base"], "base") if "base" in top else Base()
    envs = _named(r, top["environments"], "environments", lambda n, name, f: _environment(r, n, name, f, base))
    hosts = _named(r, top["hosts"], "hosts", lambda n, name, f: _host(r, n, name, f))
    scenarios = _named(r, top["scenarios"], "scenarios", lambda n, name, f: _scenario(r, n, name, f))
    run = _run(r, top["run"], "run") if "run" in top else RunSettings()
    return Matrix(path, tuple(envs), tuple(hosts), tuple(scenarios), run)


def _named(r: _Reader, node: yaml.Node, field: str, make: Callable[[yaml.Node, str, str], T]) -> list[T]:
    items = r.mapping(node, field)
    if not items:
        raise r.fail(node, field, "is empty; name at least one")
    out = []
    for name, value in items.items():
        if not NAME_RE.match(name):
            raise r.fail(value, f"{field}.{name}", "names use letters, digits, '.', '_' and '-'")
        out.append(make(value, name, f"{field}.{name}"))
    return out


def _base(r: _Reader, node: yaml.Node, field: str) -> Base:
    m = r.mapping(node, field, ("image", "bootstrap"))
    image = r.string(m["image"], f"{field}.image") if "image" in m else None
    boot = Bootstrap()
    if "bootstrap" in m:
        b = r.mapping(m["bootstrap"], f"{field}.bootstrap", ("suite", "mirror", "packages"))
        boot = Bootstrap(
            r.string(b["suite"], f"{field}.bootstrap.suite") if "suite" in b else boot.suite,
            r.string(b["mirror"], f"{field}.bootstrap.mirror") if "mirror" in b else boot.mirror,
            r.strings(b["packages"], f"{field}.bootstrap.packages") if "packages" in b else boot.packages,
        )
    return Base(image, boot)


def _environment(r: _Reader, node: yaml.Node, name: str, field: str, base: Base) -> Environment:
    m = r.mapping(node, field, ("torch", "variant", "python", "packages", "index_url", "base"))
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
    python = r.string(m["python"], f"{field}.python", re.compile(r"^3\.\d+$"), "a Python such as \"3.11\"") \
        if "python" in m else "3.11"
    packages = r.strings(m["packages"], f"{field}.packages") if "packages" in m else ()
    index_url = r.string(m["index_url"], f"{field}.index_url") if "index_url" in m else None
    env_base = _base(r, m["base"], f"{field}.base") if "base" in m else base
    return Environment(name, torch, variant, python, packages, index_url, env_base)


def _default_variant(r: _Reader, node: yaml.Node, field: str, torch: str) -> str:
    release = compat.torch_release(torch)
    if release is None:
        raise r.fail(node, field, f"missing, and torch {torch} is not in refenv's tables: name the variant")
    return compat.cuda_variant(release.default_cuda)


def _host(r: _Reader, node: yaml.Node, name: str, field: str) -> Host:
    from refenv import profiles

    m = r.mapping(node, field, ("kind", "profile", "description", "slurm", "kubernetes"))
    if "kind" not in m:
        raise r.fail(node, f"{field}.kind", f"missing; one of {', '.join(HOST_KINDS)}")
    kind = r.string(m["kind"], f"{field}.kind", re.compile(f"^({'|'.join(HOST_KINDS)})$"), " | ".join(HOST_KINDS))
    profile = r.string(m["profile"], f"{field}.profile") if "profile" in m else None
    if kind == "simulated":
        if profile is None:
            raise r.fail(node, f"{field}.profile", "a simulated host needs a driver profile, e.g. profile: r535")
        known = profiles.names()
        if profile not in known:
            raise r.fail(m["profile"], f"{field}.profile", f"unknown profile {profile!r}; known: {', '.join(known)}")
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
GRES_RE = re.compile(r"^[a-z][a-z0-9_]*(:[A-Za-z0-9_.\-]+)?(:\d+)?$")
LABEL_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _slurm(r: _Reader, node: yaml.Node, field: str) -> SlurmPlacement:
    m = r.mapping(node, field, SLURM_FIELDS)
    values = {k: r.string(m[k], f"{field}.{k}") for k in SLURM_FIELDS if k in m}
    if "gres" in values and not GRES_RE.match(values["gres"]):
        raise r.fail(m["gres"], f"{field}.gres", "a GRES such as 'gpu:1' or 'gpu:h100:2'")
    return SlurmPlacement(**values)


def _kubernetes(r: _Reader, node: yaml.Node, field: str) -> KubePlacement:
    m = r.mapping(node, field, ("node_selector", "gpus", "namespace"))
    selector: list[tuple[str, str]] = []
    if "node_selector" in m:
        for key, value in r.mapping(m["node_selector"], f"{field}.node_selector").items():
            text = r.string(value, f"{field}.node_selector.{key}", hint="(quote numbers: \"535\")")
            if not LABEL_KEY_RE.match(key) or not LABEL_VALUE_RE.match(text):
                raise r.fail(value, f"{field}.node_selector.{key}", "a Kubernetes label key and value "
                             "(e.g. nvidia.com/cuda.driver.major: \"535\")")
            selector.append((key, text))
    d = KubePlacement()
    return KubePlacement(
        node_selector=tuple(selector),
        gpus=r.number(m["gpus"], f"{field}.gpus", int, 0) if "gpus" in m else d.gpus,
        namespace=r.string(m["namespace"], f"{field}.namespace", LABEL_VALUE_RE, "a namespace name")
        if "namespace" in m else d.namespace)


def _scenario(r: _Reader, node: yaml.Node, name: str, field: str) -> Scenario:
    m = r.mapping(node, field, ("gpus", "env", "description"))
    gpus = r.string(m["gpus"], f"{field}.gpus", GPUS_RE, "'all', 'none' or 'device=0,1'") if "gpus" in m else "all"
    env: list[tuple[str, str]] = []
    if "env" in m:
        for key, value in r.mapping(m["env"], f"{field}.env").items():
            if key not in SCENARIO_VARS:
                raise r.fail(value, f"{field}.env.{key}", f"not a variable scenarios set; expected one of "
                             f"{', '.join(SCENARIO_VARS)}")
            env.append((key, r.string(value, f"{field}.env.{key}", hint="(quote empty values: \"\")")))
    description = r.string(m["description"], f"{field}.description") if "description" in m else ""
    return Scenario(name, gpus, tuple(env), description)


def _run(r: _Reader, node: yaml.Node, field: str) -> RunSettings:
    m = r.mapping(node, field, ("timeout_s", "memory", "pids", "parallel", "probes", "memory_check", "backend",
                                "launcher"))
    d = RunSettings()
    mode = re.compile(r"^(quick|full|off)$")
    return RunSettings(
        timeout_s=r.number(m["timeout_s"], f"{field}.timeout_s", float, 1) if "timeout_s" in m else d.timeout_s,
        memory=r.string(m["memory"], f"{field}.memory", SIZE_RE, "a size such as '6g'") if "memory" in m else d.memory,
        pids=r.number(m["pids"], f"{field}.pids", int, 16) if "pids" in m else d.pids,
        parallel=r.number(m["parallel"], f"{field}.parallel", int, 0) if "parallel" in m else d.parallel,
        probes=r.string(m["probes"], f"{field}.probes", mode, "quick | full | off") if "probes" in m else d.probes,
        memory_check=r.string(m["memory_check"], f"{field}.memory_check", mode, "quick | full | off")
        if "memory_check" in m else d.memory_check,
        backend=r.string(m["backend"], f"{field}.backend", re.compile(f"^({'|'.join(BACKENDS)})$"),
                         " | ".join(BACKENDS)) if "backend" in m else d.backend,
        launcher=r.string(m["launcher"], f"{field}.launcher", re.compile(f"^({'|'.join(LAUNCHERS)})$"),
                          " | ".join(LAUNCHERS)) if "launcher" in m else d.launcher,
    )


def as_dict(matrix: Matrix) -> dict[str, Any]:
    """The parts of a matrix a report shows."""
    return {
        "path": matrix.path,
        "environments": [e.name for e in matrix.environments],
        "hosts": [h.name for h in matrix.hosts],
        "scenarios": [s.name for s in matrix.scenarios],
    }
