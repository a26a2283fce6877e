"""Secrets never leave in an answer's quotes; the stack's own facts on the same line stay readable."""

from __future__ import annotations

import base64
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.answer import markup
from harness.answer.redact import REDACTED, redact

# (line as pasted, what must not survive, what must)
CASES = [
    ("export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ0123", "ghp_0123456789", "GITHUB_TOKEN="),
    ("token: github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABC", "token: "),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws s3 ls", "AKIAIOSFODNN7EXAMPLE", "aws s3 ls"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY="),
    ("curl -H 'Authorization: Bearer abc.def.ghi' https://api.example.com", "abc.def.ghi", "https://api.example.com"),
    ("pip install torch --index-url https://user:s3cret@pypi.internal/simple", "s3cret", "pypi.internal/simple"),
    ('{"password": "hunter2", "torch": "2.1.0"}', "hunter2", '"torch": "2.1.0"'),
    ("os.environ['WANDB_API_KEY'] = '0123456789abcdef0123456789abcdef01234567'", "0123456789abcdef0123", "WANDB_API_KEY"),
    ("HOME=/home/alice USER=alice SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "/home/alice", "HOME="),
    ("slack xoxb-123456789012-abcdefghijkl", "xoxb-123456789012", "slack"),
    ("key eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiJ9", "key "),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "PRIVATE KEY", REDACTED),
    ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "b3BlbnNzaC1rZXkt", REDACTED),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 was my token", "hf_AbCdEfGh", "was my token"),
]

# Lines whose every part is evidence of the stack: nothing is taken out.
KEPT = [
    "CUDA_VISIBLE_DEVICES=0,1 NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility python t.py",
    "LD_LIBRARY_PATH=/usr/local/cuda/compat:/usr/lib/x86_64-linux-gnu",
    "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |",
    "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5a3c9e2f-1b2c-3d4e-5f60-718293a4b5c6)",
    "/home/user/miniconda3/envs/d3rlpy/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning:",
    "pip install torch==2.1.0+cu121 --index-url https://download.pytorch.org/whl/cu121",
    "torch-2.1.0+cu121-cp310-cp310-linux_x86_64.whl",
]


@pytest.mark.parametrize(("line", "secret", "kept"), CASES)
def test_a_credential_is_redacted(line: str, secret: str, kept: str) -> None:
    out = redact(line)
    assert secret not in out and REDACTED in out
    assert kept in out


@pytest.mark.parametrize("line", KEPT)
def test_the_stacks_own_facts_are_kept(line: str) -> None:
    assert redact(line) == line


@given(st.text(max_size=300))
def test_redaction_is_idempotent_and_never_grows_a_line_past_a_bound(line: str) -> None:
    once = redact(line)
    assert redact(once) == once
    assert len(once) <= len(line) + 10 * line.count("=") + len(REDACTED) * 8


@given(st.text(max_size=200))
def test_escaped_prose_has_no_live_markup(text: str) -> None:
    out = markup.escape(text)
    assert "<" not in out and "\n" not in out
    assert not re.search(r"@[A-Za-z0-9]", out)


@given(st.text(max_size=200))
def test_a_code_span_and_block_cannot_be_broken_out_of(text: str) -> None:
    span = markup.code(text)
    ticks = len(span) - len(span.lstrip("`"))
    inner = span[ticks:-ticks]
    assert "`" * ticks not in inner
    block = markup.code_block([text, "```"])
    assert block[0].strip("`") == "" and all(block[0] not in line for line in block[1:-1])


def test_commands_are_found_inside_a_fixs_words() -> None:
    step = ("the driver was upgraded without a reboot: reboot, or unload and reload the modules "
            "(sudo rmmod nvidia_uvm nvidia && sudo modprobe nvidia nvidia_uvm)")
    assert markup.commands_in(step) == ["sudo rmmod nvidia_uvm nvidia && sudo modprobe nvidia nvidia_uvm"]
    tail = "or keep the driver and install a torch it runs: pip install torch==2.3.1 --index-url https://x/cu118"
    assert markup.commands_in(tail) == ["pip install torch==2.3.1 --index-url https://x/cu118"]
    assert markup.without_command_tail(tail) == "or keep the driver and install a torch it runs:"
    prose = "start the container with GPU access: docker run --gpus all … (or --gpus device=0), on a host"
    assert markup.commands_in(prose) == [] and markup.without_command_tail(prose) == prose


DATA = Path(__file__).resolve().parents[1] / "data"
# A commit hash is 40 hex digits, as an API key may be: the one kind of stack fact that is taken out.
_HASH = re.compile(r"\b[0-9a-f]{40}\b")


def test_every_line_of_the_projects_reports_and_torchs_messages_stays_whole() -> None:
    """The stack's own words are no credential: every line of every report the project keeps (captured and
    assembled dumps, tracebacks, logs) and every message and example of the catalogue pass unchanged. A
    false positive would not only hide a fact: its 8-character pieces would be taken out everywhere else."""
    from harness.catalogue.load import entries

    lines = [line for path in sorted(DATA.rglob("*.txt"))
             for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if not _HASH.search(line)]
    lines += [t.template for e in entries() for t in e.texts] + [text for e in entries() for _, text in e.example]
    assert len(lines) > 1000
    changed = [(line, redact(line)) for line in lines if redact(line) != line]
    assert not changed, changed[:5]


def test_aws_secret_keys_as_random_bytes_make_them_are_taken() -> None:
    """10,000 keys of 30 random bytes in base64, as AWS issues them: '/' or '+' first or last, doubled, four
    or more of them: each is redacted, but for a path-like one (none in this draw; 3 in a million)."""
    rng = random.Random(20261206)
    kept = []
    for _ in range(10_000):
        key = base64.b64encode(rng.randbytes(30)).decode()
        if not any(ch in "/+" for ch in key) or not all(any(f(ch) for ch in key) for f in
                                                          (str.islower, str.isupper, str.isdigit)):
            continue  # the opaque rule's case, tested beside it
        if key in redact(f"the second copy: {key} (rotated)"):  # no word says 'secret': the shape alone
            kept.append(key)
    assert kept == []
