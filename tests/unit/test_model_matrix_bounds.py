"""matrix.yaml's bounds: aliases counted and expanded before the tree is built, the values a file may hold,
Docker's smallest memory limit, and the number of cells a run takes without confirmation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refenv.errors import MatrixError, RefenvError
from refenv.model import yaml_tree
from refenv.model.matrix import MAX_CELLS, check_size
from refenv.model.matrix_yaml import parse, size_bytes
from tests.unit.matrix_samples import GOOD


def error_of(text: str) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        parse(text, "m.yaml")
    assert "\n" not in str(info.value) and len(str(info.value)) < 400, str(info.value)
    return info.value


def alias_bomb(entries: int, environments: int) -> str:
    """One package list of `entries` names, anchored in the first environment and aliased by the others."""
    packages = "[" + ", ".join(f"p{i}" for i in range(entries)) + "]"
    first = f'  e0: {{torch: "2.14.1", variant: cu130, packages: &pk {packages}}}\n'
    rest = "".join(f'  e{i}: {{torch: "2.14.1", variant: cu130, packages: *pk}}\n' for i in range(1, environments))
    return f"version: 1\nenvironments:\n{first}{rest}hosts:\n  none: {{kind: none}}\nscenarios:\n  gpu: {{gpus: all}}\n"


def test_the_alias_bomb_is_refused_before_it_grows() -> None:
    # 400 million values in 850 KB: a reader that expanded them before counting would never answer (tens of GB),
    # so an answer at all says the bound acted first, on any machine.
    text = alias_bomb(50_000, 8_000)
    err = error_of(text)
    assert err.line == 3 and f"more than {yaml_tree.MAX_NODES:,} values" in err.expected


def test_a_small_list_aliased_until_it_passes_the_bound_names_the_alias() -> None:
    err = error_of(alias_bomb(1_000, 200))  # 1,001 values each time: the 50th alias passes 50,000
    assert err.field == "syntax" and "the alias *pk repeats 1,001 values" in err.expected
    assert err.line is not None and 3 < err.line < 200


def test_nested_aliases_are_refused_before_they_grow() -> None:
    # The "billion laughs": each level aliases the one before ten times (10^9 values in all).
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    err = error_of("\n".join(levels) + "\n")  # an answer at all: expanding 10^9 values first would not end
    assert "aliases expanded" in err.expected


def test_more_aliases_than_the_bound_are_refused() -> None:
    text = GOOD + "run: {timeout_s: &t 240, memory: 6g}\n" + "".join(f"x{i}: *t\n" for i in range(1001))
    assert f"more than {yaml_tree.MAX_ALIASES} aliases" in error_of(text).expected


def test_a_few_aliases_are_read_as_their_values() -> None:
    text = GOOD.replace("  gpu: {gpus: all}", "  gpu: &all {gpus: all}\n  gpu2: *all")
    assert [s.gpus for s in parse(text).scenarios] == ["all", "all", "all"]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 400))
def test_aliases_of_any_size_are_read_or_refused_in_one_line(entries: int, aliases: int) -> None:
    text = alias_bomb(entries, aliases)
    expanded = entries * aliases
    try:
        matrix = parse(text, "m.yaml")
    except MatrixError as exc:
        assert "\n" not in str(exc)
        assert expanded > yaml_tree.MAX_NODES // 2 or aliases > yaml_tree.MAX_ALIASES, str(exc)
        return
    assert expanded <= yaml_tree.MAX_NODES and all(len(e.packages) == entries for e in matrix.environments)


# ---- run.memory --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("memory", ["0", "1", "5m", "6291455", "4096k", "0g"])
def test_memory_below_dockers_minimum_is_refused(memory: str) -> None:
    err = error_of(GOOD + f"run:\n  memory: \"{memory}\"\n")
    assert (err.field, err.line) == ("run.memory", 15) and "6m (6 MiB)" in err.expected


@pytest.mark.parametrize("memory", ["6m", "6291456", "6144k", "1g", "6G"])
def test_memory_from_dockers_minimum_is_taken(memory: str) -> None:
    assert parse(GOOD + f"run:\n  memory: \"{memory}\"\n").run.memory == memory


def test_sizes_are_read_in_dockers_units() -> None:
    assert [size_bytes(t) for t in ("6m", "1g", "512k", "100")] == [6 << 20, 1 << 30, 512 << 10, 100]


# ---- the number of cells -----------------------------------------------------------------------------------

def grid(envs: int, hosts: int, scenarios: int) -> str:
    return ("version: 1\nenvironments:\n" + "".join(f'  e{i}: {{torch: "2.14.1", variant: cu130}}\n'
                                                     for i in range(envs))
            + "hosts:\n" + "".join(f"  h{i}: {{kind: none}}\n" for i in range(hosts))
            + "scenarios:\n" + "".join(f"  s{i}: {{gpus: all}}\n" for i in range(scenarios)))


def test_a_billion_cell_matrix_gets_a_clear_answer() -> None:
    # An answer at all says the cells were counted, not made: a billion of them would not fit in this machine.
    matrix = parse(grid(1000, 1000, 1000))
    with pytest.raises(RefenvError) as info:
        check_size(matrix)
    assert info.value.message == ("1,000,000,000 cells (1000 environments x 1000 hosts x 1000 scenarios): more than "
                                  f"the {MAX_CELLS:,} a run takes without confirmation")
    assert info.value.hint is not None and "--max-cells 1000000000" in info.value.hint
    assert check_size(matrix, 10**9) == 10**9


@given(st.integers(1, 80), st.integers(1, 80), st.integers(1, 80))
def test_any_size_is_counted_or_refused_with_its_number(envs: int, hosts: int, scenarios: int) -> None:
    from refenv.model.matrix import Environment, Host, Matrix, Scenario

    matrix = Matrix("m.yaml", tuple(Environment(f"e{i}", "2.14.1", "cu130") for i in range(envs)),
                    tuple(Host(f"h{i}", "none") for i in range(hosts)),
                    tuple(Scenario(f"s{i}") for i in range(scenarios)))
    total = envs * hosts * scenarios
    try:
        assert check_size(matrix) == total <= MAX_CELLS
    except RefenvError as exc:
        assert total > MAX_CELLS and f"{total:,} cells" in exc.message
