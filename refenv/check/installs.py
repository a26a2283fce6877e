"""The package-manager commands of a RUN line: pip, uv pip, uv sync, conda and mamba installs, apt installs (pure).

A RUN line is split into simple commands as the shell would (`shlex`, then `&&`, `||`, `;` and `|`); each
command that installs names its requirements, the files it reads them from (-r, -c, a project folder for `uv
sync` and `pip install .`) and the indexes it installs from. Requirements follow PEP 508 through `packaging`
(the parser pip itself vendors); a wheel file's name says its version (the wheel spec's file name convention).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Pep508
from packaging.utils import canonicalize_name

from refenv.check.facts import Fact, Install, Requirement, Where

WhereOf = Callable[[str], Where]
_SEPARATORS = {"&&", "||", ";", "|", "&"}
_WHEEL = re.compile(r"(?:.*/)?([A-Za-z0-9_.]+)-([0-9][^-]*)-[^-]+-[^-]+-[^-]+\.whl")
_PIP = re.compile(r"(?:.*/)?pip(?:3(?:\.\d+)?)?")
_PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
_CONDA = {"conda": "conda", "mamba": "mamba", "micromamba": "mamba"}
_APT = re.compile(r"(?:.*/)?(?:apt-get|apt|yum|dnf|microdnf|apk)")
# pip options that take a value (pip's own `pip install --help`), so their value is not read as a requirement.
_PIP_VALUED = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
               "--find-links", "-t", "--target", "--prefix", "--root", "--platform", "--python-version",
               "--implementation", "--abi", "--src", "--upgrade-strategy", "--progress-bar", "--cache-dir",
               "--python", "-p", "--trusted-host", "--config-settings", "-C", "--report", "--log", "--timeout",
               "--retries", "--exists-action", "--proxy", "--cert", "--client-cert", "--only-binary",
               "--no-binary", "--index-strategy", "--torch-backend", "--extra", "--group", "--package",
               "--resolution", "--prerelease", "-e", "--editable"}
_CONDA_VALUED = {"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "--override-channels-x"}


@dataclass(frozen=True)
class Command:
    """An install command: what it installs, and the files it names (container paths, read through COPY)."""

    install: Install
    files: tuple[tuple[str, str], ...] = ()   # (kind, path): 'requirements', 'constraints', 'project'


def commands(shell: str) -> list[list[str]]:
    """The simple commands of a shell line, as words ([] for a line shlex cannot split: unbalanced quotes)."""
    try:
        lexer = shlex.shlex(shell.replace("\\\n", " "), posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    out: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS or set(word) <= set(";&|"):
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def line_of(token: str, lines: list[str], start: int, end: int) -> int:
    """The first line in start..end (1-based) that holds `token`; `start` when none does."""
    for number in range(start, min(end, len(lines)) + 1):
        if token in lines[number - 1]:
            return number
    return start


def requirement(text: str, where: Where) -> Requirement | None:
    """A PEP 508 requirement, a conda spec ('pytorch=2.1', 'pytorch==2.1.0') or a wheel file's name; None for
    what names no package (a path, a URL without a wheel's name, an option)."""
    if m := _WHEEL.fullmatch(text):
        return Requirement(canonicalize_name(m.group(1)), f"=={m.group(2)}", where, text)
    if text.startswith(("-", ".", "/", "git+")) or "://" in text:
        return None
    try:
        parsed = Pep508(text)
    except InvalidRequirement:
        return None
    return Requirement(canonicalize_name(parsed.name), str(parsed.specifier), where, text)


def _pip(words: list[str], tool: str, where_of: WhereOf) -> Command:
    reqs: list[Requirement] = []
    files: list[tuple[str, str]] = []
    index: list[Fact] = []
    extra: list[Fact] = []
    i = 1
    while i < len(words):
        word = words[i]
        flag, has_eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if flag in _PIP_VALUED or (len(word) > 2 and word[:2] in ("-r", "-c", "-i") and not word.startswith("--")):
            if has_eq:
                value = inline
            elif flag == word and word in _PIP_VALUED:
                i += 1
                value = words[i] if i < len(words) else ""
            else:
                flag, value = word[:2], word[2:]
            if flag in ("-r", "--requirement"):
                files.append(("requirements", value))
            elif flag in ("-c", "--constraint"):
                files.append(("constraints", value))
            elif flag in ("-i", "--index-url"):
                index.append(Fact(value, where_of(value)))
            elif flag == "--extra-index-url":
                extra.append(Fact(value, where_of(value)))
            elif flag in ("-e", "--editable") and value.startswith((".", "/")):
                files.append(("project", value))
        elif word in (".", "./") or (word.startswith(("./", "/")) and not word.endswith(".whl")):
            files.append(("project", word))
        elif not word.startswith("-") and (req := requirement(word, where_of(word))) is not None:
            reqs.append(req)
        i += 1
    return Command(Install(tool, tuple(reqs), tuple(index), tuple(extra), (), where_of(words[0])), tuple(files))


def _conda(words: list[str], tool: str, where_of: WhereOf) -> Command:
    reqs: list[Requirement] = []
    channels: list[Fact] = []
    files: list[tuple[str, str]] = []
    i = 1
    while i < len(words):
        word = words[i]
        if word in _CONDA_VALUED:
            value = words[i + 1] if i + 1 < len(words) else ""
            if word in ("-c", "--channel"):
                channels.append(Fact(value, where_of(value)))
            elif word == "--file":
                files.append(("requirements", value))
            i += 2
            continue
        if not word.startswith("-"):
            # conda's 'pytorch=2.1' is a prefix match ('2.1.*'); '==' is exact (conda's match specification).
            name, op, version = re.match(r"([A-Za-z0-9_.-]+)(==|=|>=|<=|>|<)?(.*)", word).groups()  # type: ignore[union-attr]
            spec = "" if not op else (f"=={version}.*" if op == "=" and not version.endswith("*") else
                                      f"=={version}" if op == "=" else f"{op}{version}")
            reqs.append(Requirement(canonicalize_name(name), spec, where_of(word), word))
        i += 1
    return Command(Install(tool, tuple(reqs), (), (), tuple(channels), where_of(words[0])), tuple(files))


def install_commands(shell: str, lines: list[str], file: str, start: int, end: int) -> tuple[list[Command],
                                                                                              list[Fact]]:
    """The install commands of one RUN line, and the system packages it installs (apt, yum, dnf, apk)."""
    def where_of(token: str) -> Where:
        return Where(file, line_of(token, lines, start, end))

    found: list[Command] = []
    system: list[Fact] = []
    for simple in commands(shell):
        words = simple
        while words and (("=" in words[0] and not words[0].startswith("-")) or words[0] in ("sudo", "env", "exec")):
            words = words[1:]  # VAR=value prefixes, sudo, env
        if not words:
            continue
        head = words[0]
        rest = words[1:]
        if _PYTHON.fullmatch(head) and rest[:2] == ["-m", "pip"]:
            head, rest = "pip", rest[2:]
        if _PYTHON.fullmatch(head) and rest[:2] == ["-m", "uv"]:
            head, rest = "uv", rest[2:]
        if _PIP.fullmatch(head) and rest[:1] == ["install"]:
            found.append(_pip(["pip install", *rest[1:]], "pip", where_of))
        elif head.endswith("uv") and rest[:2] == ["pip", "install"]:
            found.append(_pip(["pip install", *rest[2:]], "uv pip", where_of))
        elif head.endswith("uv") and rest[:1] in (["sync"], ["add"]):
            command = _pip([f"uv {rest[0]}", *rest[1:]], f"uv {rest[0]}", where_of)
            files = command.files if rest[0] == "add" else (*command.files, ("project", "."))
            found.append(Command(command.install, files))
        elif head.rsplit("/", 1)[-1] in _CONDA and rest[:1] in (["install"], ["create"]):
            found.append(_conda([f"{head.rsplit('/', 1)[-1]} {rest[0]}", *rest[1:]], _CONDA[head.rsplit("/", 1)[-1]],
                                where_of))
        elif _APT.fullmatch(head) and rest and rest[0] in ("install", "add"):
            system += [Fact(w, where_of(w)) for w in rest[1:] if not w.startswith("-")]
    return found, system
