"""matrix.yaml's text as PyYAML's node tree, bounded before the tree is built.

YAML aliases share one node, so a 100,000-entry list aliased by 200 environments composes quickly but is
20 million values to every reader after it (the "billion laughs" shape, nested, grows exponentially).
A first pass over the parser's events counts what the tree would hold with every alias expanded, and
refuses, naming the line, the alias or the node where a bound is passed; only then is the tree composed.
libyaml's parser and composer (PyYAML's C loader) are used where PyYAML was built with them: the pure
Python scanner takes seconds over a 1 MiB file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from harness.inputs import MAX_DEPTH, label, shorten
from refenv.errors import MatrixError

# A real matrix holds a few hundred values (the default one about 300); these bounds are two orders of
# magnitude above anything written by hand and far below what would take a reader more than a moment.
MAX_NODES = 50_000     # values in the tree with every alias expanded
MAX_ALIASES = 1_000    # `*name` references

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class _Count:
    """The expanded size of the tree so far, the anchors' sizes, and the collections still open."""

    nodes: int = 0
    aliases: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    open: list[tuple[str | None, int]] = field(default_factory=list)   # (anchor, nodes when it opened)


def _line(event: yaml.Event) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def check_events(text: str, path: str) -> None:
    """Refuse a text whose tree, aliases expanded, holds more than MAX_NODES values, more than MAX_ALIASES
    aliases, or collections nested deeper than MAX_DEPTH; MatrixError names the line."""
    count = _Count()
    try:
        for event in yaml.parse(text, Loader=LOADER):
            if isinstance(event, yaml.AliasEvent):
                count.aliases += 1
                grows = count.sizes.get(str(event.anchor), 1)
                count.nodes += grows
                if count.aliases > MAX_ALIASES:
                    raise MatrixError(path, _line(event), "syntax", f"more than {MAX_ALIASES} aliases (*name); "
                                      "a matrix may repeat a value through at most that many")
                if count.nodes > MAX_NODES:
                    name = label(str(event.anchor), 40)
                    raise MatrixError(path, _line(event), "syntax",
                                      f"the alias *{name} repeats {grows:,} values, and with it the matrix would "
                                      f"hold more than {MAX_NODES:,} values (aliases expanded)")
            elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                count.nodes += 1
                if count.nodes > MAX_NODES:
                    raise MatrixError(path, _line(event), "file", f"holds more than {MAX_NODES:,} values; a matrix "
                                      "is a few hundred")
                anchor = event.anchor
                if isinstance(event, yaml.CollectionStartEvent):
                    count.open.append((anchor, count.nodes - 1))
                    if len(count.open) > MAX_DEPTH:
                        raise MatrixError(path, _line(event), "syntax", f"nested deeper than {MAX_DEPTH} levels")
                elif anchor is not None:
                    count.sizes[str(anchor)] = 1
            elif isinstance(event, yaml.CollectionEndEvent) and count.open:
                anchor, before = count.open.pop()
                if anchor is not None:
                    count.sizes[str(anchor)] = count.nodes - before
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise MatrixError(path, line, "syntax", f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:  # the reader's errors (a character YAML forbids) carry no problem mark
        raise MatrixError(path, None, "syntax", f"not valid YAML: {shorten(str(exc), 200)}") from None


def compose(text: str, path: str) -> yaml.Node | None:
    """The node tree of a text that passed `check_events` (None for an empty document)."""
    check_events(text, path)
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=LOADER)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise MatrixError(path, line, "syntax", f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise MatrixError(path, None, "syntax", f"not valid YAML: {shorten(str(exc), 200)}") from None
    except RecursionError:  # the pure Python composer recurses once per level; the bound above is lower
        raise MatrixError(path, None, "syntax", "nested too deeply") from None
    return node
