"""Bad input gives a one-line ReportError saying what was expected, never a traceback."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest

from harness.intake import ReportError, load_report, parse_collect_env, parse_document

DATA = Path(__file__).resolve().parents[1] / "data" / "collect_env"


def refused(source: str | bytes | Path) -> str:
    with pytest.raises(ReportError) as info:
        load_report(source)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("text", ["", "   \n\t\n"])
def test_empty(text: str) -> None:
    assert "the report is empty" in refused(text.encode())
    with pytest.raises(ReportError, match=r"expected the output of `python -m torch\.utils\.collect_env`"):
        parse_collect_env(text)


def test_nul_bytes_are_binary() -> None:
    assert "NUL bytes" in refused(b"PyTorch version: 2.1.0\n\x00\x01\x02")
    with pytest.raises(ReportError, match="binary"):
        parse_collect_env("PyTorch version: 2.1.0\x00\n")


def test_undecodable_bytes_are_binary() -> None:
    rng = random.Random(7)
    noise = bytes(rng.randrange(1, 256) for _ in range(4096))
    message = refused(noise)
    assert "binary" in message and "control characters" in message
    as_utf16 = refused(b"\xff\xfe" + noise)  # a UTF-16 mark does not make noise text
    assert "binary" in as_utf16 or "UTF-16 text but does not decode" in as_utf16


def test_text_without_collect_env_fields() -> None:
    message = refused("Hello,\nmy training is slow since Tuesday.\nAny idea?\nThanks: Bob\n")
    assert message.startswith("no fact about the torch / CUDA stack was found in it")
    assert "python -m torch.utils.collect_env" in message


def test_header_only_is_truncated() -> None:
    assert "stops at line 2, before its first field" in refused("some text\nCollecting environment information...\n")


def test_fields_that_say_nothing_useful() -> None:
    message = refused("Collecting environment information...\nIs debug build: False\nGCC version: 12\n")
    assert "cut off before anything it reports" in message


def test_json_that_is_not_a_document() -> None:
    assert "does not parse" in refused('{"schema": "refenv.diagnosis",\n "version": 1,')
    assert "without a 'schema' field" in refused('{"facts": {}}\n')
    assert "field 'schema' is 'other'" in refused('{"schema": "other", "version": 1}\n')
    assert "field 'version' is 99" in refused('{"schema": "refenv.diagnosis", "version": 99, "facts": {}}\n')


def test_document_without_facts_names_the_failure() -> None:
    doc = {"schema": "refenv.diagnosis", "version": 1, "error": {"type": "TimeoutError", "message": "torch hung"}}
    with pytest.raises(ReportError, match=r"field 'facts' is missing.*\(TimeoutError: torch hung\)"):
        parse_document(doc)


@pytest.mark.parametrize(("facts", "where"), [
    ([], "field 'facts' must be an object"),
    ({"torch": {"cudart_version": "12.1"}}, "facts.torch.cudart_version: expected an integer or null, got '12.1'"),
    ({"torch": {"device_count": True}}, "facts.torch.device_count: expected an integer or null, got True"),
    ({"driver": {"nvml": {"devices": [{"name": 5}]}}}, "facts.driver.nvml.devices[0].name: expected a string"),
    ({"driver": {"libcuda": "loaded"}}, "facts.driver.libcuda: expected an object, got str"),
    ({"host": {"os": ["Linux"]}}, "facts.host.os: expected a string or null"),
])
def test_document_fields_of_the_wrong_kind(facts: object, where: str) -> None:
    with pytest.raises(ReportError) as info:
        parse_document({"schema": "refenv.diagnosis", "version": 1, "facts": facts})
    assert where in str(info.value)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    assert "no such file" in refused(str(tmp_path / "report.txt"))
    assert "is a folder" in refused(tmp_path)


def test_every_cut_of_a_real_dump_parses_or_refuses_cleanly() -> None:
    lines = (DATA / "too-old-driver_cu121-on-r470.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    parsed = 0
    for end in range(len(lines) + 1):
        for cut in ("".join(lines[:end]), "".join(lines[:end])[:-7]):
            try:
                load_report(cut.encode())
                parsed += 1
            except ReportError:
                pass
    assert parsed > len(lines)  # most cuts still hold a field worth reading


def test_garbage_never_raises_anything_else() -> None:
    rng = random.Random(11)
    alphabet = "PyTorch version: CUDA Is available GPU 0 [pip3] ==\n>{}\"'`\\\t:.-+123456789"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 400)))
        with contextlib.suppress(ReportError):
            load_report(text.encode())


def test_diagnose_exit_codes_tell_bad_input_from_a_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from harness import __main__ as cli
    from harness.diagnosis import report

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert cli.main(["diagnose", "--from", str(empty)]) == 2  # bad input

    def broken(source: str) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(report, "diagnose_report", broken)
    assert cli.main(["diagnose", "--from", str(empty)]) == 3  # a bug is not bad input
    assert "internal error: ZeroDivisionError: a bug" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["diagnose", "--from", "REPORT"], ["cell", "--probes", "off", "--memory", "off"]])
def test_an_out_that_cannot_be_written_is_bad_input_and_leaves_no_temporary_file(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness import __main__ as cli

    report = tmp_path / "report.txt"
    report.write_text((DATA.parent / "reports" / "smi-table-pip.txt").read_text())
    folder = tmp_path / "out"
    folder.mkdir()
    words = [str(report) if w == "REPORT" else w for w in command]
    assert cli.main([*words, "--out", str(folder), "--torch-timeout", "30"]) == 2  # a folder, not a file
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and ": cannot write: " in err and "internal error" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "report.txt"]


@pytest.mark.parametrize("command", ["diagnose", "cell"])
@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_torch_timeout_is_a_finite_positive_number(command: str, value: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # nan or a negative number was taken as a 0.1 s wait for torch: a timeout the verdict would then report.
    from harness import __main__ as cli

    assert cli.main([command, "--out", "-", "--torch-timeout", value]) == 2
    assert "--torch-timeout" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "said"), [
    ('{"schema": "refenv.diagnosis", "version": ' + "9" * 5000 + "}", "more than 30 digits"),
    ('{"schema": "refenv.diagnosis", "version": 1, "facts": {"host": NaN}}', "no NaN or Infinity"),
    ('{"schema": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 64"),
])
def test_a_json_report_is_read_with_the_input_discipline(text: str, said: str) -> None:
    # A 5,000-digit number was int()'s ValueError, an internal error (exit 3) instead of bad input.
    assert said in refused(text + "\n")


def test_from_reads_a_file_whose_name_holds_a_newline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness import __main__ as cli

    report = tmp_path / "pasted\nreport.txt"
    report.write_text((DATA.parent / "reports" / "smi-table-pip.txt").read_text())
    assert cli.main(["diagnose", "--from", str(report)]) == 1
    assert capsys.readouterr().out.startswith("refenv diagnose: DRIVER_TOO_OLD")
