"""Secrets out of quoted text: tokens, keys, passwords and the values of environment variables (pure).

An answer quotes the lines of a report it read. People paste whole terminals, `env` dumps and compose
files, so a quoted line may hold a credential: every line an answer shows passes through `redact` first.
What the stack's diagnosis needs is kept: the visibility variables, library paths and versions.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

# Credentials with a documented shape: GitHub tokens (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_), GitLab
# (glpat-), AWS access key ids (AKIA/ASIA), Slack (xox?-), OpenAI-style (sk-), Hugging Face (hf_), npm
# (npm_), Google API keys (AIza), and JSON Web Tokens (three base64url parts, the first '{"' encoded).
_SHAPED = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255}|glpat-[A-Za-z0-9_-]{20,255}"
    r"|A[KS]IA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,255}|sk-[A-Za-z0-9_-]{20,255}|hf_[A-Za-z0-9]{20,255}"
    r"|npm_[A-Za-z0-9]{30,255}|AIza[0-9A-Za-z_-]{30,255}"
    r"|eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096})")
# A private key's armour line, or a line that is nothing but base64 (the body of a key or certificate).
_KEY_LINE = re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----|^\s*[A-Za-z0-9+/]{40,}={0,2}\s*$")
# user:password@ in a URL.
_URL_USER = re.compile(r"(\b[a-z][a-z0-9+.-]{0,20}://)[^/\s@]{1,256}@")
# An HTTP credential: 'Authorization: Bearer x', 'Authorization: token x', '-H "Private-Token: x"'.
_AUTH = re.compile(r"(?i)\b((?:proxy-)?authorization|private-token|x-api-key|cookie)(\s*[:=]\s*)[^\s'\"]+"
                   r"(?:[ \t]+[^\s'\"]+)?")
# A value named like a secret: `token=x`, `"password": "x"`, `HF_TOKEN: x`, `os.environ["API_KEY"] = "x"`.
_NAMED = re.compile(r"(?i)(\b[\w.-]{0,40}(?:token|secret|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key"
                    r"|auth[_-]?key|credential|private[_-]?key|session[_-]?id|cookie)[\w.-]{0,40}['\"]?\]?"
                    r"\s*[:=]\s*['\"]?)([^\s'\",;]{1,4096})")
# An environment variable's assignment (`NAME=value`, `export NAME=value`, an `env` dump, a compose list).
_ASSIGNMENT = re.compile(r"\b([A-Z][A-Z0-9_]{1,63})=([^\s'\",;]{1,4096})")
# Variables whose values are facts of the stack (visibility, libraries, the wheel's build), kept as they are.
_KEEP = re.compile(r"(?:CUDA|NVIDIA|TORCH|PYTORCH|NCCL|CUDNN|HIP|ROCR|ROCM)_[A-Z0-9_]*|LD_LIBRARY_PATH|LD_PRELOAD"
                   r"|PATH|PYTHONPATH|CONDA_PREFIX|CONDA_DEFAULT_ENV|VIRTUAL_ENV|SLURM_JOB_GPUS|SLURM_STEP_GPUS"
                   r"|GPU_DEVICE_ORDINAL|OMP_NUM_THREADS|MKL_NUM_THREADS")
# An opaque run of 32+ letters and digits (hex keys, API keys of unknown shape); a GPU's UUID stays.
_OPAQUE = re.compile(r"(?<![\w-])(?=[\w-]{0,80}\d)(?=[\w-]{0,80}[A-Za-z])[A-Za-z0-9_-]{32,4096}(?![\w-])")
_UUID = re.compile(r"(?i)(?:GPU-|MIG-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SECRET_WORD = re.compile(r"(?i)token|secret|passw|pwd|key|credential|auth|cookie|session")


def _assignment(m: re.Match[str]) -> str:
    name = m.group(1)
    if _KEEP.fullmatch(name) and not _SECRET_WORD.search(name):
        return m.group(0)
    return f"{name}={REDACTED}"


def _opaque(m: re.Match[str]) -> str:
    return m.group(0) if _UUID.fullmatch(m.group(0)) else REDACTED


def redact(line: str) -> str:
    """The line with every credential and every environment value outside the stack's replaced by [redacted]."""
    if _KEY_LINE.search(line):
        return REDACTED
    line = _SHAPED.sub(REDACTED, line)
    line = _URL_USER.sub(lambda m: f"{m.group(1)}{REDACTED}@", line)
    line = _AUTH.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", line)
    line = _NAMED.sub(lambda m: f"{m.group(1)}{REDACTED}", line)
    line = _ASSIGNMENT.sub(_assignment, line)
    return _OPAQUE.sub(_opaque, line)
