"""Cells packed into Slurm jobs so a batch pays the scheduler's start-up once (refenv/engines/slurm/packs.py):
how a batch is dealt, what a pack asks for, and its script run for real by bash."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refenv.engines.slurm import packs
from refenv.engines.slurm.script import JobFiles
from refenv.engines.slurm.state import Node


def node(name: str = "vm", cpus: int = 2, memory_mb: int = 19_000, state: str = "idle",
         partitions: tuple[str, ...] = ("debug",), features: tuple[str, ...] = ("driver_r535",)) -> Node:
    return Node(name, state, features, "gpu:sim:2", partitions, cpus, memory_mb)


def test_one_node_of_two_cpus_runs_four_cells_as_one_pack_two_at_a_time() -> None:
    assert packs.plan(4, 1, 6144, [node()]) == [packs.Pack((0, 1, 2, 3), 2)]
    assert packs.plan(4, 1, 6144, [node()])[0].waves == 2


def test_memory_bounds_the_width_and_more_nodes_make_more_packs() -> None:
    assert packs.plan(4, 1, 12_000, [node()]) == [packs.Pack((0, 1, 2, 3), 1)]
    assert packs.plan(5, 1, 1024, [node("a"), node("b")]) == [packs.Pack((0, 2, 4), 2), packs.Pack((1, 3), 2)]
    assert packs.plan(1, 1, 1024, [node("a"), node("b")]) == [packs.Pack((0,), 1)]
    assert packs.plan(3, 1, 1024, []) == [packs.Pack((0, 1, 2), 1)]  # no node known: one at a time


@given(st.integers(1, 300), st.integers(1, 8), st.integers(256, 65_536),
       st.lists(st.tuples(st.integers(0, 128), st.integers(0, 1 << 20)), max_size=6))
def test_every_cell_is_in_exactly_one_pack_that_fits_its_node(count: int, cpus: int, mem: int,
                                                            sizes: list[tuple[int, int]]) -> None:
    nodes = [node(f"n{i}", c, m) for i, (c, m) in enumerate(sizes)]
    planned = packs.plan(count, cpus, mem, nodes)
    assert sorted(c for p in planned for c in p.cells) == list(range(count))
    for p in planned:
        assert 1 <= p.width <= len(p.cells)
        assert all(p.width == 1 or (p.width * cpus <= n.cpus and p.width * mem <= n.memory_mb)
                   for n in nodes if n.cpus and n.memory_mb)
    assert len(planned) <= max(1, len(nodes))


def test_a_packs_resources_scale_with_its_width_and_waves() -> None:
    key = ("sbatch", "--parsable", "--job-name=refenv-r", "--time=4", "--cpus-per-task=1", "--mem=6G",
           "--export=NIL", "--constraint=driver_r535")
    assert packs.resources(key, packs.Pack((0, 1, 2, 3), 2)) == [
        "sbatch", "--parsable", "--job-name=refenv-r", "--time=9", "--cpus-per-task=2", "--mem=12288M",
        "--export=NIL", "--constraint=driver_r535"]


@pytest.mark.parametrize(("text", "mb"), [("6G", 6144), ("512M", 512), ("2048", 2048), ("1T", 1 << 20), ("6g", 6144)])
def test_sizes_in_mb(text: str, mb: int) -> None:
    assert packs.memory_mb(text) == mb


def test_only_nodes_the_placement_could_use_are_eligible() -> None:
    nodes = [node("a"), node("b", state="down"), node("c", partitions=("gpu",)), node("d", features=())]
    assert [n.name for n in packs.eligible(nodes, None, (), None)] == ["a", "c", "d"]
    assert [n.name for n in packs.eligible(nodes, "debug", ("driver_r535",), None)] == ["a"]
    assert [n.name for n in packs.eligible(nodes, None, (), "d")] == ["d"]


def _events(path: Path) -> list[tuple[str, int]]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [(kind, int(i)) for kind, i in (ln.split() for ln in text.splitlines() if ln)]


def test_the_pack_script_runs_every_cell_width_at_a_time(tmp_path: Path) -> None:
    events = tmp_path / "events"
    cells = []
    for i in range(5):
        script = tmp_path / f"c{i}.sh"
        # Each cell notes its start, runs until the test lets it go, and notes its end: how many ran at once is
        # read from the order of those lines, never from how long anything took.
        script.write_text(f"echo start {i} >> {events}\nwhile [ ! -e {tmp_path}/go{i} ]; do sleep 0.01; done\n"
                          f"echo cell {i}\necho end {i} >> {events}\n", encoding="utf-8")
        cells.append(JobFiles(str(script), str(tmp_path / f"c{i}.log"), ""))
    pack = tmp_path / "pack.sh"
    pack.write_text(packs.pack_script(cells, 2, str(tmp_path / "pack.jobid")), encoding="utf-8")
    proc = subprocess.Popen(["bash", str(pack)], env={"SLURM_JOB_ID": "77", "PATH": "/usr/bin:/bin"})
    released: list[int] = []
    deadline = time.monotonic() + 120  # only a net for a pack that never starts a cell: each step is an event
    try:
        while len(released) < 5:
            seen = _events(events)
            started = [i for kind, i in seen if kind == "start"]
            in_flight = set(started) - {i for kind, i in seen if kind == "end"}
            assert len(in_flight) <= 2, seen
            # Let the oldest running cell go once two run (the pack's width), or when no other is left to start.
            held = [i for i in started if i in in_flight and i not in released]
            if held and (len(in_flight) == 2 or len(started) == 5):
                (tmp_path / f"go{held[0]}").touch()
                released.append(held[0])
            assert time.monotonic() < deadline, f"the pack stopped starting cells: {seen}"
            time.sleep(0.01)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (tmp_path / "pack.jobid").read_text() == "77\n", "the job id first, for the submitter"
    assert [Path(c.log).read_text() for c in cells] == [f"cell {i}\n" for i in range(5)]
    running, most = 0, 0
    for kind, _ in _events(events):
        running += 1 if kind == "start" else -1
        most = max(most, running)
    assert most == 2, _events(events)  # two at a time, never more


def test_term_reaches_the_cells_and_the_pack_waits_for_them(tmp_path: Path) -> None:
    cells = []
    for i in range(2):
        script = tmp_path / f"c{i}.sh"
        # The cell says it is ready once its trap is set: TERM is sent after that event, not after a pause.
        script.write_text(f"trap 'echo removed {i}; kill $!; exit 143' TERM\nsleep 30 &\n"
                          f"touch {tmp_path}/ready{i}\nwait $!\n", encoding="utf-8")
        cells.append(JobFiles(str(script), str(tmp_path / f"c{i}.log"), ""))
    pack = tmp_path / "pack.sh"
    pack.write_text(packs.pack_script(cells, 2, str(tmp_path / "pack.jobid")), encoding="utf-8")
    proc = subprocess.Popen(["bash", str(pack)])
    deadline = time.monotonic() + 120  # only a net for cells that never start
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        assert time.monotonic() < deadline and proc.poll() is None, "the cells never started"
        time.sleep(0.01)
    proc.terminate()
    assert proc.wait(timeout=10) == 143
    assert [Path(c.log).read_text() for c in cells] == ["removed 0\n", "removed 1\n"]
