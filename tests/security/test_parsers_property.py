"""Generated FleetConfigs and inventories, mutated every way, end in a result or a located error.

Documents are drawn from the schemas' shapes, then broken: wrong types, missing and extra
keys, huge numbers, NaN and infinities, Unicode and control characters, duplicates, deep
nesting, then written as YAML or JSON and broken again as text and bytes (tabs, tags,
anchors, alias bombs, BOMs, invalid UTF-8, cut files). Each one goes through the functions
`fleet validate` and `fleet hosts report` call, in process, and must end within 10 s in a
value or an InvalidInputError that says where; any other exception fails the test.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.document_limits import INVENTORY_MAX_BYTES
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.input_files import load_json
from bcfleet.reconcile.load import load_fleetconfig, read_fleetconfig

PER_DOCUMENT_SECONDS = 10.0
HEAVY = settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIGHT = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------
# Values: mostly what the schema wants, sometimes anything at all

SLUG = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
HOSTILE_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["\x00", "a\nb", "\t", "\u202e", "\ufeff", "\x1b[31m", "😀", "\u2028", "", " ", "~", "null"]
    ),
)
HOSTILE_NUMBER = st.one_of(
    st.integers(min_value=-10, max_value=10**7),
    st.sampled_from([2**31, 2**63, 10**30, -(10**30), 10**99]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALAR = st.one_of(st.none(), st.booleans(), HOSTILE_NUMBER, HOSTILE_TEXT, SLUG)
ANY_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def good_or_not(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` three times in four, anything otherwise."""
    return st.one_of(good, good, good, ANY_VALUE)


def record(
    required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {k: good_or_not(v) for k, v in required.items()},
        optional={k: good_or_not(v) for k, v in optional.items()},
    )


WHOLE = st.integers(min_value=0, max_value=512)
RATIO = st.floats(min_value=0.1, max_value=100)
SIZES = st.sampled_from(["small", "medium", "large", "xlarge"])
SIZE_SETTING = record({}, {"enabled": st.booleans(), "spares": st.integers(0, 3)})

FLEETCONFIG = st.fixed_dictionaries(
    {
        "apiVersion": good_or_not(st.just("bcfleet.dev/v1")),
        "kind": good_or_not(st.just("FleetConfig")),
    },
    optional={
        "tenants": st.lists(record({"id": SLUG}, {"name": st.text(max_size=10)}), max_size=4),
        "providerAccounts": st.lists(
            record(
                {"name": SLUG, "provider": st.just("hetzner"), "tokenEnv": st.just("HCLOUD_TOKEN")},
                {},
            ),
            max_size=2,
        ),
        "pools": st.lists(
            record(
                {"name": SLUG, "kind": st.sampled_from(["vps-host", "provider"])},
                {
                    "owner": SLUG,
                    "offeredTo": st.lists(SLUG, max_size=3),
                    "gpuModel": st.sampled_from(["L40S", "H100"]),
                    "providerAccount": SLUG,
                    "policy": record(
                        {},
                        {
                            "overcommit": record({}, {"vcpu": RATIO, "memoryGiB": RATIO}),
                            "hostReserve": record({}, {"vcpu": WHOLE, "memoryGiB": WHOLE}),
                        },
                    ),
                },
            ),
            max_size=3,
        ),
        "hosts": st.lists(
            record(
                {"name": SLUG, "pool": SLUG},
                {"labels": st.dictionaries(SLUG, st.text(max_size=5), max_size=2)},
            ),
            max_size=3,
        ),
        "flavors": st.lists(
            record(
                {"pool": SLUG, "name": SLUG, "vcpu": WHOLE, "memoryGiB": WHOLE, "diskGiB": WHOLE},
                {
                    "gpus": st.integers(0, 8),
                    "offerId": SLUG,
                    "placement": record(
                        {},
                        {
                            "numaAffine": st.booleans(),
                            "pinned": st.booleans(),
                            "hugepageSizeBytes": st.sampled_from([2097152, 1073741824]),
                        },
                    ),
                },
            ),
            max_size=4,
        ),
        "quotas": st.lists(
            record({"tenant": SLUG, "pool": SLUG}, {"vcpu": WHOLE, "gpu": WHOLE}), max_size=2
        ),
        "compute": st.lists(
            record(
                {"tenant": SLUG},
                {
                    "serverlessPool": SLUG,
                    "defaultSize": SIZES,
                    "sizes": st.dictionaries(SIZES, SIZE_SETTING, max_size=4),
                },
            ),
            max_size=2,
        ),
    },
)

