"""The codec reads the harness's documents on every Python the harness promises (3.8+), not only the host's.

Its records' annotations are evaluated when a document is read (harness/schema/jsondata.py): an `X | None`
or a `list[...]` written where the codec looks would fail on 3.8 and 3.9 at the first read. Each interpreter
on this machine writes `diagnose --stack` and `stack` documents and reads them back through the codec.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.unit.interpreters import Interpreter, interpreters

ROOT = Path(__file__).resolve().parents[2]
READ_BACK = """
import json, sys
from harness.schema.envelope import DiagnoseDocument, StackDocument
from harness.schema.jsondata import decode, encode
kinds = {"refenv.diagnosis": DiagnoseDocument, "refenv.stack": StackDocument}
for path in sys.argv[1:]:
    raw = json.load(open(path))
    record = decode(kinds[raw["schema"]], raw)
    assert encode(record)["schema"] == raw["schema"]
    print(raw["schema"], type(record.stack).__name__)
"""


@pytest.mark.parametrize("python", [p for p in interpreters() if p.version >= (3, 8)], ids=lambda p: p.name)
def test_each_python_reads_back_what_it_wrote(python: Interpreter, tmp_path: Path) -> None:
    diagnose, stack = tmp_path / "diagnose.json", tmp_path / "stack.json"
    for args, out in ((["diagnose", "--stack", "--json"], diagnose), (["stack", "--json"], stack)):
        done = subprocess.run([python.path, "-m", "harness", *args], capture_output=True, text=True, timeout=300,
                              check=False, cwd=ROOT)
        assert done.returncode in (0, 1) and done.stdout.startswith("{"), done.stderr[-2000:]
        out.write_text(done.stdout, encoding="utf-8")
    read = subprocess.run([python.path, "-c", READ_BACK, str(diagnose), str(stack)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=ROOT)
    assert read.returncode == 0, read.stderr[-2000:]
    assert read.stdout.split("\n")[:2] == ["refenv.diagnosis JudgedStack", "refenv.stack JudgedStack"]
