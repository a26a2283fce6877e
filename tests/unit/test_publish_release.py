"""Release names, labels and Dockerfile text; credentials; the manifest; the source's URL (no Docker, no registry)."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from refenv import readiness
from refenv.errors import RefenvError
from refenv.model import codec
from refenv.publish import auth, evidence, manifest, release

INFO = release.ReleaseInfo("torch-2.14.1-cu130", "2.14.1", "cu130", "3.11", "0f7844b06f7c65d7" + "0" * 48, "run-1",
                           "d" * 64, ("r580 (simulated)",),
                           ("none: NO_DRIVER (needs >= 580.65.06)", "r470: DRIVER_TOO_OLD (needs >= 580.65.06)"),
                           ("real: NOT_RUN (no NVIDIA runtime)",), ("run-1", "run-2"), "2026-11-29T16:00:00+00:00",
                           "abc123", "https://git.example.com/refenv.git")
PASSWORD = "s3cret-Value-77"


@pytest.mark.parametrize(("text", "host", "namespace"), [
    ("127.0.0.1:5000/refenv", "127.0.0.1:5000", "refenv"),
    ("registry.example.com/ml/images", "registry.example.com", "ml/images"),
    ("localhost/team", "localhost", "team"),
    ("ghcr.io/org-name/sub_team/", "ghcr.io", "org-name/sub_team"),
])
def test_parse_registry(text: str, host: str, namespace: str) -> None:
    r = release.parse_registry(text)
    assert (r.host, r.namespace) == (host, namespace)
    assert r.repository("torch-2.14.1-cu130") == f"{host}/{namespace}/torch-2.14.1-cu130"


@pytest.mark.parametrize(("text", "words"), [
    ("127.0.0.1:5000", "no namespace"),
    ("myteam/images", "not a registry host"),
    ("host.example.com/Team", "must be lower-case"),
    ("bad_host!.com/x", "not a registry host"),
])
def test_parse_registry_errors_say_what_is_expected(text: str, words: str) -> None:
    with pytest.raises(RefenvError, match=words) as caught:
        release.parse_registry(text)
    assert "HOST[:PORT]/NAMESPACE" in str(caught.value)


def test_tags() -> None:
    assert release.release_tag("2.14.1", "cu130", "3.11") == "torch2.14.1-cu130-py3.11"
    assert release.hash_tag("0f7844b06f7c65d76403711e") == "0f7844b06f7c65d7"
    assert release.repository_name("Torch_2.14 GPU") == "torch_2.14-gpu"


def test_labels() -> None:
    labels = dict(release.labels(INFO))
    assert labels["org.opencontainers.image.title"] == "refenv torch-2.14.1-cu130"
    assert labels["org.opencontainers.image.version"] == "torch2.14.1-cu130-py3.11"
    assert labels["org.opencontainers.image.created"] == "2026-11-29T16:00:00+00:00"
    assert labels["org.opencontainers.image.revision"] == "abc123"
    assert labels["org.opencontainers.image.source"] == "https://git.example.com/refenv.git"
    assert labels["org.opencontainers.image.description"] == (
        "torch 2.14.1+cu130 (CUDA 13.0), Python 3.11; torch gets a GPU on r580 (simulated); no GPU on "
        "none: NO_DRIVER (needs >= 580.65.06); r470: DRIVER_TOO_OLD (needs >= 580.65.06); not tested on "
        "real: NOT_RUN (no NVIDIA runtime); refenv run run-1")
    assert (labels["refenv.torch"], labels["refenv.cuda"], labels["refenv.python"]) == ("2.14.1+cu130", "13.0", "3.11")
    assert (labels["refenv.min-driver"], labels["refenv.min-driver-full"]) == ("580.65.06", "580.65.06")
    assert labels["refenv.ready-hosts"] == "r580 (simulated)"
    assert labels["refenv.refused-hosts"] == ("none: NO_DRIVER (needs >= 580.65.06); "
                                              "r470: DRIVER_TOO_OLD (needs >= 580.65.06)")
    assert labels["refenv.untested-hosts"] == "real: NOT_RUN (no NVIDIA runtime)"
    assert (labels["refenv.run"], labels["refenv.runs"]) == ("run-1", "run-1, run-2")
    assert "refenv.verified-hosts" not in labels
    assert labels["refenv.report-digest"] == "sha256:" + "d" * 64
    assert labels["refenv.kind"] == "release" and labels["refenv.content-hash"] == INFO.content_hash
    cpu = dict(release.labels(release.ReleaseInfo("c", "2.13.0", "cpu", "3.11", "1" * 64, "r", "2" * 64, ("none",),
                                                  (), (), ("r",), "t")))
    assert cpu["refenv.cuda"] == "none" and cpu["refenv.min-driver"] == "none"
    assert "org.opencontainers.image.revision" not in cpu and "(CPU only)" in cpu["org.opencontainers.image.description"]
    assert "org.opencontainers.image.source" not in cpu  # no remote: no source label, never a local path
    cu128 = dict(release.labels(release.ReleaseInfo("c", "2.10.0", "cu128", "3.11", "1" * 64, "r", "2" * 64, (),
                                                    (), (), ("r",), "t")))
    assert (cu128["refenv.min-driver"], cu128["refenv.min-driver-full"]) == ("525.60.13", "570.26")
    assert "refenv.stack" not in cu128  # nothing beside torch was read: no label


def test_the_stack_beside_torch_is_a_label() -> None:
    from dataclasses import replace

    labels = dict(release.labels(replace(INFO, stack=("torchvision 0.29.1", "torchaudio 2.11.1"))))
    assert labels["refenv.stack"] == "torchvision 0.29.1, torchaudio 2.11.1"


def test_dockerfile_is_from_and_one_label() -> None:
    text = release.dockerfile("refenv/env-x:0123", (("a.b", "plain"), ("c", 'say "hi"\\now'), ("d", "two\nlines")))
    assert text == (
        "# refenv release: refenv/env-x:0123 with its verification labels; no layer changes.\n"
        "FROM refenv/env-x:0123\n"
        'LABEL a.b="plain" \\\n'
        '      c="say \\"hi\\"\\\\now" \\\n'
        '      d="two lines"\n')


def test_credentials_from_the_environment() -> None:
    assert auth.from_environment({}) is None
    creds = auth.from_environment({auth.USERNAME_VAR: "ci", auth.PASSWORD_VAR: PASSWORD})
    assert creds is not None and creds.auth_config() == {"username": "ci", "password": PASSWORD}
    assert PASSWORD not in repr(creds) and PASSWORD not in auth.source_of(creds)
    with pytest.raises(RefenvError, match=auth.PASSWORD_VAR):
        auth.from_environment({auth.USERNAME_VAR: "ci"})
    with pytest.raises(RefenvError, match=auth.USERNAME_VAR):
        auth.from_environment({auth.PASSWORD_VAR: PASSWORD})
    assert auth.source_of(None) == auth.DOCKER_CONFIG
    assert auth.redact(f"denied for ci:{PASSWORD} at x", [PASSWORD, ""]) == "denied for ci:*** at x"


def test_manifest_records_digests_and_never_credentials(tmp_path: Path) -> None:
    (ready,) = readiness.judge([
        readiness.CellFacts("torch-2.14.1-cu130", "r470", "gpu", "PASS", "DRIVER_TOO_OLD", "DRIVER_TOO_OLD", True, True,
                            "470.256.02", "2.14.1", "13.0"),
        readiness.CellFacts("torch-2.14.1-cu130", "r580", "gpu", "PASS", "OK", "OK", True, True, "580.95.05", "2.14.1",
                            "13.0"),
        readiness.CellFacts("torch-2.14.1-cu130", "real", "gpu", "NOT_RUN", "OK", None, False, True, None, "2.14.1",
                            "13.0", reason="no NVIDIA runtime")])
    p = manifest.Published("torch-2.14.1-cu130", "127.0.0.1:5000/t/torch-2.14.1-cu130",
                           ("torch2.14.1-cu130-py3.11", "0f7844b06f7c65d7"), "sha256:" + "e" * 64, INFO.content_hash,
                           "run-1", "/r/run-1/cells.json", "d" * 64, ("run-1",), ready, release.description(INFO),
                           release.labels(INFO))
    created = datetime.datetime(2026, 11, 29, 17, 0, 0, tzinfo=datetime.timezone.utc)
    made = manifest.document("127.0.0.1:5000/t", auth.source_of(None), [p], {"cpu": ("no PASS",)},
                             {"b": "push failed"}, created)
    doc = codec.encode(made)  # as the manifest file holds it
    assert doc["published"][0]["reference"] == "127.0.0.1:5000/t/torch-2.14.1-cu130@sha256:" + "e" * 64
    assert doc["published"][0]["report_digest"] == "sha256:" + "d" * 64
    entry = doc["published"][0]
    assert entry["ready_hosts"] == [{"host": "r580", "gpu": "simulated", "scenario": "gpu"}]
    assert entry["refused_hosts"] == [{"host": "r470", "verdict": "DRIVER_TOO_OLD", "min_driver": "580.65.06",
                                       "fix": "install R580 (>= 580.65.06)",
                                       "label": "r470: DRIVER_TOO_OLD (needs >= 580.65.06)"}]
    assert entry["untested_hosts"] == [{"host": "real", "why": "NOT_RUN: no NVIDIA runtime"}]
    assert entry["fixes"] == ["r470: driver too old for CUDA 13.0; install R580 (>= 580.65.06)"]
    assert entry["min_driver"] == "580.65.06" and entry["runs"] == ["run-1"]
    assert entry["description"] == entry["labels"]["org.opencontainers.image.description"]
    assert doc["refused"] == [{"environment": "cpu", "reasons": ["no PASS"]}]
    assert doc["failed"] == [{"environment": "b", "error": "push failed"}]
    first = manifest.write(made, tmp_path / "publish", created)
    second = manifest.write(made, tmp_path / "publish", created)
    assert first.name == "20261129-170000.json" and second.name == "20261129-170000-2.json"
    assert json.loads(first.read_text())["schema"] == "refenv.publish"
    assert PASSWORD not in first.read_text()


def test_remote_urls_lose_their_credentials_and_local_paths_are_no_source() -> None:
    assert evidence.remote_url("https://user:tok3n@git.example.com/r.git") == "https://git.example.com/r.git"
    assert evidence.remote_url("git@github.com:org/r.git") == "github.com:org/r.git"
    assert evidence.remote_url("https://git.example.com/r.git") == "https://git.example.com/r.git"
    assert evidence.remote_url("ssh://git@host.example/r.git") == "ssh://host.example/r.git"
    for local in ("/srv/git/refenv.git", "../refenv", "file:///srv/git/refenv.git", "C:/repos/refenv"):
        assert evidence.remote_url(local) is None, local


def test_git_info_without_a_remote_gives_no_source(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert evidence.git_info(tmp_path) == (None, None)  # no commit yet, no remote
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "https://t0k@git.example.com/x.git"],
                   check=True)
    assert evidence.git_info(tmp_path)[1] == "https://git.example.com/x.git"


def test_sha256_of(tmp_path: Path) -> None:
    path = tmp_path / "cells.json"
    path.write_bytes(b"abc")
    assert evidence.sha256_of(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
