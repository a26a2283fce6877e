"""`invoke reproduce flags ...` and what a report can hand to the plan, under hostile input: a
ReproduceError in one line or a plan whose every value the simulated driver and Docker accept."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refenv.model import accepts, matrix_yaml, profiles
from refenv.reproduce import Inferred, ReproduceError, from_flags
from refenv.reproduce.builds import Offer
from refenv.reproduce.choose import plan
from refenv.reproduce.gpus import GpuGuess

ROOT = Path(__file__).resolve().parents[2]
MATRIX = matrix_yaml.load(ROOT / "matrix.yaml")
OFFLINE = Offer(False, frozenset({("2.13.0", "cpu", "3.11")}), ("3.9", "3.11", "3.13"),
                frozenset({("2.14.1", "cu130", "3.11"), ("2.10.0", "cu128", "3.11")}))


def refused(phrase: str, **flags: object) -> str:
    with pytest.raises(ReproduceError) as info:
        from_flags(**flags)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message and len(message) < 400 and phrase in message, message
    return message


@pytest.mark.parametrize("torch", ["２.1.0+cu121", "٢.١.٠+cu121", "2.1.0+cu121\n", "2.1.0\n", "2.1.0+cu١٢١",
                                   "2" * 5000 + ".1.0"])
def test_torch_is_an_ascii_release_matched_whole(torch: str) -> None:
    refused("--torch", torch=torch)


@pytest.mark.parametrize(("flag", "value"), [("python", "3.10\n"), ("python", "٣.10"), ("driver", "470.182.03\n"),
                                             ("driver", "４70.182.03"), ("fault", "stub\n")])
def test_other_flags_are_matched_whole(flag: str, value: str) -> None:
    refused(f"--{flag}", torch="2.1.0+cu121", **{flag: value})


@pytest.mark.parametrize("gpu", ["Tesla T4\n[gpu]\nname=Injected", "Tesla T4\x00", "A" * 500, "Tesla\rT4",
                                 "7" * 5000 + " x Tesla T4", "17 x Tesla T4", "0 x Tesla T4"])
def test_gpu_names_that_would_inject_into_the_driver_configuration(gpu: str) -> None:
    refused("--gpu", torch="2.1.0+cu121", driver="535.183.01", gpus=[gpu])


@pytest.mark.parametrize("gpu", ["99999999999999999999 x T4", "٢ x Tesla T4", "２ x Tesla T4", "1000 x T4"])
def test_a_gpu_count_beyond_the_help_or_in_other_digits_is_refused(gpu: str) -> None:
    message = refused("--gpu", torch="2.1.0+cu121", driver="535.183.01", gpus=[gpu])
    assert "1 to 16 GPUs in ASCII digits" in message


@pytest.mark.parametrize("times", [17, 40])
def test_more_gpu_flags_than_the_help_says_are_refused(times: int) -> None:
    message = refused(f"given {times} times", torch="2.1.0+cu121", driver="535.183.01", gpus=["Tesla T4"] * times)
    assert "at most 16" in message
    assert len(from_flags("2.1.0+cu121", driver="535.183.01", gpus=["Tesla T4"] * 16).gpus) == 16


def test_more_than_64_gpus_are_refused() -> None:
    refused("at most 64", torch="2.1.0+cu121", driver="535.183.01", gpus=["16 x Tesla T4"] * 5)
    assert len(from_flags("2.1.0+cu121", driver="535.183.01", gpus=["16 x Tesla T4"] * 4).gpus) == 64


@pytest.mark.parametrize("value", ["0\x00", "0\n1", "GPU-1\rLD_PRELOAD=/x"])
def test_visible_devices_without_nul_or_newline(value: str) -> None:
    refused("--cuda-visible-devices", torch="2.1.0+cu121", cuda_visible_devices=value)


def reported(**changes: object) -> Inferred:
    return replace(from_flags("2.10.0", driver="570.172.08", gpus=["Tesla T4"]), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["Tesla T4\n[gpu]", "X" * 200, ""])
def test_a_reported_gpu_name_is_checked_before_the_driver_configuration(name: str) -> None:
    with pytest.raises(ReproduceError, match="GPU"):
        plan(reported(gpus=(GpuGuess(name),)), OFFLINE, MATRIX.environments, MATRIX.environments[0].base)


def test_more_than_64_reported_gpus_are_refused() -> None:
    with pytest.raises(ReproduceError, match="at most 64"):
        plan(reported(gpus=(GpuGuess("Tesla T4"),) * 65), OFFLINE, MATRIX.environments, MATRIX.environments[0].base)


def test_a_reported_environment_value_is_checked_before_the_container() -> None:
    with pytest.raises(ReproduceError, match="line break"):
        plan(reported(env=(("CUDA_VISIBLE_DEVICES", "0\n1"),)), OFFLINE, MATRIX.environments,
             MATRIX.environments[0].base)


def test_a_reported_uuid_with_a_trailing_newline_is_not_used() -> None:
    uuid = "GPU-12345678-1234-1234-1234-123456789abc"
    r = plan(reported(gpus=(GpuGuess("Tesla T4", uuid=uuid + "\n"),)), OFFLINE, MATRIX.environments,
             MATRIX.environments[0].base)
    assert r.profile is not None and r.profile.gpus[0].uuid != uuid + "\n"
    profiles.render_config(r.profile)


_text = st.one_of(st.text(max_size=30), st.sampled_from(["2.1.0+cu121", "2.10.0", "2.14.1+cu130", "3.10", "3.11",
                                                         "470.182.03", "535.183.01", "stub", "mismatch", "2 x T4",
                                                         "99999999999999999999 x T4", "\u0662 x T4", "16 x A100",
                                                         "\u0662.\u0661.\u0660", "\uff15\uff13\uff15.1.1", ""]))


@given(_text, st.none() | _text, st.lists(_text, max_size=20), st.none() | _text, st.none() | _text,
       st.none() | st.sampled_from(["stub", "mismatch", "cuinit-999", "x"]), st.booleans())
def test_any_flags_give_a_plan_the_consumers_accept_or_one_line(torch: str, driver: str | None, gpus: list[str],
                                                                cvd: str | None, python: str | None,
                                                                fault: str | None, no_gpus: bool) -> None:
    try:
        inferred = from_flags(torch, driver, gpus, cvd, python, no_gpus, fault)
        r = plan(inferred, OFFLINE, MATRIX.environments, MATRIX.environments[0].base)
    except ReproduceError as exc:
        assert "\n" not in exc.message and len(exc.message) < 500, exc.message
        return
    accepts.environment_name(r.environment.name, "environment")
    for key, value in r.scenario.env:
        accepts.env_value(value, key)
    if r.profile is not None:
        text = profiles.render_config(r.profile)
        assert text.count("[gpu]") == len(r.profile.gpus) <= profiles.MAX_GPUS
