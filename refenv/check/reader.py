"""A Dockerfile read without building it: its stages, the stage judged and the environment it makes (pure over text
and a reader of the build context).

The instructions come from BuildKit's own parser (the `dockerfile` package, as refenv/builder/buildkit.py reads
them); ARG and ENV are substituted as the builder does (the Dockerfile reference, "Environment replacement" and
"Understand how ARG and FROM interact": ARGs before the first FROM serve FROM lines, a stage sees an ARG only once
it declares it, and ENV wins over an ARG of the same name). The stage judged is `target` or the last; a stage that
starts FROM another inherits its environment, its installs and its files.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import dockerfile

from refenv.check import bases, installs, projectfiles
from refenv.check.facts import DockerfileFacts, Fact, Install, Where
from refenv.check.text import MAX_INSTRUCTIONS, CheckInputError, decode, substitute, unquote

Reader = Callable[[str], "str | None"]   # a context-relative path -> its text, or None


@dataclass
class _Stage:
    name: str
    image: str                          # the FROM reference, substituted
    from_line: Where
    parent: int | None = None           # the stage it starts FROM
    args: dict[str, str] = field(default_factory=dict)
    env: dict[str, Fact] = field(default_factory=dict)
    labels: dict[str, Fact] = field(default_factory=dict)
    installs: list[installs.Command] = field(default_factory=list)
    apt: list[Fact] = field(default_factory=list)
    copies: list[tuple[tuple[str, ...], str]] = field(default_factory=list)   # (sources, destination), absolute
    workdir: str = "/"


def _pairs(words: tuple[str, ...]) -> list[tuple[str, str]]:
    """ENV/LABEL words as (name, value): 'A=1 B=2' or the old 'A 1' form (the parser gives name, value pairs)."""
    return [(words[i], unquote(words[i + 1])) for i in range(0, len(words) - 1, 2)]


def parse(text: str, where: str) -> tuple[dockerfile.Command, ...]:
    try:
        parsed = tuple(dockerfile.parse_string(text))
    except dockerfile.GoParseError as exc:
        raise CheckInputError(f"{where}: does not parse: {exc}", "fix the Dockerfile (docker build says the same)") \
            from None
    if len(parsed) > MAX_INSTRUCTIONS:
        raise CheckInputError(f"{where}: {len(parsed):,} instructions, more than the {MAX_INSTRUCTIONS:,} the check "
                              "reads", "check the path: this does not look like a hand-written Dockerfile")
    if not any(c.cmd.upper() == "FROM" for c in parsed):
        raise CheckInputError(f"{where}: no FROM instruction", "a Dockerfile starts its stage with FROM IMAGE")
    return parsed


def _shell(cmd: dockerfile.Command) -> str:
    body = " ".join(cmd.value)
    return "\n".join([body, *(h.content for h in cmd.heredocs)])


def stages(text: str, where: str, build_args: Mapping[str, str]) -> list[_Stage]:
    """Every stage of the Dockerfile with what it declares."""
    lines = text.splitlines()
    globals_: dict[str, str] = {}
    out: list[_Stage] = []
    for cmd in parse(text, where):
        name = cmd.cmd.upper()
        at = f"{where}:{cmd.start_line}"
        if name == "FROM":
            words = [w for w in cmd.value]
            image = substitute(words[0], globals_, at) if words else ""
            alias = words[2].lower() if len(words) >= 3 and words[1].upper() == "AS" else str(len(out))
            parent = next((i for i, s in enumerate(out) if s.name == image.lower()), None)
            out.append(_Stage(alias, image, Where(where, cmd.start_line), parent))
            continue
        if name == "ARG":
            target = out[-1].args if out else globals_
            for decl in cmd.value:
                key, eq, default = decl.partition("=")
                values = {**globals_, **(out[-1].args if out else {})}
                value = build_args.get(key, globals_.get(key) if out and not eq else
                                       substitute(unquote(default), values, at))
                target[key] = value or ""
            continue
        if not out:
            continue
        stage = out[-1]
        values = {**stage.args, **{k: f.value for k, f in _chain_env(out, len(out) - 1).items()}}
        if name == "ENV":
            for key, value in _pairs(cmd.value):
                stage.env[key] = Fact(substitute(value, values, at), Where(where, cmd.start_line))
                values[key] = stage.env[key].value
        elif name == "LABEL":
            for key, value in _pairs(cmd.value):
                stage.labels[unquote(key)] = Fact(substitute(value, values, at), Where(where, cmd.start_line))
        elif name == "WORKDIR" and cmd.value:
            stage.workdir = posixpath.join(stage.workdir, substitute(cmd.value[0], values, at))
        elif name in ("COPY", "ADD") and not any(f.startswith("--from") for f in cmd.flags) and len(cmd.value) >= 2:
            words = [substitute(w, values, at) for w in cmd.value]
            dest = posixpath.normpath(posixpath.join(stage.workdir, words[-1]))
            folder = words[-1].endswith("/") or words[-1] in (".", "./")
            stage.copies.append((tuple(words[:-1]), dest.rstrip("/") + "/" if folder else dest))
        elif name == "RUN":
            shell = substitute(_shell(cmd), values, at)
            found, system = installs.install_commands(shell, lines, where, cmd.start_line, cmd.end_line)
            stage.installs += [replace(c, files=tuple((k, posixpath.join(stage.workdir, p)) for k, p in c.files))
                               for c in found]
            stage.apt += system
    return out


def _chain(stages_: list[_Stage], index: int) -> list[_Stage]:
    """The stage and the stages it starts FROM, the first ancestor first (a loop is cut where it repeats)."""
    chain: list[_Stage] = []
    seen: set[int] = set()
    at: int | None = index
    while at is not None and at not in seen:
        seen.add(at)
        chain.insert(0, stages_[at])
        at = stages_[at].parent
    return chain


def _chain_env(stages_: list[_Stage], index: int) -> dict[str, Fact]:
    env: dict[str, Fact] = {}
    for s in _chain(stages_, index):
        env.update(s.env)
    return env


def context_path(container_path: str, copies: list[tuple[tuple[str, ...], str]]) -> str | None:
    """The build-context file a container path was copied from (the latest COPY that put it there), or None."""
    for sources, dest in reversed(copies):
        for src in sources:
            src_clean = src.lstrip("./") if src not in (".", "./") else ""
            into_folder = dest.endswith("/") or len(sources) > 1 or src in (".", "./") or src.endswith("/")
            if into_folder:
                base = dest.rstrip("/") or "/"
                if src_clean and not src.endswith("/") and posixpath.join(base, posixpath.basename(src_clean)) == \
                        container_path:
                    return src_clean
                rel = posixpath.relpath(container_path, base)
                if not rel.startswith("..") and (not src_clean or src.endswith("/")):
                    return posixpath.normpath(posixpath.join(src_clean, rel)) if src_clean else rel
            elif posixpath.normpath(dest) == posixpath.normpath(container_path):
                return src_clean
    return None


# What `uv sync` and `pip install .` read of a project: its lock first (exact builds), then its pyproject.toml.
PROJECT_FILES = (("uv.lock", projectfiles.uv_lock), ("pyproject.toml", projectfiles.pyproject))


def _read_files(command: installs.Command, copies: list[tuple[tuple[str, ...], str]], read: Reader
                ) -> tuple[list[Install], list[str], list[str]]:
    """The installs the command's files hold, the files read, and the ones that could not be found."""
    found: list[Install] = []
    done: list[str] = []
    missing: list[str] = []
    for kind, path in command.files:
        if kind == "project":
            named = [(context_path(posixpath.normpath(posixpath.join(path, n)), copies), parse_one)
                     for n, parse_one in PROJECT_FILES]
            texts = [(src, read(src), parse_one) for src, parse_one in named if src is not None]
            for src, text, parse_one in texts:
                if text is not None:
                    found.append(parse_one(text, src))
                    done.append(src)
            if not any(text is not None for _, text, _ in texts):
                missing.append(f"{path} (named at {command.install.where}): no pyproject.toml or uv.lock copied "
                               "in from the build context")
            continue
        source = context_path(path, copies)
        if source is None:
            missing.append(f"{path} (named at {command.install.where}) is not copied in from the build context")
            continue
        text = read(source)
        if text is None:
            missing.append(f"{source} (named at {command.install.where}) is not in the build context")
            continue
        found.append(projectfiles.requirements_file(text, source, read, command.install.tool))
        done.append(source)
    return found, done, missing


