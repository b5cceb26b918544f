"""Hostile files end in a result or a located INVALID_INPUT: never a signal, a hang or a traceback.

Each class of hostile FleetConfig, inventory and saved plan runs once in a subprocess (a
SIGSEGV shows there as a negative return code), and the limits' messages and positions are
checked in process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bcfleet.domain.document_limits import (
    FLEETCONFIG_MAX_BYTES,
    INVENTORY_MAX_BYTES,
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    MAX_PROBLEMS,
    MAX_VALUES,
    json_problem,
)
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.input_files import load_json
from bcfleet.reconcile.load import load_fleetconfig, load_fleetconfig_text
from bcfleet.reconcile.saved import read_plan
from tests.support.fleet import run_cli

HEAD = "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"
SECONDS = 300  # a hang detector, not a speed target: the machine running the suite may be busy


def _laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return HEAD + "\n".join(lines) + "\n"


# name -> the bytes of a hostile FleetConfig
HOSTILE_YAML: dict[str, Callable[[], bytes]] = {
    "flow-sequence-100000-deep": lambda: b"[" * 100_000 + b"]" * 100_000,
    "flow-mapping-50000-deep": lambda: b"{a: " * 50_000 + b"1" + b"}" * 50_000,
    "block-sequence-1000000-deep": lambda: b"- " * 1_000_000 + b"1\n",
    "block-mapping-indented-2000-deep": lambda: (
        "".join(" " * i + "a:\n" for i in range(2000)) + " " * 2000 + "b: 1\n"
    ).encode(),
    "billion-laughs": lambda: _laughs().encode(),
    "alias-inside-its-anchor": lambda: (HEAD + "tenants: &a [ *a ]\n").encode(),
    "a-million-aliases": lambda: (
        HEAD + "x: &x {a: 1}\ntenants: [" + ",".join(["*x"] * 1_000_000) + "]\n"
    ).encode(),
    "huge-quoted-scalar": lambda: (HEAD + 'tenants:\n  - id: "' + "x" * 7_000_000 + '"\n').encode(),
    "over-the-size-limit": lambda: (HEAD + "#" + "x" * FLEETCONFIG_MAX_BYTES + "\n").encode(),
    "binary-garbage": lambda: bytes((i * 7919 + 13) % 256 for i in range(200_000)),
    "invalid-utf8": lambda: HEAD.encode() + b'tenants:\n  - id: "\xff\xfe"\n',
    "utf16-with-bom": lambda: (HEAD + "tenants: []\n").encode("utf-16"),
    "byte-order-mark": lambda: ("\ufeff" + HEAD + "tenants:\n  - { id: root }\n").encode(),
    "nul-byte": lambda: (HEAD + "tenants:\n  - id: a\x00b\n").encode(),
    "tab-indentation": lambda: (HEAD + "tenants:\n\t- { id: root }\n").encode(),
    "duplicate-keys": lambda: (HEAD + "tenants: []\ntenants: []\n").encode(),
    "python-object-tag": lambda: (
        HEAD + 'tenants: !!python/object/apply:os.system ["echo owned"]\n'
    ).encode(),
    "anchors-and-aliases": lambda: (
        HEAD + "tenants:\n  - &t { id: root }\n  - *t\n  - <<: *t\n"
    ).encode(),
    "very-long-line": lambda: (
        HEAD + "tenants: [" + ", ".join(f"{{ id: t{i} }}" for i in range(100_000)) + "]\n"
    ).encode(),
    "number-of-5000-digits": lambda: (
        HEAD + "flavors:\n  - { pool: p, name: n, vcpu: 1" + "0" * 5000 + " }\n"
    ).encode(),
    "nan-inf-and-1e400": lambda: (
        HEAD + "flavors:\n  - { pool: p, name: n, vcpu: .nan, memoryGiB: .inf, diskGiB: 1e400 }\n"
    ).encode(),
    "a-million-wrong-items": lambda: (HEAD + "flavors:\n" + "  - 1\n" * 1_000_000).encode(),
    "unique-items-of-objects": lambda: (
        HEAD
        + "pools:\n  - { name: p, kind: vps-host, offeredTo: ["
        + ",".join(f"{{a: {i}}}" for i in range(200_000))
        + "] }\n"
    ).encode(),
    "two-documents": lambda: (HEAD + "---\n" + HEAD).encode(),
}

HOSTILE_JSON: dict[str, Callable[[], bytes]] = {
    "array-100000-deep": lambda: b"[" * 100_000 + b"]" * 100_000,
    "object-100000-deep": lambda: b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "number-1e400": lambda: _inventory("1e400").encode(),
    "integer-10-to-the-30": lambda: _inventory(str(10**30)).encode(),
    "integer-of-5000-digits": lambda: _inventory("9" * 5000).encode(),
    "over-the-size-limit": lambda: b" " * (INVENTORY_MAX_BYTES + 1) + b"{}",
    "binary-garbage": lambda: bytes((i * 7919 + 13) % 256 for i in range(100_000)),
    "invalid-utf8": lambda: b'{"cpus": "\xff"}',
    "byte-order-mark": lambda: ("\ufeff" + _inventory()).encode(),
    "unterminated-escapes": lambda: b'"\\' * 500_000,
    "nan": lambda: _inventory("NaN").encode(),
    "duplicate-keys": lambda: b'{"memoryGiB": 1, "memoryGiB": 2}',
}


def _inventory(memory: str = "256") -> str:
    """An inventory whose memoryGiB is written as ``memory``, verbatim."""
    return (
        '{"cpus": [{"id": 0, "numaNode": 0, "isolated": false}], '
        '"numaNodes": [{"id": 0, "memoryGiB": 128, "hugepages": []}], '
        f'"memoryGiB": {memory}, "diskGiB": 2000, "gpus": []}}'
    )


BIG = 1 << 20  # classes whose files pass 1 MiB run with the slow tests


def _classes(table: dict[str, Callable[[], bytes]]) -> list[Any]:
    """The table's names as parameters; those that make big files are marked slow."""
    return [
        pytest.param(name, marks=[pytest.mark.slow] if len(table[name]()) > BIG else [])
        for name in sorted(table)
    ]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BCFLEET_DEBUG": ""}
    env.pop("BCFLEET_TOKEN", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bcfleet", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=False,
    )
    assert time.monotonic() - started < SECONDS
    return done


