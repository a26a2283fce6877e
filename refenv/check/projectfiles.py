"""The files an install line names, read from the build context: requirements files (pip's format), a project's
pyproject.toml ([project] dependencies, [tool.uv.sources], [[tool.uv.index]]) and its uv.lock (pure over text).

Each requirement keeps its file and line. Nested `-r` files are followed to a bounded depth, as pip follows them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tomllib

from refenv.check.facts import Fact, Install, Requirement, Where
from refenv.check.installs import requirement

MAX_DEPTH = 5
Reader = Callable[[str], "str | None"]   # a context-relative path -> its text, or None when it cannot be read


def requirements_file(text: str, name: str, read: Reader, tool: str = "pip", depth: int = 0) -> Install:
    """A requirements file: its requirements and index options, nested -r/-c files followed (to MAX_DEPTH)."""
    reqs: list[Requirement] = []
    index: list[Fact] = []
    extra: list[Fact] = []
    joined: list[tuple[int, str]] = []
    pending = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append((number, pending + line))
        pending = ""
    for number, line in joined:
        where = Where(name, number)
        words = line.split()
        if not words:
            continue
        option, _, value = words[0].partition("=")
        value = value or (words[1] if len(words) > 1 else "")
        if option in ("-i", "--index-url"):
            index.append(Fact(value, where))
        elif option == "--extra-index-url":
            extra.append(Fact(value, where))
        elif option in ("-r", "--requirement", "-c", "--constraint") and depth < MAX_DEPTH:
            nested_name = _beside(name, value)
            nested = read(nested_name)
            if nested is not None:
                inner = requirements_file(nested, nested_name, read, tool, depth + 1)
                reqs += inner.requirements
                index += inner.index_urls
                extra += inner.extra_index_urls
        elif not line.startswith("-") and (req := requirement(line.split(";")[0].strip(), where)) is not None:
            reqs.append(req)
    return Install(tool, tuple(reqs), tuple(index), tuple(extra), (), Where(name, 1))


def _beside(name: str, other: str) -> str:
    folder = name.rsplit("/", 1)[0] if "/" in name else ""
    return f"{folder}/{other}" if folder and not other.startswith("/") else other


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return 1


def pyproject(text: str, name: str) -> Install:
    """[project] dependencies, with the indexes [tool.uv.sources] and [[tool.uv.index]] name for them."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        from refenv.check.text import CheckInputError

        raise CheckInputError(f"{name}: not TOML: {exc}", "fix the file (uv and pip read it the same way)") from None
    deps = data.get("project", {}).get("dependencies", [])
    reqs = [r for d in deps if isinstance(d, str) and (r := requirement(d.split(";")[0].strip(),
                                                                        Where(name, _line_of(text, d)))) is not None]
    uv = data.get("tool", {}).get("uv", {})
    indexes = {i.get("name"): i for i in uv.get("index", []) if isinstance(i, dict)}
    index: list[Fact] = []
    extra: list[Fact] = []
    sources = uv.get("sources", {})
    for dist in ("torch", "torchvision", "torchaudio"):
        entries = sources.get(dist)
        for entry in entries if isinstance(entries, list) else [entries] if entries else []:
            named = indexes.get(entry.get("index")) if isinstance(entry, dict) else None
            if named and isinstance(named.get("url"), str):
                index.append(Fact(named["url"], Where(name, _line_of(text, named["url"]))))
    for i in indexes.values():
        url = i.get("url")
        if isinstance(url, str) and i.get("default") and all(f.value != url for f in index):
            index.append(Fact(url, Where(name, _line_of(text, url))))
        elif isinstance(url, str) and all(f.value != url for f in index) and not i.get("explicit"):
            extra.append(Fact(url, Where(name, _line_of(text, url))))
    return Install("uv sync", tuple(reqs), tuple(index), tuple(extra), (), Where(name, 1))


def uv_lock(text: str, name: str) -> Install:
    """The locked torch (and its extensions) of a uv.lock: exact versions and the registry each came from."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        from refenv.check.text import CheckInputError

        raise CheckInputError(f"{name}: not TOML: {exc}", "regenerate it with `uv lock`") from None
    reqs: list[Requirement] = []
    index: list[Fact] = []
    for package in data.get("package", []):
        if not isinstance(package, dict) or not isinstance(package.get("version"), str):
            continue
        where = Where(name, _line_of(text, f'name = "{package.get("name")}"'))
        req = requirement(f"{package.get('name')}=={package['version']}", where)
        if req is None:
            continue
        reqs.append(req)
        registry = (package.get("source") or {}).get("registry")
        if req.name == "torch" and isinstance(registry, str):
            index.append(Fact(registry, where))
    return Install("uv.lock", tuple(reqs), tuple(index), (), (), Where(name, 1))
