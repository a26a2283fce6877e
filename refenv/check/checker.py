"""`refenv check`'s work: which matrix rows to predict (a Dockerfile's, or every environment of a matrix.yaml), the
facts of each, its predicted cells, readiness and findings.

A Dockerfile alone is checked against the matrix `refenv init` would write beside it (the hosts of `--drivers`,
else every shipped profile; the scenarios Docker can start); a matrix.yaml against its own hosts and scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from refenv.check import bases, predict, sources
from refenv.check.facts import Base, DockerfileFacts, Fact, Where
from refenv.check.lint import Finding, lint
from refenv.check.predict import CellCheck
from refenv.check.reader import read_dockerfile
from refenv.check.resolve import Resolved, resolve
from refenv.check.text import CheckInputError
from refenv.model.matrix import Environment, Matrix
from refenv.readiness import Readiness

MATRIX_NAMES = ("matrix.yaml", "matrix.yml")


@dataclass(frozen=True)
class Checked:
    """One environment's row: where it came from, its facts, its predicted cells and readiness, its findings."""

    name: str
    source: str                          # 'dockerfile', 'image', 'recipe'
    path: str                            # the Dockerfile, the image reference, or the matrix file
    resolved: Resolved
    facts: DockerfileFacts | None
    cells: tuple[CellCheck, ...]
    readiness: Readiness | None
    findings: tuple[Finding, ...]

    @property
    def good(self) -> bool:
        """No error among the findings, and torch would get a GPU somewhere (or nothing could be predicted)."""
        errors = any(f.severity == "error" for f in self.findings)
        nowhere = self.readiness is not None and not self.readiness.ready and bool(self.readiness.refused)
        return not errors and not nowhere and self.resolved.environment is not None


def default_matrix(dockerfile: Path, drivers: str) -> Matrix:
    """The matrix `refenv init --drivers ...` writes for this one Dockerfile (its hosts and scenarios)."""
    from refenv.model import matrix_yaml, scaffold

    planned = scaffold.Planned(scaffold.environment_name(dockerfile.parent.name or "app"), dockerfile=dockerfile.name)
    text = scaffold.matrix_text([planned], scaffold.hosts(drivers or None))
    return matrix_yaml.parse(text, str(dockerfile.parent / "matrix.yaml"))


def with_drivers(matrix: Matrix, drivers: str) -> Matrix:
    """The matrix with its hosts replaced by `--drivers`' branches (and the driverless host), when given."""
    if not drivers:
        return matrix
    from refenv.model import matrix_yaml, scaffold

    hosts = matrix_yaml.parse(scaffold.matrix_text([scaffold.Planned("x", image="x")], scaffold.hosts(drivers)),
                              matrix.path).hosts
    return replace(matrix, hosts=hosts)


def _image_base(base: Base, use_engine: bool) -> tuple[Base, dict[str, Fact]]:
    """The FROM image as its inspect shows it (a base not known by name), with its environment as facts."""
    if base.kind != "plain" or not use_engine:
        return base, {}
    seen = sources.inspect(base.image)
    if seen is None:
        return base, {}
    where = Where(f"{base.image} (inspect)")
    env = {k: Fact(v, where) for k, v in seen.env.items()}
    return bases.from_inspect(base.image, seen.labels, seen.env) or base, env


def check_dockerfile(env: Environment, matrix: Matrix, use_engine: bool) -> Checked:
    team = env.team
    assert team is not None and team.dockerfile is not None
    path = Path(team.dockerfile)
    context = Path(team.context) if team.context else path.parent
    facts = read_dockerfile(sources.read_bytes(path), _shown(path), sources.context_reader(context),
                            dict(team.build_args), team.target)
    base, base_env = _image_base(facts.base, use_engine)
    facts = replace(facts, base=base, env={**base_env, **facts.env})
    return _judged(env.name, "dockerfile", _shown(path), resolve(facts, env.name), facts, matrix)


def check_image(env: Environment, matrix: Matrix, use_engine: bool) -> Checked:
    team = env.team
    assert team is not None and team.image is not None
    base, base_env = _image_base(bases.from_reference(team.image), use_engine)
    facts = DockerfileFacts(team.image, "", base, Where(team.image), env=base_env)
    resolved = resolve(facts, env.name)
    if resolved.environment is None and use_engine and base.kind == "plain":
        resolved = replace(resolved, assumptions=(f"{team.image}: not in this machine's engine, and its name says "
                                                  "nothing of its torch; pull it, or check its Dockerfile",))
    return _judged(env.name, "image", team.image, resolved, facts, matrix)


def check_recipe(env: Environment, matrix: Matrix) -> Checked:
    resolved = Resolved(env, Fact(f"{env.torch}+{env.variant}", Where(matrix.path)), "the matrix's own recipe")
    return _judged(env.name, "recipe", matrix.path, resolved, None, matrix)


def _judged(name: str, source: str, path: str, resolved: Resolved, facts: DockerfileFacts | None,
            matrix: Matrix) -> Checked:
    env = resolved.environment
    findings = tuple(lint(facts, resolved)) if facts is not None else ()
    if env is None:
        return Checked(name, source, path, resolved, facts, (), None, findings)
    image_env = {k: f.value for k, f in facts.env.items()} if facts is not None else {}
    cells = predict.predict(env, image_env, matrix.hosts, matrix.scenarios)
    ready = predict.judge(env, cells, matrix.hosts) if cells else None
    return Checked(name, source, path, resolved, facts, tuple(cells), ready, findings)


def _shown(path: Path) -> str:
    """The path as the user reads it: relative to the working folder where it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def target_of(path: str) -> Path:
    """The file to check: the one named; else ./matrix.yaml; else ./Dockerfile (CheckInputError for none)."""
    if path:
        return Path(path)
    for name in (*MATRIX_NAMES, "Dockerfile", "Containerfile"):
        if Path(name).is_file():
            return Path(name)
    raise CheckInputError("no matrix.yaml or Dockerfile in this folder",
                          "name the Dockerfile or matrix.yaml to check: refenv check PATH")


def check(path: str, drivers: str = "", use_engine: bool = True) -> list[Checked]:
    """Every environment the file makes, checked."""
    target = target_of(path)
    if target.name in MATRIX_NAMES or target.suffix in (".yaml", ".yml"):
        from refenv.model.matrix_yaml import load

        matrix = with_drivers(load(target), drivers)
    else:
        if not target.is_file():
            sources.read_bytes(target)  # its own clear error: a folder, or no such file
        matrix = default_matrix(target.resolve(), drivers)
    out = []
    for env in matrix.environments:
        if env.team is not None and env.team.dockerfile:
            out.append(check_dockerfile(env, matrix, use_engine))
        elif env.team is not None and env.team.image:
            out.append(check_image(env, matrix, use_engine))
        else:
            out.append(check_recipe(env, matrix))
    return out