def _assert_ended_well(done: subprocess.CompletedProcess[str]) -> None:
    """Exit 0 or 1 (never a signal), no traceback, and an error is INVALID_INPUT, not INTERNAL."""
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    if done.returncode == 1:
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "INVALID_INPUT", error


@pytest.fixture
def fleet_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    Fleet.open(url).close()
    return url


@pytest.fixture(scope="module")
def adopted_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fleet with pool p and host h, made once in process (the subprocess is for the report)."""
    path = tmp_path_factory.mktemp("adopted") / "fleet.db"
    url = f"sqlite:///{path}"
    for args in (
        ["pools", "create", "--tenant", "root", "--name", "p", "--kind", "vps-host"],
        ["hosts", "adopt", "--pool", "p", "--name", "h"],
    ):
        assert run_cli(*args, db=url).exit_code == 0
    return path


@pytest.fixture
def adopted_url(adopted_template: Path, tmp_path: Path) -> str:
    """A copy of the fleet with host h, for one test."""
    copy = tmp_path / "adopted.db"
    shutil.copyfile(adopted_template, copy)
    return f"sqlite:///{copy}"


# ---------------------------------------------------------------------------
# Subprocesses: each hostile class, the way an operator or a CI job runs it


@pytest.mark.parametrize("name", _classes(HOSTILE_YAML))
def test_fleet_validate_ends_on_every_hostile_yaml(name: str, tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(HOSTILE_YAML[name]())
    done = _run(["validate", "-f", str(path), "--json"], tmp_path)
    _assert_ended_well(done)
    if done.returncode == 1:
        errors = json.loads(done.stdout)["error"]["details"]["errors"]
        assert errors and all(e["line"] >= 1 and e["column"] >= 1 for e in errors)


@pytest.mark.parametrize("verb", ["plan", "apply"])
@pytest.mark.parametrize(
    "name", ["flow-sequence-100000-deep", "flow-mapping-50000-deep", "billion-laughs"]
)
def test_fleet_plan_and_apply_end_on_the_documents_that_crashed(
    verb: str, name: str, tmp_path: Path, fleet_url: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(HOSTILE_YAML[name]())
    extra = ["--yes"] if verb == "apply" else []
    done = _run([verb, "-f", str(path), *extra, "--json", "--db", fleet_url], tmp_path)
    _assert_ended_well(done)
    assert done.returncode == 1


@pytest.mark.parametrize("name", _classes(HOSTILE_JSON))
def test_fleet_hosts_report_ends_on_every_hostile_inventory(
    name: str, tmp_path: Path, adopted_url: str
) -> None:
    path = tmp_path / "inventory.json"
    path.write_bytes(HOSTILE_JSON[name]())
    done = _run(
        ["hosts", "report", "--host", "h", "--file", str(path), "--json", "--db", adopted_url],
        tmp_path,
    )
    _assert_ended_well(done)


@pytest.mark.parametrize("name", ["array-100000-deep", "unterminated-escapes", "binary-garbage"])
def test_fleet_apply_of_a_hostile_saved_plan_ends(
    name: str, tmp_path: Path, fleet_url: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(HOSTILE_JSON[name]())
    done = _run(["apply", str(path), "--json", "--db", fleet_url], tmp_path)
    _assert_ended_well(done)
    assert done.returncode == 1


# ---------------------------------------------------------------------------
# In process: each limit names itself and where it was crossed


def _errors(text: str) -> list[dict[str, Any]]:
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig_text(text, file="fleet.yaml")
    errors: list[dict[str, Any]] = caught.value.details["errors"]
    return errors


def test_nesting_past_the_limit_is_located_at_the_first_level_too_many() -> None:
    (error,) = _errors(HEAD + "tenants: " + "[" * 100 + "]" * 100 + "\n")
    assert error["message"] == f"nesting deeper than {MAX_DEPTH} levels"
    # the root mapping is level 1, so the 64th bracket opens level 65
    assert (error["file"], error["line"], error["column"]) == ("fleet.yaml", 3, 10 + 63)


def test_nesting_exactly_at_the_limit_reaches_the_schema() -> None:
    levels = MAX_DEPTH - 1  # inside the root mapping
    (error,) = _errors(HEAD + "tenants: " + "[" * levels + "]" * levels + "\n")
    assert "nesting" not in error["message"]
    assert error["path"] == "$.tenants[0]"


def test_block_nesting_counts_like_flow_nesting() -> None:
    (error,) = _errors("- " * 1000 + "1\n")
    assert error["message"] == f"nesting deeper than {MAX_DEPTH} levels"
    assert (error["line"], error["column"]) == (1, 2 * MAX_DEPTH + 1)


def test_alias_expansion_is_counted_without_expanding() -> None:
    started = time.monotonic()
    (error,) = _errors(_laughs())
    assert time.monotonic() - started < 5
    assert error["message"] == f"aliases expand the document past {MAX_VALUES:,} values"
    assert error["line"] > 3


def test_aliases_within_the_limit_still_work() -> None:
    errors = _errors(HEAD + "tenants:\n  - &t { id: root }\n  - *t\n")
    assert [e["message"] for e in errors] == [
        "duplicate tenant 'root': already declared at $.tenants[0]"
    ]


def test_an_alias_inside_its_own_anchor_is_refused_where_it_is_written() -> None:
    (error,) = _errors(HEAD + "tenants: &a [ *a ]\n")
    assert error["message"] == "alias *a is inside its own anchor"
    assert (error["line"], error["column"]) == (3, 15)


@pytest.mark.parametrize(
    "tag", ["!!python/object/apply:os.system", "!!python/name:os.system", "!custom", "!!set"]
)
def test_tags_beyond_the_core_schema_are_refused_at_their_place(tag: str) -> None:
    errors = _errors(HEAD + f"tenants: {tag} []\n")
    assert any(
        e["message"].startswith("unsupported YAML tag") and (e["line"], e["column"]) == (3, 10)
        for e in errors
    ), errors


def test_duplicate_keys_are_an_error_at_the_second_key_not_last_wins() -> None:
    (error,) = _errors(HEAD + "tenants: []\ntenants: [{id: root}]\n")
    assert error["message"] == "duplicate key 'tenants' (first written at line 3, column 1)"
    assert (error["line"], error["column"]) == (4, 1)


@pytest.mark.parametrize(
    "literal",
    [
        pytest.param("1" + "0" * 5000, id="5001-digits"),
        pytest.param("1" * (MAX_NUMBER_CHARS + 1), id="one-past-the-limit"),
        pytest.param("1.0e+" + "9" * 200, id="long-exponent"),
    ],
)
def test_overlong_numbers_are_refused_before_conversion(literal: str) -> None:
    (error,) = _errors(HEAD + f"flavors:\n  - {{ pool: p, name: n, vcpu: {literal} }}\n")
    assert error["message"].startswith(f"a number written with {len(literal):,} characters")
    assert (error["line"], error["column"]) == (4, 31)


def test_a_tab_is_named_and_located() -> None:
    (error,) = _errors(HEAD + "tenants:\n\t- { id: root }\n")
    assert "a tab (YAML indents with spaces)" in error["message"]
    assert (error["line"], error["column"]) == (4, 1)


def test_the_file_size_limit_reads_no_more_than_it_allows(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(HEAD.encode() + b"#" * FLEETCONFIG_MAX_BYTES)
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig(path)
    (error,) = caught.value.details["errors"]
    assert error["message"] == "the file is larger than 8 MiB, the most a FleetConfig may be"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_file_is_cut_at_the_limit() -> None:
    started = time.monotonic()
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig("/dev/zero")
    assert time.monotonic() - started < 10
    assert "larger than 8 MiB" in caught.value.message
    with pytest.raises(InvalidInputError) as inventory:
        load_json("/dev/zero", limit=INVENTORY_MAX_BYTES, what="host inventory")
    assert "larger than 4 MiB, the most a host inventory may be" in inventory.value.message


def test_a_text_over_the_limit_is_refused_as_well() -> None:
    (error,) = _errors(HEAD + "#" + "é" * (FLEETCONFIG_MAX_BYTES // 2))
    assert "larger than 8 MiB" in error["message"]


def test_invalid_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(HEAD.encode() + b"tenants:\n  - id: \xff\n")
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig(path)
    (error,) = caught.value.details["errors"]
    assert (error["message"], error["line"], error["column"]) == (
        "the file is not UTF-8 text",
        4,
        9,
    )


def test_a_leading_byte_order_mark_is_read_as_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes("\ufeff".encode() + (HEAD + "tenants:\n  - { id: root }\n").encode())
    assert [t.id for t in load_fleetconfig(path).tenants] == ["root"]


def test_a_million_problems_stop_at_the_limit_and_say_so() -> None:
    started = time.monotonic()
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig_text(HEAD + "flavors:\n" + "  - 1\n" * 200_000, file="fleet.yaml")
    assert time.monotonic() - started < 30
    details = caught.value.details
    assert len(details["errors"]) == MAX_PROBLEMS
    assert details["truncated"] is True
    assert caught.value.message.endswith(
        f"stopped after {MAX_PROBLEMS:,} problems; fix these and check again"
    )


def test_unique_items_of_many_objects_is_linear() -> None:
    items = ",".join(f"{{a: {i}}}" for i in range(50_000)) + ", {a: 7}"
    started = time.monotonic()
    errors = _errors(HEAD + f"pools:\n  - {{ name: p, kind: vps-host, offeredTo: [{items}] }}\n")
    assert time.monotonic() - started < 30
    assert any(e["message"] == "{'a': 7} is listed more than once" for e in errors)


def test_a_huge_value_is_quoted_cut_short() -> None:
    (error,) = _errors(HEAD + "tenants:\n  - id: " + "x" * 1_000_000 + "\n")
    assert len(error["message"]) < 200
    assert error["message"].startswith("'xxxx")


# ---------------------------------------------------------------------------
# The JSON guard


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[" * 65 + "]" * 65, (1, 65, "nesting deeper than 64 levels"), id="65-deep"),
        pytest.param("[" * 64 + "]" * 64, None, id="64-deep"),
        pytest.param('["' + "[" * 500 + '"]', None, id="brackets-in-a-string"),
        pytest.param('["\\"' + "[" * 500 + '"]', None, id="escaped-quote-in-a-string"),
        pytest.param('{"a":\n  ' + "{" * 70, (2, 66, "nesting deeper than 64 levels"), id="lines"),
        pytest.param(
            "[" + "1" * 101 + "]",
            (1, 2, "a number written with 101 characters (at most 100)"),
            id="long-number",
        ),
        pytest.param('["' + "1" * 500 + '"]', None, id="digits-in-a-string"),
        pytest.param("]" * 1000 + "[" * 1000, None, id="closers-first-are-left-to-the-reader"),
    ],
)
def test_json_guard(text: str, expected: tuple[int, int, str] | None) -> None:
    found = json_problem(text)
    got = None if found is None else (found.line, found.column, found.message)
    assert got == expected


@pytest.mark.parametrize(
    "text", ['"\\' * 1_000_000, '"' * 2_000_000, '"' + "x" * 2_000_000, "1 " * 1_000_000]
)
def test_json_guard_is_linear_on_pathological_text(text: str) -> None:
    started = time.monotonic()
    json_problem(text)
    assert time.monotonic() - started < 5


def test_a_deep_inventory_file_is_located(tmp_path: Path) -> None:
    path = tmp_path / "inventory.json"
    path.write_text('{"agent": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InvalidInputError) as caught:
        load_json(path, limit=INVENTORY_MAX_BYTES, what="host inventory")
    assert caught.value.message == f"{path}:1:{11 + 63}: nesting deeper than 64 levels"
    assert caught.value.details == {"file": str(path), "line": 1, "column": 74}


def test_a_deep_saved_plan_is_not_a_plan(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInputError) as caught:
        read_plan(path)
    assert "is not a saved plan: nesting deeper than 64 levels (line 1, column 65)" in (
        caught.value.message
    )


def test_a_missing_saved_plan_says_it_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as caught:
        read_plan(tmp_path / "nowhere.json")
    assert caught.value.message.startswith(f"cannot read the plan {tmp_path / 'nowhere.json'}: ")


@pytest.mark.parametrize(
    ("body", "column", "message"),
    [
        pytest.param(b"[" * 100_000 + b"]" * 100_000, 65, "nesting deeper", id="deep"),
        pytest.param(b'{"id": ' + b"7" * 5000 + b"}", 8, "a number written with 5,000", id="long"),
    ],
)
def test_http_bodies_go_through_the_same_json_guard(body: bytes, column: int, message: str) -> None:
    from bcfleet.http.serving import parse_json

    with pytest.raises(InvalidInputError) as caught:
        parse_json(body)
    assert caught.value.details == {"reason": "bad_json", "line": 1, "column": column}
    assert message in caught.value.message
