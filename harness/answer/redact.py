"""Secrets out of text that leaves toward a person or a public place (pure): one function, one table.

People paste whole terminals, `env` dumps, compose files and shell histories, so any line an answer
quotes may hold a credential. `redact` is the one boundary every such output passes through (the bot's
comment and log, `diagnose --format markdown` and its text, the paste page, the run document's evidence
and the reports made from it), and it runs BEFORE any clipping: a key cut to 27 characters no longer
has the shape that finds it. What it cannot see whole (a piece clipped elsewhere) it still removes when
it is told the secrets of the text the piece came from (`secrets_in`): every 8-character piece of a
known secret is taken out wherever it stands.

The shapes are a table (SHAPES), each with the public source of its format. What the stack's diagnosis
needs is kept: the visibility variables, library paths, versions, GPU UUIDs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

REDACTED = "[redacted]"
PIECE = 8  # no piece of a secret this long may leave: shorter runs are common in any text


@dataclass(frozen=True)
class Shape:
    """A credential's shape: the pattern (its `secret` group is what is replaced, else the whole match),
    and the public document that defines the format."""

    name: str
    pattern: re.Pattern[str]
    source: str
    accept: Callable[[str], bool] | None = None  # a match the pattern cannot tell from a secret, judged


def _shape(name: str, pattern: str, source: str, accept: Callable[[str], bool] | None = None) -> Shape:
    return Shape(name, re.compile(pattern), source, accept)


def _random_not_a_path(run: str) -> bool:
    """Whether a 40-character run of base64's alphabet with separators in it reads as random bytes, not a path.

    Random bytes give '/' or '+' 2 times in 64, so of 40 characters four or more are separators in 3.6% of
    keys (binomial, n=40, p=1/32): too many to let through. A path of that length has several too, but its
    segments are words of one case, where random letters change case between neighbours about every third
    pair. A key with four or more separators and fewer than two such changes: 3 in a million keys (measured
    over 10^6 keys of 30 random bytes); torch's 'w/pytorch/pytorch/c10/cuda/CUDAFunctions' has one."""
    if sum(ch in "/+" for ch in run) <= 3:
        return True
    changes = sum(run[i].isalpha() and run[i + 1].isalpha() and run[i].islower() != run[i + 1].islower()
                  for i in range(len(run) - 1))
    return changes >= 2


