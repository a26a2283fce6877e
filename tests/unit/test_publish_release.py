"""Release names, labels and Dockerfile text; credentials; the manifest; finding the run (no Docker, no registry)."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

from refenv.errors import RefenvError
from refenv.publish import auth, evidence, manifest, release

INFO = release.ReleaseInfo("torch-2.14.1-cu130", "2.14.1", "cu130", "3.11", "0f7844b06f7c65d7" + "0" * 48, "run-1",
                           "d" * 64, ("none", "r580"), "2026-11-29T16:00:00+00:00", "abc123",
                           "https://git.example.com/refenv.git")
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
        "torch 2.14.1+cu130 (CUDA 13.0), Python 3.11; verified by refenv run run-1 on none, r580")
    assert (labels["refenv.torch"], labels["refenv.cuda"], labels["refenv.python"]) == ("2.14.1+cu130", "13.0", "3.11")
    assert (labels["refenv.min-driver"], labels["refenv.min-driver-full"]) == ("580.65.06", "580.65.06")
    assert labels["refenv.verified-hosts"] == "none, r580"
    assert labels["refenv.report-digest"] == "sha256:" + "d" * 64
    assert labels["refenv.kind"] == "release" and labels["refenv.content-hash"] == INFO.content_hash
    cpu = dict(release.labels(release.ReleaseInfo("c", "2.13.0", "cpu", "3.11", "1" * 64, "r", "2" * 64, ("none",),
                                                  "t")))
    assert cpu["refenv.cuda"] == "none" and cpu["refenv.min-driver"] == "none"
    assert "org.opencontainers.image.revision" not in cpu and "(CPU only)" in cpu["org.opencontainers.image.description"]
    cu128 = dict(release.labels(release.ReleaseInfo("c", "2.10.0", "cu128", "3.11", "1" * 64, "r", "2" * 64, (),
                                                    "t")))
    assert (cu128["refenv.min-driver"], cu128["refenv.min-driver-full"]) == ("525.60.13", "570.26")


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
    p = manifest.Published("torch-2.14.1-cu130", "127.0.0.1:5000/t/torch-2.14.1-cu130",
                           ("torch2.14.1-cu130-py3.11", "0f7844b06f7c65d7"), "sha256:" + "e" * 64, INFO.content_hash,
                           "run-1", "/r/run-1/cells.json", "d" * 64, ("none (no driver)",), (), release.labels(INFO))
    created = datetime.datetime(2026, 11, 29, 17, 0, 0, tzinfo=datetime.timezone.utc)
    doc = manifest.document("127.0.0.1:5000/t", auth.source_of(None), [p], {"cpu": ("no PASS",)},
                            {"b": "push failed"}, created)
    assert doc["published"][0]["reference"] == "127.0.0.1:5000/t/torch-2.14.1-cu130@sha256:" + "e" * 64
    assert doc["published"][0]["report_digest"] == "sha256:" + "d" * 64
    assert doc["refused"] == [{"environment": "cpu", "reasons": ["no PASS"]}]
    assert doc["failed"] == [{"environment": "b", "error": "push failed"}]
    first = manifest.write(doc, tmp_path / "publish", created)
    second = manifest.write(doc, tmp_path / "publish", created)
    assert first.name == "20261129-170000.json" and second.name == "20261129-170000-2.json"
    assert json.loads(first.read_text())["schema"] == "refenv.publish"
    assert PASSWORD not in first.read_text()


def write_run(root: Path, name: str, started: str, content_hash: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "cells.json").write_text(json.dumps({"schema": "refenv.cells", "version": 1, "run": {"id": name, "started": started},
                                                   "environments": [{"name": "env", "content_hash": content_hash}]}))
    return folder / "cells.json"


def test_find_run_takes_the_newest_run_of_this_image(tmp_path: Path) -> None:
    old = write_run(tmp_path, "20261101-000000-a", "2026-11-01T00:00:00+00:00", "1" * 64)
    write_run(tmp_path, "20261102-000000-b", "2026-11-02T00:00:00+00:00", "1" * 64)
    newest = write_run(tmp_path, "20261103-000000-c", "2026-11-03T00:00:00+00:00", "2" * 64)
    os.symlink("20261103-000000-c", tmp_path / "latest")
    found = evidence.find_run(tmp_path, "env", "1" * 64)
    assert not isinstance(found, str) and found[1].run.id == "20261102-000000-b"
    assert not isinstance(evidence.find_run(tmp_path, "env", "2" * 64), str)
    other = evidence.find_run(tmp_path, "env", "3" * 64)
    assert isinstance(other, str) and "differs from the one the newest run of env tested (2222222222222222" in other
    assert str(newest) in other and old.exists()
    none = evidence.find_run(tmp_path, "missing", "1" * 64)
    assert isinstance(none, str) and none.startswith("no matrix run under")


def test_remote_urls_lose_their_credentials() -> None:
    assert evidence.without_userinfo("https://user:tok3n@git.example.com/r.git") == "https://git.example.com/r.git"
    assert evidence.without_userinfo("git@github.com:org/r.git") == "git@github.com:org/r.git"
    assert evidence.without_userinfo("https://git.example.com/r.git") == "https://git.example.com/r.git"


def test_sha256_of(tmp_path: Path) -> None:
    path = tmp_path / "cells.json"
    path.write_bytes(b"abc")
    assert evidence.sha256_of(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