INVENTORY = st.fixed_dictionaries(
    {
        "cpus": st.lists(
            record(
                {
                    "id": WHOLE,
                    "numaNode": st.one_of(st.none(), st.integers(0, 2)),
                    "isolated": st.booleans(),
                },
                {},
            ),
            max_size=4,
        ),
        "numaNodes": st.lists(
            record(
                {
                    "id": st.integers(0, 2),
                    "memoryGiB": st.floats(0, 1024),
                    "hugepages": st.lists(
                        record(
                            {
                                "sizeBytes": st.sampled_from([2097152, 1073741824]),
                                "total": WHOLE,
                                "free": WHOLE,
                            },
                            {},
                        ),
                        max_size=2,
                    ),
                },
                {},
            ),
            max_size=2,
        ),
        "memoryGiB": good_or_not(st.floats(0, 4096)),
        "diskGiB": good_or_not(WHOLE),
        "gpus": st.lists(
            record(
                {
                    "model": st.text(min_size=1, max_size=8),
                    "pciAddress": st.from_regex(
                        r"0000:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", fullmatch=True
                    ),
                    "numaNode": st.one_of(st.none(), st.integers(0, 2)),
                },
                {},
            ),
            max_size=3,
        ),
    },
    optional={"agent": record({}, {"version": st.text(max_size=5), "hostname": SLUG})},
)

# ---------------------------------------------------------------------------
# Mutations of the tree, of the text and of the bytes


def _containers(value: Any) -> Iterator[dict[str, Any] | list[Any]]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            yield item
            stack.extend(item.values() if isinstance(item, dict) else item)


def _nested(value: Any, depth: int, mapping: bool) -> Any:
    for _ in range(depth):
        value = {"a": value} if mapping else [value]
    return value


def mutate_tree(data: st.DataObject, document: Any) -> None:
    """Up to three changes somewhere in the document: delete, replace, add, duplicate, nest."""
    for _ in range(data.draw(st.integers(0, 3), label="tree mutations")):
        containers = list(_containers(document))
        target = containers[data.draw(st.integers(0, len(containers) - 1))]
        keys: list[Any] = list(target) if isinstance(target, dict) else list(range(len(target)))
        operation = data.draw(st.sampled_from(["delete", "replace", "add", "duplicate", "nest"]))
        if operation == "add" or not keys:
            key = data.draw(st.text(max_size=8)) if isinstance(target, dict) else None
            value = data.draw(ANY_VALUE)
            if isinstance(target, dict):
                target[key] = value
            else:
                target.append(value)
            continue
        key = data.draw(st.sampled_from(keys))
        if operation == "delete":
            del target[key]
        elif operation == "replace":
            target[key] = data.draw(ANY_VALUE)
        elif operation == "duplicate" and isinstance(target, list):
            target.append(json.loads(json.dumps(target[key])))
        elif operation == "nest":
            depth = data.draw(st.integers(1, 90), label="nesting")
            target[key] = _nested(target[key], depth, data.draw(st.booleans()))


