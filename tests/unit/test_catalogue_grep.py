"""torch's failure texts live in the failure catalogue only: a grep of the source tree finds them nowhere else.

The tree is harness/, refenv/ and tasks.py; tests, docs and the catalogue's own data file are left out, and so
is the simulated driver's C source (refenv/images/simdriver: it answers cuGetErrorString with the driver's own
words, as the real driver does).
A text is cut into its literal pieces (between parameters, lines and sentences) of 24 characters or more;
a short message of torch's own that is one piece ("Can't initialize NVML") counts whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness import catalogue

ROOT = Path(__file__).resolve().parents[2]
DATA_FILE = ROOT / "harness" / "data" / "failures.json"
SIMULATED_DRIVER = Path("refenv") / "images" / "simdriver"
# The layers whose words torch itself prints (its own, and the CUDA errors it quotes).
TORCH_LAYERS = ("torch", "cuda_driver", "cuda_runtime")
SUFFIXES = (".py", ".json", ".j2", ".yaml", ".yml", ".txt", ".c", ".h", ".inc", ".sh")
MIN_PIECE = 24


def pieces(layers: tuple[str, ...] = TORCH_LAYERS) -> dict[str, str]:
    """Each literal piece of each wording of these layers' rows, with the row it belongs to."""
    out: dict[str, str] = {}
    for e in catalogue.entries():
        if e.layer not in layers:
            continue
        for t in e.texts:
            for part in re.split(r"\{\w+\}|\n|(?<=[.?]) ", t.template):
                piece = part.strip().rstrip(".")
                if len(piece) >= MIN_PIECE or (e.layer == "torch" and part == t.template):
                    out[piece] = e.id
    return out


def sources(root: Path) -> list[Path]:
    found = [p for top in ("harness", "refenv") for p in sorted((root / top).rglob("*"))
             if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
             and not p.relative_to(root).is_relative_to(SIMULATED_DRIVER)]
    tasks = root / "tasks.py"
    return [p for p in [*found, *([tasks] if tasks.is_file() else [])] if p.resolve() != DATA_FILE]


def occurrences(root: Path, wanted: dict[str, str]) -> list[str]:
    out: list[str] = []
    for path in sources(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        out.extend(f"{path.relative_to(root)}: {piece!r} ({ident})" for piece, ident in wanted.items() if piece in text)
    return out


def test_torchs_failure_texts_appear_only_in_the_catalogue() -> None:
    wanted = pieces()
    assert len(wanted) >= 15, "the catalogue lost torch's texts"
    assert occurrences(ROOT, wanted) == []


def test_the_grep_finds_a_text_written_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "refenv").mkdir()
    (tmp_path / "harness").mkdir()
    (tmp_path / "refenv" / "x.py").write_text('WORDS = "Found no NVIDIA driver on your system"\n')
    (tmp_path / "tasks.py").write_text("# CUDA driver initialization failed, you might not have a CUDA gpu.\n")
    found = occurrences(tmp_path, pieces())
    assert any("refenv/x.py" in f and "torch.no_driver" in f for f in found)
    assert any(f.startswith("tasks.py") and "torch.init_failed" in f for f in found)
