"""matrix.yaml under hostile and broken input: one line naming file, line and field, or a valid matrix.

Each case of issue 14 on this surface has a test here; the properties at the end generate the rest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refenv.builder import baseimage
from refenv.builder.wheelhouse import download_args
from refenv.errors import BuildError, MatrixError, RefenvError
from refenv.model import accepts
from refenv.model.matrix import Bootstrap, Environment, Matrix, Scenario
from refenv.model.matrix_yaml import load, parse
from refenv.run.containers import container_env
from tests.unit.matrix_samples import GOOD


def error_of(text: str) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        parse(text, "m.yaml")
    err = info.value
    assert "\n" not in str(err) and len(str(err)) < 400, str(err)
    assert "Node(" not in str(err)
    return err


def env_line(key: str, value: str) -> str:
    """GOOD with one more line in the cu130 environment."""
    return GOOD.replace("    variant: cu130\n", f"    variant: cu130\n    {key}: {value}\n")


# ---- reading the file ----------------------------------------------------------------------------------

def test_a_device_is_refused_without_reading_it_whole() -> None:
    with pytest.raises(MatrixError) as info:
        load("/dev/zero")  # endless: an answer at all says the read was bounded
    err = info.value
    assert "longer than" in err.expected


def test_non_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(GOOD.replace("  none: {kind: none}", "  none: {kind: none} # caf\xe9").encode("latin-1"))
    with pytest.raises(MatrixError) as info:
        load(path)
    err = info.value
    assert err.line == 8 and "not UTF-8" in err.expected


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\x7f", "\x9b"])
def test_control_characters_name_their_line(char: str) -> None:
    err = error_of(GOOD.replace("variant: cu130", f"variant: cu130{char}"))
    assert err.line == 5 and "control character" in err.expected


def test_twenty_thousand_nested_brackets() -> None:
    err = error_of(GOOD + "extra: " + "[" * 20_000 + "]" * 20_000 + "\n")
    assert err.line == 14 and "nest deeper" in err.expected


def test_deep_block_nesting_is_one_line() -> None:
    nested = "".join(f"{'  ' * i}k{i}:\n" for i in range(3000))
    err = error_of(nested)
    assert err.field in ("syntax", "file", "k0")


# ---- numbers -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1e400", "7" * 5000, "0x10", "true", "\"240\""])
def test_timeout_must_be_a_finite_number(value: str) -> None:
    err = error_of(GOOD + f"run:\n  timeout_s: {value}\n")
    assert err.field == "run.timeout_s" and err.line == 15 and "expected a number from 1 to 86400" in err.expected


@pytest.mark.parametrize(("key", "value"), [("pids", "1e12"), ("parallel", "-1"), ("pids", "99999999999999999999")])
def test_counts_are_bounded(key: str, value: str) -> None:
    assert error_of(GOOD + f"run:\n  {key}: {value}\n").field == f"run.{key}"


@pytest.mark.parametrize("torch", ['"٢.١٤.١"', '"２.14.1"', '"2.14.1\\n"', '"2.14.1 "'])
def test_torch_versions_are_ascii_and_whole(torch: str) -> None:
    err = error_of(GOOD.replace('torch: "2.14.1"', f"torch: {torch}"))
    assert err.field == "environments.cu130.torch"


@pytest.mark.parametrize(("key", "value", "field"), [
    ("python", '"3.11\\n"', "environments.cu130.python"),
    ("variant", '"cu130\\n"', "environments.cu130.variant"),
])
def test_a_trailing_newline_does_not_pass(key: str, value: str, field: str) -> None:
    text = GOOD.replace("    variant: cu130\n", "") if key == "variant" else GOOD
    assert error_of(env_line(key, value) if key != "variant" else text.replace(
        '    torch: "2.14.1"\n', f'    torch: "2.14.1"\n    variant: {value}\n')).field == field


def test_gpus_none_with_a_newline_is_refused() -> None:
    assert error_of(GOOD.replace("gpu: {gpus: all}", 'gpu: {gpus: "none\\n"}')).field == "scenarios.gpu.gpus"


def test_memory_with_a_newline_is_refused() -> None:
    assert error_of(GOOD + 'run:\n  memory: "6g\\n"\n').field == "run.memory"


# ---- names ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Torch-UPPER", "torch-", "a..b", "-torch", "t" * 300, '"torch\\n"', "a_-b"])
def test_environment_names_docker_cannot_use_are_refused(name: str) -> None:
    err = error_of(GOOD.replace("  cu130:\n", f"  {name}:\n"))
    # The entry's own key path and the key's own line (not the next one), as for any other field.
    assert err.field.startswith("environments.") and err.line == 3
    assert "bad name" in err.expected and "Docker image name" in err.expected
    if len(name) < 60 and name.isprintable() and '"' not in name:
        assert err.field == f"environments.{name}"


def test_a_bad_host_name_is_reported_on_its_own_line() -> None:
    err = error_of(GOOD.replace("  none: {kind: none}", '  "bad name":\n    kind: none'))
    assert err.line == 8 and err.field == "hosts.bad name" and "'bad name'" in err.expected


@pytest.mark.parametrize(("section", "old"), [("environments", "  cu130:\n"), ("hosts", "  none: {kind: none}"),
                                              ("scenarios", "  gpu: {gpus: all}")])
def test_every_bad_name_names_its_section_entry_and_line(section: str, old: str) -> None:
    new = "  '*':\n" if section == "environments" else old.replace(old.split(":", maxsplit=1)[0], "  '*'")
    err = error_of(GOOD.replace(old, new))
    line = next(i for i, text in enumerate(GOOD.replace(old, new).splitlines(), 1) if text.startswith("  '*'"))
    assert (err.field, err.line) == (f"{section}.*", line), str(err)
    assert str(err).startswith(f"m.yaml:{line}: {section}.*: bad name: '*' is not allowed; allowed: ")


def test_a_top_level_error_names_a_field() -> None:
    err = error_of("- just\n- a list\n")
    assert err.field == "file" and "got a list" in err.expected


def test_errors_show_values_not_yaml_nodes() -> None:
    err = error_of(GOOD.replace('torch: "2.14.1"', "torch: [2, 14]"))
    assert "got a list" in err.expected


def test_a_5000_digit_value_is_not_echoed_whole() -> None:
    err = error_of(GOOD.replace('torch: "2.14.1"', f'torch: "{"7" * 5000}"'))
    assert len(str(err)) < 300


# ---- what reaches pip, debootstrap and Docker ----------------------------------------------------------

@pytest.mark.parametrize("package", ["-r/etc/passwd", "--extra-index-url=http://evil.example/simple",
                                     "numpy @ https://evil.example/numpy.whl", "numpy; os_name=='nt'", "../x",
                                     "numpy\\n-r/etc/passwd"])
def test_packages_are_requirements_not_pip_options(package: str) -> None:
    err = error_of(env_line("packages", f'["{package}"]'))
    assert err.field == "environments.cu130.packages[0]" and err.line == 6


@pytest.mark.parametrize("package", ["numpy", "numpy>=1.26,<3", "einops==0.8.0", "Jinja2[i18n]>=3.1", "a.b_c-d"])
def test_real_requirements_pass(package: str) -> None:
    assert parse(env_line("packages", f'["{package}"]')).environments[0].packages == (package,)


@pytest.mark.parametrize(("key", "value"), [("suite", "../../../../tmp/x"), ("suite", "--help"), ("suite", "Bookworm"),
                                            ("mirror", "--keyring=/x"), ("mirror", "file:///etc"),
                                            ("mirror", "http://deb.debian.org/debian --foo"),
                                            ("packages", "[--foo]"), ("packages", "['a b']")])
def test_bootstrap_values_are_checked_before_debootstrap(key: str, value: str) -> None:
    err = error_of(GOOD + f"base:\n  bootstrap:\n    {key}: {value}\n")
    assert err.field.startswith(f"base.bootstrap.{key}")


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://x.example/simple", "--index-url=http://x", "http://",
                                 "https://exa mple.com/simple"])
def test_index_url_is_an_http_url(url: str) -> None:
    assert error_of(env_line("index_url", f'"{url}"')).field == "environments.cu130.index_url"


@pytest.mark.parametrize("image", ["--privileged", "UPPER/case", "debian:bookworm slim", "a" * 300, "debian:\\n"])
def test_base_image_is_an_image_reference(image: str) -> None:
    assert error_of(GOOD + f'base:\n  image: "{image}"\n').field == "base.image"


@pytest.mark.parametrize("image", ["debian:bookworm-slim", "registry.example:5000/ns/python:3.11",
                                   "python@sha256:" + "a" * 64, "localhost/refenv/base"])
def test_real_image_references_pass(image: str) -> None:
    assert parse(GOOD + f'base:\n  image: "{image}"\n').environments[0].base.image == image


@pytest.mark.parametrize("value", ['"0\\x00"', '"0\\n1"', '"0\\r"'])
def test_scenario_values_without_nul_or_newline(value: str) -> None:
    err = error_of(GOOD.replace('env: {CUDA_VISIBLE_DEVICES: ""}', f"env: {{CUDA_VISIBLE_DEVICES: {value}}}"))
    assert err.field == "scenarios.hidden.env.CUDA_VISIBLE_DEVICES"


def test_the_container_environment_refuses_nul_and_newline_from_any_scenario() -> None:
    for value in ("0\x00", "GPU-1\nLD_PRELOAD=/x"):
        with pytest.raises(RefenvError, match="NUL, line break"):
            container_env(Scenario("s", "all", (("CUDA_VISIBLE_DEVICES", value),)), "all")


def test_pip_reads_every_requirement_after_the_end_of_options() -> None:
    args = download_args(Environment("e", "2.14.1", "cu130", packages=("numpy",)))
    assert args[args.index("--") + 1:] == ["torch==2.14.1", "nvidia-ml-py", "numpy"]
    with pytest.raises(RefenvError, match="requirement"):
        download_args(Environment("e", "2.14.1", "cu130", packages=("-r/etc/passwd",)))
    with pytest.raises(RefenvError, match="index_url"):
        download_args(Environment("e", "2.14.1", "cu130", index_url="--trusted-host=x"))


@pytest.mark.parametrize("boot", [Bootstrap(suite="--help"), Bootstrap(suite="../../x"), Bootstrap(mirror="-x"),
                                  Bootstrap(packages=("python3", "--foo"))])
def test_debootstrap_never_sees_an_unchecked_recipe(boot: Bootstrap) -> None:
    with pytest.raises(BuildError, match="refusing to bootstrap"):
        baseimage.check_recipe(boot)


# ---- properties ----------------------------------------------------------------------------------------

def _outcome(text: str) -> Matrix | MatrixError:
    try:
        return parse(text, "m.yaml")
    except MatrixError as exc:
        assert "\n" not in str(exc) and "Node(" not in str(exc) and len(str(exc)) < 600, str(exc)
        return exc


_LINES = GOOD.splitlines(keepends=True)


@given(st.integers(0, len(_LINES) - 1), st.text(max_size=40))
def test_any_line_replaced_gives_a_matrix_or_one_line(index: int, replacement: str) -> None:
    _outcome("".join(_LINES[:index]) + replacement + "\n" + "".join(_LINES[index + 1:]))


@given(st.integers(0, len(GOOD)), st.text(max_size=20))
def test_any_insertion_gives_a_matrix_or_one_line(at: int, inserted: str) -> None:
    _outcome(GOOD[:at] + inserted + GOOD[at:])


_values = st.one_of(st.text(max_size=30), st.integers().map(str), st.floats().map(str),
                    st.sampled_from([".nan", ".inf", "1e400", "[", "{", "~", "&a", "*a", "!!python/name:os.system",
                                     "'\\x00'", "\"\\n\"", "0x1F", "٣", "--help"]))


@given(st.sampled_from(["torch", "variant", "python", "packages", "index_url"]), _values)
def test_environment_fields_take_any_value(key: str, value: str) -> None:
    result = _outcome(env_line(key, value))
    if isinstance(result, Matrix):
        env = result.environments[0]
        assert all(accepts.REQUIREMENT_RE.fullmatch(p) for p in env.packages)
        assert env.index_url is None or env.index_url.startswith(("http://", "https://"))
        assert env.python.isascii() and env.torch.isascii()


@given(st.sampled_from(["timeout_s", "memory", "pids", "parallel", "probes", "memory_check"]), _values)
def test_run_settings_take_any_value(key: str, value: str) -> None:
    result = _outcome(GOOD + f"run:\n  {key}: {value}\n")
    if isinstance(result, Matrix):
        assert 1 <= result.run.timeout_s <= 86_400


@given(st.text(max_size=80))
def test_any_environment_name(name: str) -> None:
    result = _outcome(GOOD.replace("  cu130:\n", f"  {name}:\n"))
    if isinstance(result, Matrix):
        assert all(accepts.ENV_NAME_RE.fullmatch(e.name) and len(e.name) <= 64 for e in result.environments)