def _laughs(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


YAML_SNIPPETS = [
    "\t",
    "x: !!python/object/apply:os.system ['true']\n",
    "y: !!python/name:os.system\n",
    "z: !custom 1\n",
    "&a ",
    "*a ",
    "<<: *a\n",
    "\x00",
    "\u202e",
    "\x1b",
    "\ufeff",
    "'unterminated",
    '"\\x',
    "---\n",
    ": : :\n",
    "? [a]\n",
    "[" * 200,
    "{a: " * 100,
    "- " * 300 + "1\n",
    "9" * 400,
    "n: 1.0e+400\n",
    "s: " + "y" * 20_000 + "\n",
    "%TAG ! tag:evil.example,2000:\n",
    _laughs(8),
    "rec: &r [*r]\n",
]
JSON_SNIPPETS = [
    "[" * 200,
    '{"a":' * 100,
    "9" * 400,
    "1e400",
    "NaN",
    "-Infinity",
    "\x00",
    '"',
    "\\",
    ",",
    "}",
]


def mutate_text(data: st.DataObject, text: str, snippets: list[str]) -> str:
    """Up to two snippets inserted at a line start or anywhere; sometimes a line repeated."""
    for _ in range(data.draw(st.integers(0, 2), label="text mutations")):
        lines = text.splitlines(keepends=True) or [""]
        index = data.draw(st.integers(0, len(lines) - 1))
        if data.draw(st.integers(0, 5)) == 0:
            lines.insert(index, lines[index])  # a repeated line: duplicate keys in block YAML
        else:
            snippet = data.draw(st.sampled_from(snippets))
            at = data.draw(st.integers(0, len(lines[index])))
            lines[index] = lines[index][:at] + snippet + lines[index][at:]
        text = "".join(lines)
    return text


def mutate_bytes(data: st.DataObject, raw: bytes) -> bytes:
    """Sometimes a BOM, an invalid byte, or the file cut short."""
    operation = data.draw(st.sampled_from(["none", "none", "none", "bom", "invalid", "cut"]))
    if operation == "bom":
        return b"\xef\xbb\xbf" + raw
    at = data.draw(st.integers(0, len(raw)))
    if operation == "invalid":
        return raw[:at] + data.draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + raw[at:]
    if operation == "cut":
        return raw[:at]
    return raw


def as_yaml(data: st.DataObject, document: Any) -> str:
    style = data.draw(st.sampled_from(["block", "flow", "json"]))
    if style == "json":
        return json.dumps(document, allow_nan=True, ensure_ascii=data.draw(st.booleans()))
    return yaml.safe_dump(
        document,
        default_flow_style=style == "flow",
        allow_unicode=data.draw(st.booleans()),
        sort_keys=False,
        width=data.draw(st.sampled_from([80, 10_000])),
    )


# ---------------------------------------------------------------------------
# The checks


def _timed(call: Callable[[], Any]) -> Any:
    started = time.monotonic()
    try:
        return call()
    finally:
        elapsed = time.monotonic() - started
        assert elapsed < PER_DOCUMENT_SECONDS, f"took {elapsed:.1f} s"


def _kind(message: str) -> str:
    """A problem's message without its particulars, for hypothesis' statistics."""
    for stage in (
        "YAML syntax",
        "nesting",
        "aliases",
        "unsupported YAML tag",
        "duplicate key",
        "UTF-8",
    ):
        if stage in message:
            return stage
    return "schema or meaning"


def check_fleetconfig(data: st.DataObject, folder: Path) -> None:
    document = data.draw(FLEETCONFIG, label="document")
    mutate_tree(data, document)
    text = mutate_text(data, as_yaml(data, document), YAML_SNIPPETS)
    raw = mutate_bytes(data, text.encode("utf-8", "surrogatepass"))
    path = folder / "fleet.yaml"
    path.write_bytes(raw)
    decoded = raw.decode("utf-8", "replace")
    lines = 1 + sum(decoded.count(brk) for brk in ("\n", "\r", "\x85", "\u2028", "\u2029"))
    try:
        desired = _timed(lambda: load_fleetconfig(path))
    except InvalidInputError as error:
        errors = error.details["errors"]
        assert errors, error.message
        event(f"refused: {_kind(errors[0]['message'])}")
        for found in errors:
            assert found["file"] == str(path)
            assert 1 <= found["line"] <= lines, found
            assert found["column"] >= 1, found
            assert found["path"].startswith("$"), found
            assert found["message"], found
    else:
        declared = [
            spec.address
            for group in (
                desired.tenants,
                desired.provider_accounts,
                desired.pools,
                desired.offers,
                desired.hosts,
                desired.flavors,
                desired.quotas,
                desired.compute,
            )  # fmt: skip
            for spec in group
        ]
        assert len(set(declared)) == len(declared) == desired.object_count, declared
        text = read_fleetconfig(path)  # the digest names exactly the text read, BOM dropped
        assert desired.digest == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert load_fleetconfig(path) == desired  # the same file, the same fleet
        event("valid")


def check_inventory(data: st.DataObject, folder: Path, fleet: Fleet) -> None:
    document = data.draw(INVENTORY, label="inventory")
    mutate_tree(data, document)
    text = json.dumps(document, allow_nan=True, ensure_ascii=data.draw(st.booleans()))
    raw = mutate_bytes(
        data, mutate_text(data, text, JSON_SNIPPETS).encode("utf-8", "surrogatepass")
    )
    path = folder / "inventory.json"
    path.write_bytes(raw)

    def report() -> Any:
        inventory = load_json(path, limit=INVENTORY_MAX_BYTES, what="host inventory")
        return fleet.api.hosts.report(LOCAL_OPERATOR, tenant_id=None, host="h", inventory=inventory)

    try:
        host = _timed(report)
    except InvalidInputError as error:
        details = error.details
        event("refused: " + ("checks" if "problems" in details else "reading"))
        if "problems" in details:
            assert details["problems"], error.message
            assert all(p["path"].startswith("$") for p in details["problems"]), details
        else:
            assert details["file"] == str(path), details
            assert details["line"] >= 1 and details["column"] >= 1, details
    else:
        assert host["name"] == "h"
        event("stored")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("documents")


@pytest.fixture(scope="module")
def host_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    url = f"sqlite:///{tmp_path_factory.mktemp('fleet') / 'fleet.db'}"
    fleet = Fleet.open(url)
    fleet.api.pools.create(LOCAL_OPERATOR, tenant_id="root", name="p", kind="vps-host")
    fleet.api.hosts.adopt(LOCAL_OPERATOR, tenant_id="root", pool="p", name="h")
    yield fleet
    fleet.close()


@LIGHT
@given(data=st.data())
def test_generated_fleetconfigs_end_in_a_result_or_a_located_error(
    data: st.DataObject, folder: Path
) -> None:
    check_fleetconfig(data, folder)


@LIGHT
@given(data=st.data())
def test_generated_inventories_end_in_a_result_or_a_located_error(
    data: st.DataObject, folder: Path, host_fleet: Fleet
) -> None:
    check_inventory(data, folder, host_fleet)


@pytest.mark.full
@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_two_thousand_fleetconfigs_end_in_a_result_or_a_located_error(
    data: st.DataObject, folder: Path
) -> None:
    """test_generated_fleetconfigs_…, 2,000 examples instead of 120 (scripts/check --full)."""
    check_fleetconfig(data, folder)


@pytest.mark.full
@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_two_thousand_inventories_end_in_a_result_or_a_located_error(
    data: st.DataObject, folder: Path, host_fleet: Fleet
) -> None:
    """test_generated_inventories_…, 2,000 examples instead of 120 (scripts/check --full)."""
    check_inventory(data, folder, host_fleet)
