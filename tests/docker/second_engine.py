"""A Docker engine of a test's own, to be killed: others' runs share the machine's engine, which is never stopped.

It has its own data root, exec root (and so its own containerd), socket, pid file, containerd namespace and
cgroup parent, a bridge of its own and no iptables rules; runs reach it through DOCKER_HOST. (Not
`--bridge=none`: a daemon started so deletes the default bridge, docker0, the machine's engine uses:
moby's daemon_unix.go, removeDefaultBridgeInterface.) Images are copied in from
the machine's engine (`docker save | docker load`, through the API).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker

from refenv.engines.docker.sdk import Engine


@dataclass
class SecondEngine:
    """A dockerd started by a test: its folder, socket, and process."""

    root: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"unix://{self.root / 'docker.sock'}"

    @property
    def exec_root(self) -> Path:
        return self.root / "exec"

    @property
    def bridge(self) -> str:
        """A bridge interface of this engine's own (interface names hold at most 15 characters)."""
        return "rfd" + "".join(ch for ch in self.root.name if ch.isalnum())[-8:]

    def _make_bridge(self) -> None:
        """The engine's bridge with an address from TEST-NET-1 (RFC 5737: never routed), made once."""
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True, check=False).returncode == 0:
            return
        for cmd in (["ip", "link", "add", "name", self.bridge, "type", "bridge"],
                    ["ip", "addr", "add", "192.0.2.1/24", "dev", self.bridge],
                    ["ip", "link", "set", self.bridge, "up"]):
            subprocess.run(cmd, check=True, capture_output=True)

    def remove_bridge(self) -> None:
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=False)

    def start(self, timeout: float = 60.0) -> None:
        """Start dockerd (again, on the same data root) and wait until it answers.

        A containerd the killed daemon had started may still be winding down; the new daemon starts its own,
        so the old one is given a few seconds and then ended."""
        self._end_containerd()
        self._make_bridge()
        log = (self.root / "dockerd.log").open("ab")
        # containerd's namespace must match [A-Za-z0-9]+([._-][A-Za-z0-9]+)*; mkdtemp's suffix may hold '_'
        # next to the prefix's '-' ('refenv-d-_4nly562'), which dockerd refuses for every container.
        name = "refenvd" + "".join(ch for ch in self.root.name if ch.isalnum())
        self.process = subprocess.Popen(
            ["dockerd", "--data-root", str(self.root / "data"), "--exec-root", str(self.exec_root),
             "-H", self.host, "--pidfile", str(self.root / "docker.pid"), "--bridge", self.bridge, "--iptables=false",
             "--ip-masq=false", "--containerd-namespace", name, "--containerd-plugins-namespace", f"{name}-plugins",
             "--cgroup-parent", f"/{name}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.root / "dockerd.log").read_text()[-2000:]
            with contextlib.suppress(Exception):
                docker.DockerClient(base_url=self.host, timeout=5).ping()
                return
            time.sleep(0.3)
        raise AssertionError(f"the second dockerd did not answer in {timeout:g} s")

    def _end_containerd(self, grace: float = 10.0) -> None:
        def running() -> list[int]:
            found = subprocess.run(["pgrep", "-f", f"containerd --config {self.exec_root}"], capture_output=True,
                                   text=True, check=False)
            return [int(p) for p in found.stdout.split()]

        deadline = time.monotonic() + grace
        while running() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        (self.exec_root / "containerd" / "containerd.pid").unlink(missing_ok=True)

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.host, timeout=600)

    def kill(self) -> None:
        """SIGKILL the daemon alone, as a crash would: its containerd and containers are left as they are."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM the daemon and wait until it has ended (it stops its containers and its containerd)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def processes(self) -> list[int]:
        """Every process still running for this engine: its containerd, shims and their containers."""
        out = subprocess.run(["pgrep", "-f", str(self.root)], capture_output=True, text=True, check=False)
        return [int(p) for p in out.stdout.split()]

    def copy_image(self, source: Engine, ref: str) -> None:
        """`docker save REF | docker load` from the machine's engine into this one."""
        self.client().api.load_image(source.api.get_image(ref, chunk_size=4 << 20))


@contextlib.contextmanager
def second_engine() -> Iterator[SecondEngine]:
    """A started second engine; afterwards stopped, whatever is left of it ended, and its folder removed.

    The folder is short (under /tmp): containerd's socket path must fit a unix socket's 108 bytes.
    """
    root = Path(tempfile.mkdtemp(prefix="refenv-d-", dir="/tmp"))
    os.chmod(root, 0o711)
    engine = SecondEngine(root)
    try:
        engine.start()
        yield engine
    finally:
        engine.stop()
        for pid in engine.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["sh", "-c", f"grep -o ' {root}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l"],
                       check=False)
        engine.remove_bridge()
        shutil.rmtree(root, ignore_errors=True)
