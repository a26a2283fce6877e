"""Markdown pieces that stay literal whatever text they hold: escaped prose, code spans and blocks that
cannot be broken out of, folds, and the commands inside a fix's words (pure).

GitHub renders raw HTML and links @mentions in prose; inside code it does neither (CommonMark 0.31, "Code
spans" and "Fenced code blocks": a span or fence ends only at a backtick run of its own length). Prose we
did not write is escaped, and a mention is broken with a zero-width space after the '@', as GitHub's own
dependency bot does in the release notes it quotes.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]|#~!])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")  # and the bidirectional overrides
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_ENTITY = re.compile(r"&(?=#?\w{1,32};)")
_TICKS = re.compile(r"`+")
ZWSP = "\u200b"
CLIP = 240

# The programs a fix's words name as commands to run (remedies.py writes them in parentheses or backticks,
# or a whole line starting with one, as wheels.py's pip lines do).
PROGRAMS = ("pip", "pip3", "conda", "mamba", "sudo", "docker", "podman", "nvidia-smi", "nvidia-ctk", "export",
            "unset", "apt", "apt-get", "dnf", "yum", "modprobe", "rmmod", "dmesg", "ldconfig", "systemctl",
            "python", "python3", "wsl", "kubectl", "dkms", "nerdctl", "srun", "sbatch")
_PAREN = re.compile(r"\(([^()]{3,400})\)")
_BACKTICK = re.compile(r"`([^`]{3,400})`")
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|'[^'\n]{0,400}'")


def clean(text: str) -> str:
    """One line: control characters and bidirectional overrides as U+FFFD, newlines as spaces."""
    return _CONTROL.sub("\ufffd", text.replace("\r\n", " ").replace("\n", " ").replace("\r", " "))


def clip(text: str, limit: int = CLIP) -> str:
    """At most `limit` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: str) -> str:
    """Prose on one line, Markdown's special characters escaped, mentions broken."""
    # '<' would open HTML and '&' an entity ('&lt;' shown as '<'); a '>' inside a line is just a character.
    html = _ENTITY.sub("&amp;", clean(text)).replace("<", "&lt;")
    return _MENTION.sub("@" + ZWSP, _SPECIAL.sub(r"\\\1", html))


def prose_with_code(text: str) -> str:
    """Prose whose `backticked` spans (a YAML key to add, a command named in a sentence) stay code spans, to copy
    as they are; the rest escaped as `escape` does."""
    out, at = [], 0
    for m in _BACKTICK.finditer(text):
        out += [escape(text[at:m.start()]), code(m.group(1))]
        at = m.end()
    return "".join([*out, escape(text[at:])])


def code(text: str) -> str:
    """A code span holding any text, backticks included."""
    flat = clean(text)
    ticks = "`" * (max((len(run) for run in _TICKS.findall(flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def code_block(lines: list[str], info: str = "") -> list[str]:
    """A fenced block holding these lines verbatim; its fence is longer than any backtick run inside."""
    body = [clean(line) for line in lines]
    longest = max((len(run) for line in body for run in _TICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body, fence]


def details(summary: str, body: list[str]) -> list[str]:
    """A fold: the summary shown, the body (Markdown) behind a click."""
    return ["<details>", f"<summary>{escape(summary)}</summary>", "", *body, "", "</details>"]


def is_command(step: str) -> bool:
    """Whether a whole line of a fix is a command: its first word a program, and no prose in it before a
    shell comment (an ellipsis, a parenthesis or a comma-separated aside says the words go on)."""
    code = step.split("   #", 1)[0].strip()
    words = code.split()
    bare = _QUOTED.sub('""', code)  # a quoted argument (python -c "print(...)") is the command's own
    return bool(words) and words[0] in PROGRAMS and not any(mark in bare for mark in ("…", "(", ", "))


def commands_in(step: str) -> list[str]:
    """The commands in a line of a fix: the line itself when it is one, else those quoted inside it, in
    parentheses or backticks, and what follows a colon ('... install a torch it runs: pip install ...')."""
    if is_command(step):
        return [step.strip()]
    found = [m.group(1) for m in _PAREN.finditer(step)] + [m.group(1) for m in _BACKTICK.finditer(step)]
    _, colon, tail = step.partition(": ")
    if colon and is_command(tail):
        found.append(tail)
    parts = [part.strip() for text in found for part in text.split(", or ")]
    commands = [part[len("e.g. "):] if part.startswith("e.g. ") else part for part in parts]
    return list(dict.fromkeys(c for c in commands if is_command(c)))


def without_command_tail(step: str) -> str:
    """A fix's words without the command that ends them after a colon ('' for a line that is a command)."""
    if is_command(step):
        return ""
    head, colon, tail = step.partition(": ")
    return f"{head}:" if colon and is_command(tail) else step
