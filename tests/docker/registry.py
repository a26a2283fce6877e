"""A real image registry on loopback for the publish tests: Debian's `docker-registry`, on a free port.

Started with a temporary storage folder and (optionally) htpasswd authentication, stopped afterwards.
Docker treats 127.0.0.0/8 registries as insecure-allowed, so plain HTTP works without daemon changes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import in_ci

# A throwaway account for the loopback registry; the hash is bcrypt of PASSWORD (the only format the
# registry's htpasswd backend reads), made once with Python's crypt.METHOD_BLOWFISH.
USERNAME = "refenv-tester"
PASSWORD = "refenv-test-registry-pw-5d1f0c"
PASSWORD_BCRYPT = "$2b$10$xv0ZN9L9.ep3SvJcPHscj.j0fpq6MHt0Dk84/1.4rL5PNuiq6n6qq"


@dataclass(frozen=True)
class Registry:
    host: str                      # "127.0.0.1:PORT"
    storage: Path
    username: str | None
    password: str | None

    def _get(self, path: str) -> dict[str, object]:
        request = urllib.request.Request(f"http://{self.host}{path}")
        if self.username and self.password:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            data = json.loads(response.read())
        assert isinstance(data, dict)
        return data

    def repositories(self) -> list[str]:
        return _strings(self._get("/v2/_catalog").get("repositories"))

    def tags(self, repository: str) -> list[str]:
        try:
            return _strings(self._get(f"/v2/{repository}/tags/list").get("tags"))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise


def _strings(value: object) -> list[str]:
    """A JSON list of names (null when the registry has none)."""
    return [str(v) for v in value] if isinstance(value, list) else []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binary() -> str:
    """The registry program, or a failed (CI) / skipped test saying how to get it."""
    found = shutil.which("docker-registry")
    if found:
        return found
    message = "the publish tests need Debian's docker-registry (apt-get install docker-registry; ./go installs it)"
    if in_ci():
        pytest.fail(f"CI=true: {message}", pytrace=False)
    pytest.skip(message)


def _config(storage: Path, port: int, htpasswd: Path | None) -> str:
    auth = (f"auth:\n  htpasswd:\n    realm: refenv-test\n    path: {htpasswd}\n" if htpasswd else "")
    return (f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
            f"  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: refenv-test-secret\n{auth}")


@contextlib.contextmanager
def running_registry(workdir: Path, authenticated: bool = True, timeout: float = 20.0) -> Iterator[Registry]:
    """A registry serving from `workdir`/storage until the block ends."""
    program = binary()
    storage = workdir / "storage"
    storage.mkdir(parents=True, exist_ok=True)
    htpasswd = None
    if authenticated:
        htpasswd = workdir / "htpasswd"
        htpasswd.write_text(f"{USERNAME}:{PASSWORD_BCRYPT}\n", encoding="utf-8")
    port = free_port()
    config = workdir / "config.yml"
    config.write_text(_config(storage, port, htpasswd), encoding="utf-8")
    log = (workdir / "registry.log").open("w")
    proc = subprocess.Popen([program, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2).close()
                break
            except urllib.error.HTTPError:
                break  # 401: it answers, and asks for credentials
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start: {(workdir / 'registry.log').read_text()}") from None
                time.sleep(0.2)
        yield Registry(f"127.0.0.1:{port}", storage, USERNAME if authenticated else None,
                       PASSWORD if authenticated else None)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