# A value after an option or a word: anything up to a blank or a quote (a quoted value's own quotes stay).
_VALUE = r"""(?P<secret>[^\s'"`]{1,4096})"""
_QVALUE = r"""['"]?(?P<secret>[^\s'"`]{1,4096})"""
# A private key's armour (RFC 7468 section 2; OpenSSH PROTOCOL.key; RFC 4880 section 6.2 for PGP).
_BEGIN_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_END_KEY = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A line that is nothing but base64 (the body of a key or certificate, RFC 7468's 64-column lines).
_BASE64_LINE = re.compile(r"^\s*[A-Za-z0-9+/]{40,}={0,2}\s*$")

SHAPES: tuple[Shape, ...] = (
    _shape("github token", r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})",
           "GitHub blog 2021-04-05, 'Behind GitHub's new authentication token formats'"),
    _shape("gitlab token", r"\b(?P<secret>gl(?:pat|dt|rt|ptt|oas|cbt)-[A-Za-z0-9_-]{20,255})",
           "docs.gitlab.com, 'Token overview: token prefixes'"),
    _shape("aws access key id", r"\b(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16})\b",
           "AWS IAM User Guide, 'IAM identifiers: unique identifiers' (prefixes)"),
    # 40 characters of base64's alphabet with '/' or '+' in it, first and last too (random bytes: 1.25 of
    # them on average; more than three only where its letters change case as random ones do:
    # _random_not_a_path), letters of
    # both cases and a digit: the AWS secret access key (IAM User Guide, 'Managing access keys':
    # wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY). Without '/' or '+' the opaque rule below takes it.
    _shape("aws secret access key", r"(?<![A-Za-z0-9/+=])(?P<secret>(?=[A-Za-z0-9/+]{0,39}[/+])"
           r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[0-9])"
           r"[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
           "AWS IAM User Guide, 'Managing access keys for IAM users'", _random_not_a_path),
    _shape("slack token", r"\b(?P<secret>xox[abposre]-[A-Za-z0-9-]{10,255})", "api.slack.com, 'Token types'"),
    _shape("webhook url", r"(?i)\bhttps?://(?:hooks\.slack\.com/(?:services|workflows|triggers)|"
           r"(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks|[a-z0-9-]{1,63}\.webhook\.office\.com/webhookb2|"
           r"outlook\.office\.com/webhook|chat\.googleapis\.com/v1/spaces)/(?P<secret>[^\s'\"`<>)]{1,2048})",
           "api.slack.com 'Sending messages using incoming webhooks'; Discord 'Webhook resource'; Microsoft "
           "Teams 'Create incoming webhooks'; Google Chat 'Send messages with incoming webhooks'"),
    _shape("api key", r"\b(?P<secret>sk-[A-Za-z0-9_-]{20,255}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,255}"
           r"|hf_[A-Za-z0-9]{20,255}|npm_[A-Za-z0-9]{30,255}|AIza[0-9A-Za-z_-]{30,255}|pypi-[A-Za-z0-9_-]{40,4096}"
           r"|dckr_pat_[A-Za-z0-9_-]{20,255}|SG\.[A-Za-z0-9_-]{16,64}\.[A-Za-z0-9_-]{16,64})",
           "OpenAI, Stripe 'API keys', Hugging Face 'User access tokens', npm 'About access tokens', Google "
           "'API keys', PyPI 'API tokens', Docker Hub 'Personal access tokens', SendGrid 'API keys'"),
    _shape("json web token", r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096})",
           "RFC 7519 (a JOSE header that starts '{\"' is 'eyJ' in base64url)"),
    _shape("url userinfo", r"\b[a-z][a-z0-9+.-]{0,20}://(?P<secret>[^/\s@'\"`]{1,256})@",
           "RFC 3986 section 3.2.1 (userinfo, 'user:password' deprecated but still sent)"),
    _shape("url query secret", r"(?i)[?&;](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret"
           r"|client_secret|password|passwd|sig|signature|x-amz-signature|x-amz-credential|x-goog-signature)="
           r"(?P<secret>[^\s&#'\"`<>]{1,4096})",
           "RFC 6750 section 2.3 (access_token in the query); Azure 'SAS tokens' (sig=); AWS 'Authenticating "
           "requests: query parameters' (X-Amz-Signature)"),
    _shape("http credential", r"(?i)\b(?:(?:proxy-)?authorization|private-token|x-api-key|api-key|x-auth-token|"
           r"cookie|set-cookie)\s*[:=]\s*(?P<secret>(?:(?:bearer|basic|token|digest|negotiate)\s+)?[^\s'\"`]{1,4096})",
           "RFC 9110 section 11.6.2 (Authorization); GitLab 'REST API authentication' (PRIVATE-TOKEN)"),
    _shape("curl user", r"(?:^|\s)(?:-u|-U|--user|--proxy-user)(?:\s+|=)['\"]?[^\s:'\"`]{0,256}:(?P<secret>[^\s'\"`]"
           r"{1,4096})", "curl(1), '-u, --user <user:password>' and '-U, --proxy-user'"),
    _shape("registry login", r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm(?:\s+registry)?|"
           r"singularity\s+remote|apptainer\s+remote)\s+login\b[^\n]{0,400}?\s-p(?:\s+|=)?" + _QVALUE,
           "docker login (docs.docker.com: '-p, --password'); podman-login(1); helm registry login"),
    _shape("sshpass", r"\bsshpass\s+(?:-[a-zA-Z]\s+\S+\s+)*-p\s*" + _QVALUE, "sshpass(1), '-p password'"),
    _shape("mysql password", r"\bmysql(?:dump|admin|import|sh)?\b[^\n]{0,400}?\s-p(?P<secret>[^\s'\"`]{1,4096})",
           "MySQL reference manual, 'End-User Guidelines for Password Security' (-pPASSWORD)"),
    _shape("password option", r"(?i)(?:^|[\s'\"(])--?[a-z0-9-]{0,30}(?:password|passwd|passphrase|secret|token|"
           r"api-?key|access-?key|secret-?key|credentials?|auth-?key)(?:\s+|=)(?!-)" + _QVALUE,
           "POSIX utility conventions (an option's argument after a blank or '='); docker login --password, "
           "wget --password, aws configure set, huggingface-cli login --token"),
    _shape("stdin password", r"\becho\s+['\"]?(?P<secret>[^\s'\"`|]{1,4096})['\"]?\s*\|\s*[^\n]{0,200}"
           r"--password-stdin", "docs.docker.com, docker login '--password-stdin'"),
    _shape("netrc", r"(?i)(?:^\s*|\b(?:machine|default|login)\b[^\n]{0,400}?\s)(?:password|passwd|account)\s+"
           + _QVALUE, "GNU inetutils 'The .netrc file'; curl 'netrc' (machine, login, password tokens)"),
    _shape("docker auth", r"(?i)\"(?:auth|identitytoken|registrytoken|password)\"\s*:\s*\"(?P<secret>[^\"]{1,4096})\"",
           "docs.docker.com, 'docker login: credential stores' (~/.docker/config.json 'auths')"),
    _shape("connection string", r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|Pwd)="
           r"(?P<secret>[^\s;'\"`]{1,4096})", "Azure 'Configure Azure Storage connection strings'; ADO.NET "
           "'Connection string syntax' (Password=, Pwd=)"),
    # ('pwd' alone is not among the names: $PWD is the shell's working folder; `Pwd=` of a connection string is
    # taken above.)
    _shape("named value", r"(?i)\b[\w.-]{0,40}(?:token|secret|passw(?:or)?d|passwd|api[_-]?key|apikey|"
           r"access[_-]?key|auth[_-]?key|credential|private[_-]?key|session[_-]?id|cookie)[\w.-]{0,40}['\"]?\]?"
           r"\s*[:=]\s*['\"]?(?P<secret>[^\s'\",;`]{1,4096})",
           "the names secrets go by in env files, compose files, JSON and Python (`token=`, `\"password\": `)"),
    # A random-looking value right after a word that names a secret ('my key is X', 'password X'): letters of
    # both cases and a digit, or 20+ characters with a digit, so 'the key point' or 'token limit' stay.
    _shape("value after a secret word", r"(?i)\b(?:api[ _-]?key|key|secret|token|password|passwd|passphrase|"
           r"credentials?)s?\b(?:\s+(?:is|was|:|=|of))?\s{0,4}['\"]?(?P<secret>(?-i:(?=[^\s'\"`]{0,512}[0-9])"
           r"(?:(?=[^\s'\"`]{0,512}[a-z])(?=[^\s'\"`]{0,512}[A-Z])[A-Za-z0-9+/_.~=-]{8,4096}"
           r"|[A-Za-z0-9+/_~=-]{20,4096})))",
           "what a credential looks like when no format names it (high entropy next to its name)"),
)

