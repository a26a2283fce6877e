"""The one normalisation before any reader: logical lines that name their original line, and the catalogue
matched over them whatever the paste did to a message's spelling, wrapping or ending."""

from __future__ import annotations

import textwrap

import pytest

from harness.intake.match import cut_short, find_all
from harness.intake.normal import normalise
from harness.intake.spelling import respell

WARNING = ("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). "
           "Please update your GPU driver by downloading and installing a new version from the URL: "
           "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
           "PyTorch version that has been compiled with your version of the CUDA driver.")


def texts(text: str) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in normalise(text) if line.text]


@pytest.mark.parametrize("width", [50, 60, 72, 100])
def test_a_wrapped_message_is_read_whole_on_its_first_line(width: int) -> None:
    pasted = "Before it:\n\n" + "\n".join(textwrap.wrap(WARNING, width)) + "\n\nPyTorch version: 2.3.0\n"
    lines = normalise(pasted)
    found = [(lines[i].number, f.tail()) for i, per in enumerate(find_all(lines)) for f in per]
    assert found == [(3, WARNING[WARNING.index("The NVIDIA"):])]
    assert texts(pasted)[-1] == (len(pasted.splitlines()), "PyTorch version: 2.3.0")


def test_short_lines_and_records_are_not_joined() -> None:
    dump = ("PyTorch version: 2.3.0+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
            "OS: Ubuntu 22.04.4 LTS (x86_64)\n- GPU: NVIDIA GeForce RTX 4090\n>>> torch.cuda.is_available()\nFalse\n")
    assert [t for _, t in texts(dump)] == dump.replace(">>> ", "").splitlines()


def test_one_long_line_is_not_a_wrap() -> None:
    text = WARNING + "\n  return torch._C._cuda_getDeviceCount() > 0\nPyTorch version: 2.3.0\n"
    assert len(texts(text)) == 3


def test_quoting_prompts_numbers_indentation_and_tabs_go() -> None:
    pasted = ("> > 1 | $ nvidia-smi\n> > 2 | NVIDIA-SMI has failed because it couldn't communicate with the "
              "NVIDIA driver.\n> > 3 | >>> torch.cuda.is_available()\n")
    lines = [line for line in normalise(pasted) if line.text]
    assert [(line.prompt, line.text) for line in lines] == [
        ("$", "nvidia-smi"),
        ("", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
        (">>>", "torch.cuda.is_available()")]
    assert texts("\tPyTorch\tversion:   2.1.0\n\t\tOS:  Windows\n") == [(1, "PyTorch version: 2.1.0"), (2, "OS: Windows")]


def test_numbers_that_are_not_a_listing_stay() -> None:
    assert texts("1 GPU, 2 drivers\nNothing else\n") == [(1, "1 GPU, 2 drivers"), (2, "Nothing else")]


@pytest.mark.parametrize(("said", "spelled"), [
    ("too old(found version 8000)", "too old (found version 8000)"),
    ("found no nvidia driver on your system", "Found no NVIDIA driver on your system"),
    ("no  CUDA-capable  device is detected", "no CUDA-capable device is detected"),
    ("Failed to initialize NVML: Unknown Error", "Failed to initialize NVML: Unknown Error"),
    ("nvidia smi: command not found", "nvidia-smi: command not found"),
])
def test_respelling_gives_the_catalogues_spelling(said: str, spelled: str) -> None:
    assert respell(said) == spelled


def test_a_message_broken_across_lines_is_found_on_its_first_line() -> None:
    lines = normalise("Here:\nThe NVIDIA driver on your system is too old(found\nversion 9010). Please update\n")
    hits = find_all(lines)
    assert [(lines[i].number, f.id, f.hit.params) for i, per in enumerate(hits) for f in per] == [
        (2, "torch.driver_too_old", {"found": "9010"})]


@pytest.mark.parametrize(("text", "ident"), [
    ("RuntimeError: No CUDA GPUs are avai", "torch.no_gpus"),
    ("NVIDIA-SMI has failed because it c", "smi.no_driver"),
    ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCu",
     "torch.unexpected_error"),
])
def test_a_message_cut_short_is_known_by_its_opening(text: str, ident: str) -> None:
    cut = cut_short(text)
    assert cut is not None and cut[0].id == ident


def test_a_whole_or_unrelated_ending_is_not_a_cut() -> None:
    assert cut_short("RuntimeError: No CUDA GPUs are available") is None
    assert cut_short("training finished in 3 h") is None