def read_dockerfile(data: bytes, where: str, read: Reader, build_args: Mapping[str, str] | None = None,
                    target: str | None = None) -> DockerfileFacts:
    """The facts of the stage judged (`target`, else the last): its base, installs, ENV, LABELs and files."""
    text = decode(data, where)
    all_stages = stages(text, where, dict(build_args or {}))
    index = len(all_stages) - 1
    if target:
        index = next((i for i, s in enumerate(all_stages) if s.name == target.lower()), -1)
        if index < 0:
            raise CheckInputError(f"{where}: no stage named {target!r}",
                                  f"stages: {', '.join(s.name for s in all_stages)}")
    chain = _chain(all_stages, index)
    root = chain[0]
    if not root.image or re.search(r"\s", root.image):
        raise CheckInputError(f"{root.from_line}: FROM names no image after its variables are substituted",
                              "give the ARG a default, or the build argument in matrix.yaml (build_args)")
    copies = [c for s in chain for c in s.copies]
    found: list[Install] = []
    read_names: list[str] = []
    notes: list[str] = []
    for s in chain:
        for command in s.installs:
            found.append(command.install)
            more, done, missing = _read_files(command, copies, read)
            found += more
            read_names += done
            notes += missing
    env: dict[str, Fact] = {}
    labels: dict[str, Fact] = {}
    for s in chain:
        env.update(s.env)
        labels.update(s.labels)
    return DockerfileFacts(where, all_stages[index].name, bases.from_reference(root.image), root.from_line,
                           tuple(found), env, labels, tuple(f for s in chain for f in s.apt),
                           tuple(dict.fromkeys(read_names)), tuple(notes))