# An environment variable's assignment (`NAME=value`, `export NAME=value`, an `env` dump, a compose list).
_ASSIGNMENT = re.compile(r"\b([A-Z][A-Z0-9_]{1,63})=([^\s'\",;]{1,4096})")
# Variables whose values are facts of the stack (visibility, libraries, the wheel's build), kept as they are.
_KEEP = re.compile(r"(?:CUDA|NVIDIA|TORCH|PYTORCH|NCCL|CUDNN|HIP|ROCR|ROCM)_[A-Z0-9_]*|LD_LIBRARY_PATH|LD_PRELOAD"
                   r"|PATH|PYTHONPATH|CONDA_PREFIX|CONDA_DEFAULT_ENV|VIRTUAL_ENV|SLURM_JOB_GPUS|SLURM_STEP_GPUS"
                   r"|GPU_DEVICE_ORDINAL|OMP_NUM_THREADS|MKL_NUM_THREADS")
_SECRET_WORD = re.compile(r"(?i)token|secret|passw|pwd|key|credential|auth|cookie|session")
# An opaque run of 32+ letters and digits (hex keys, API keys of unknown shape); a GPU's UUID stays, and so
# does a run of words joined by '-' or '_' ('0-131-generic-x86_64-with-glibc2' of a Python platform): a
# random key has no part of three lowercase letters alone between its separators.
_OPAQUE = re.compile(r"(?<![\w-])(?=[\w-]{0,80}\d)(?=[\w-]{0,80}[A-Za-z])[A-Za-z0-9_-]{32,4096}(?![\w-])")
_WORDS = re.compile(r"(?:^|[-_])[a-z]{3,}(?=[-_]|$)")
_UUID = re.compile(r"(?i)(?:GPU-|MIG-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _spans(line: str) -> list[tuple[int, int]]:
    """Where the secrets of one line are: every shape's `secret` group, the assignments outside the stack's
    variables, the opaque runs; overlapping spans merged."""
    found: list[tuple[int, int]] = []
    for shape in SHAPES:
        for m in shape.pattern.finditer(line):
            lo, hi = m.span("secret") if "secret" in shape.pattern.groupindex else m.span()
            if shape.accept is not None and not shape.accept(line[lo:hi]):
                continue
            if hi > lo and line[lo:hi] != REDACTED:
                found.append((lo, hi))
    for m in _ASSIGNMENT.finditer(line):
        name = m.group(1)
        if not (_KEEP.fullmatch(name) and not _SECRET_WORD.search(name)) and m.group(2) != REDACTED:
            found.append(m.span(2))
    found += [m.span() for m in _OPAQUE.finditer(line)
              if not _UUID.fullmatch(m.group(0)) and not _WORDS.search(m.group(0))]
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(found):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _key_lines(lines: list[str]) -> set[int]:
    """The lines of private key blocks, armour to armour (a block cut short runs to the end of the text)."""
    inside, out = False, set()
    for i, line in enumerate(lines):
        if _BEGIN_KEY.search(line):
            inside = True
        if inside or _BASE64_LINE.match(line):
            out.add(i)
        if _END_KEY.search(line):
            inside = False
    return out


def _strings(value: object) -> Iterator[str]:
    """Every string in a value: a document's records, mappings and sequences, walked."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)


def secrets_in(*sources: object) -> frozenset[str]:
    """The secrets these sources hold (texts, documents, records: every string in them), each whole as it
    was found, for `redact(..., known=...)` over pieces clipped from them."""
    found: set[str] = set()
    for text in (t for source in sources for t in _strings(source)):
        lines = text.splitlines()
        keys = _key_lines(lines)
        for i, line in enumerate(lines):
            if i in keys:
                found.add(line.strip())
                continue
            found.update(line[lo:hi] for lo, hi in _spans(line))
    return frozenset(s for s in found if len(s) >= PIECE and s != REDACTED)


def _pieces(text: str, known: frozenset[str]) -> str:
    """Every run of the text made of 8-character pieces of a known secret, replaced."""
    grams = {s[i:i + PIECE] for s in known for i in range(len(s) - PIECE + 1)}
    marked: list[tuple[int, int]] = []
    for i in range(len(text) - PIECE + 1):
        if text[i:i + PIECE] in grams:
            if marked and i <= marked[-1][1]:
                marked[-1] = (marked[-1][0], i + PIECE)
            else:
                marked.append((i, i + PIECE))
    for lo, hi in reversed(marked):
        text = text[:lo] + REDACTED + text[hi:]
    return text


def redact(text: str, known: Iterable[str] = (), shapes: bool = True) -> str:
    """The text (one line or many) with every credential replaced by [redacted]: the shapes of SHAPES, the
    values of environment variables outside the stack's, private key blocks, and any 8-character piece of
    a `known` secret (see secrets_in). Run it before any clipping; `shapes=False` takes out the known
    pieces alone (for text already redacted piece by piece and then marked up)."""
    if shapes:
        lines = text.split("\n")
        keys = _key_lines(lines)
        out = []
        for i, line in enumerate(lines):
            shown = REDACTED if i in keys else line
            for lo, hi in ([] if i in keys else reversed(_spans(line))):
                shown = shown[:lo] + REDACTED + shown[hi:]
            out.append(shown)
        text = "\n".join(out)
    wanted = frozenset(s for s in known if len(s) >= PIECE)
    return _pieces(text, wanted) if wanted else text
