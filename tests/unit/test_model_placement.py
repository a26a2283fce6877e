"""matrix.yaml's cluster fields: run.backend and run.launcher, and a real host's slurm/kubernetes placement."""

from __future__ import annotations

import pytest

from refenv.errors import MatrixError
from refenv.model.matrix_yaml import parse
from refenv.model.placement import KubePlacement, SlurmPlacement

HEAD = """\
version: 1
environments:
  cpu: {torch: "2.13.0", variant: cpu}
scenarios:
  gpu: {gpus: all}
"""


def _parse(hosts: str, run: str = "") -> object:
    return parse(HEAD + "hosts:\n" + hosts + (("run:\n" + run) if run else ""), "m.yaml")


def _error(hosts: str, run: str = "") -> MatrixError:
    with pytest.raises(MatrixError) as info:
        _parse(hosts, run)
    return info.value


def test_placements_and_backend_are_read() -> None:
    m = parse(HEAD + """\
hosts:
  r535-h100: {kind: real, slurm: {constraint: "driver_r535&h100", gres: "gpu:1", partition: gpu, account: ml}}
  a100:
    kind: real
    kubernetes: {node_selector: {nvidia.com/cuda.driver.major: "535", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
  r580: {kind: simulated, profile: r580}
run: {backend: slurm, launcher: pyxis}
""", "m.yaml")
    hosts = {h.name: h for h in m.hosts}
    assert hosts["r535-h100"].slurm == SlurmPlacement("driver_r535&h100", "gpu:1", "gpu", "ml")
    assert hosts["a100"].kubernetes == KubePlacement((("nvidia.com/cuda.driver.major", "535"),
                                                      ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB")))
    assert hosts["r580"].slurm is None and hosts["r580"].kubernetes is None
    assert (m.run.backend, m.run.launcher) == ("slurm", "pyxis")


def test_defaults_are_the_local_engine_and_docker() -> None:
    m = parse(HEAD + "hosts:\n  none: {kind: none}\n", "m.yaml")
    assert (m.run.backend, m.run.launcher) == ("local", "docker")


@pytest.mark.parametrize(("hosts", "run", "field", "says"), [
    ("  r: {kind: simulated, profile: r535, slurm: {constraint: x}}\n", "", "hosts.r.slurm", "only real hosts"),
    ("  r: {kind: real, slurm: {constraint: x, nodes: 2}}\n", "", "hosts.r.slurm", "nodes"),
    ("  r: {kind: real, slurm: {gres: '1 gpu'}}\n", "", "hosts.r.slurm.gres", "gpu:1"),
    ("  r: {kind: real, kubernetes: {node_selector: {'bad key!': x}}}\n", "", "node_selector", "label"),
    ("  r: {kind: real}\n", "  backend: lsf\n", "run.backend", "local | slurm | kubernetes"),
    ("  r: {kind: real}\n", "  launcher: singularity\n", "run.launcher", "docker | pyxis | oci"),
])
def test_mistakes_name_the_field(hosts: str, run: str, field: str, says: str) -> None:
    err = _error(hosts, run)
    assert field in str(err) and says in str(err), str(err)
    assert str(err).startswith("m.yaml:")
