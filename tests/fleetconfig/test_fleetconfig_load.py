"""FleetConfig loading: problems point at file:line:column and a JSON path; defaults never diff."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bcfleet.domain.compute_settings import ComputeSettings, SizeSetting, credits_table
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.shapes import PlacementPolicy
from bcfleet.errors import InvalidInputError
from bcfleet.reconcile.load import load_fleetconfig, load_fleetconfig_text
from bcfleet.reconcile.model import DesiredFleet, Overcommit
from bcfleet.reconcile.schema import _validator, fleetconfig_schema
from bcfleet.reconcile.yamldoc import json_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fleet.example.yaml"
HEAD = "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"


def errors_of(text: str, file: str = "fleet.yaml") -> list[dict[str, Any]]:
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig_text(text, file=file)
    errors: list[dict[str, Any]] = caught.value.details["errors"]
    return errors


def doc(body: str) -> str:
    return HEAD + textwrap.dedent(body)


# ---------------------------------------------------------------------------
# The example and the schema


def test_the_example_validates_against_the_schema_and_loads() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    Draft202012Validator(fleetconfig_schema()).validate(data)
    fleet = load_fleetconfig(EXAMPLE)
    assert fleet.warnings == ()
    assert {t.id for t in fleet.tenants} == {"root", "acme"}
    assert len(fleet.digest) == 64


def test_the_example_uses_every_section_and_names_its_schema() -> None:
    text = EXAMPLE.read_text()
    data = yaml.safe_load(text)
    assert set(data) == set(fleetconfig_schema()["properties"])
    assert text.startswith("# yaml-language-server: $schema=./schemas/fleetconfig.schema.json")
    assert (ROOT / "schemas" / "fleetconfig.schema.json").is_file()


def test_the_schema_is_valid_2020_12() -> None:
    schema = fleetconfig_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _objects_of(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += _objects_of(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects_of(value)
    return found


def test_every_object_in_the_schema_closes_its_fields() -> None:
    for obj in _objects_of(fleetconfig_schema()):
        assert "additionalProperties" in obj, obj.get("properties", obj)


# ---------------------------------------------------------------------------
# Broken documents: where and why


BROKEN = [
    pytest.param(
        doc("flavors:\n  - { pool: a, name: b\n"),
        5,
        1,
        "$",
        "YAML syntax error",
        id="unclosed-flow-mapping",
    ),
    pytest.param(HEAD + "tenants:\n\t- {id: acme}\n", 4, 1, "$", "tab", id="tab-indentation"),
    pytest.param(
        HEAD + "kind: FleetConfig\n", 3, 1, "$.kind", "duplicate key 'kind'", id="duplicate-key"
    ),
    pytest.param(
        doc("tenants:\n  - {id: acme, id: acme2}\n"),
        4,
        16,
        "$.tenants[0].id",
        "duplicate key 'id' (first written at line 4, column 6)",
        id="duplicate-key-in-flow-mapping",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            flavors:
              - {pool: p, name: a, vcpus: 2, vcpu: 2, memoryGiB: 4, diskGiB: 1}
            """
        ),
        5,
        24,
        "$.flavors[0].vcpus",
        "unknown field 'vcpus'; did you mean 'vcpu'?",
        id="unknown-field-suggests-nearest",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            flavors:
              - {pool: p, name: a, vcpu: two, memoryGiB: 4, diskGiB: 1}
            """
        ),
        5,
        30,
        "$.flavors[0].vcpu",
        "expected an integer, got a string ('two')",
        id="wrong-type",
    ),
    pytest.param(
        doc("pools:\n  - {name: p, kind: vps-hst}\n"),
        4,
        21,
        "$.pools[0].kind",
        "did you mean 'vps-host'?",
        id="bad-enum-suggests-nearest",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            flavors:
              - pool: p
                name: a
                vcpu: 2
                memoryGiB: 4
            """
        ),
        5,
        5,
        "$.flavors[0]",
        "missing required field 'diskGiB'",
        id="missing-required-field",
    ),
    pytest.param(
        "apiVersion: bcfleet.dev/v2\nkind: FleetConfig\n",
        1,
        13,
        "$.apiVersion",
        "expected 'bcfleet.dev/v1'",
        id="wrong-api-version",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: vps-fra, kind: vps-host}]
            flavors:
              - {pool: vps-fre, name: a, vcpu: 2, memoryGiB: 4, diskGiB: 1}
            """
        ),
        5,
        12,
        "$.flavors[0].pool",
        "unknown pool 'vps-fre'; did you mean 'vps-fra'?",
        id="dangling-flavor-pool",
    ),
    pytest.param(
        doc(
            """\
            tenants: [{id: acme}]
            pools: [{name: p, kind: vps-host, offeredTo: [acme]}]
            quotas: [{tenant: acne, pool: p, vcpu: 1}]
            """
        ),
        5,
        19,
        "$.quotas[0].tenant",
        "unknown tenant 'acne'; did you mean 'acme'?",
        id="dangling-quota-tenant",
    ),
    pytest.param(
        doc(
            """\
            providerAccounts: [{name: hz, provider: hetzner, tokenEnv: HCLOUD_TOKEN}]
            pools: [{name: fsn, kind: provider, providerAccount: hz}]
            flavors:
              - {pool: fsn, name: cx23, vcpu: 2, memoryGiB: 4, diskGiB: 40}
            """
        ),
        6,
        5,
        "$.flavors[0]",
        "flavor 'cx23' of provider pool 'fsn' needs an offerId",
        id="provider-flavor-without-offer",
    ),
    pytest.param(
        doc("pools:\n  - {name: fsn, kind: provider}\n"),
        4,
        5,
        "$.pools[0]",
        "missing required field 'providerAccount'",
        id="provider-pool-without-account",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            flavors:
              - {pool: p, name: a, vcpu: 2, memoryGiB: 4, diskGiB: 1}
              - {pool: p, name: a, vcpu: 4, memoryGiB: 8, diskGiB: 1}
            """
        ),
        6,
        21,
        "$.flavors[1].name",
        "duplicate flavor 'a' in pool 'p': already declared at $.flavors[0]",
        id="duplicate-flavor-in-pool",
    ),
    pytest.param(
        doc(
            """\
            tenants: [{id: acme}]
            pools: [{name: p, kind: vps-host}]
            compute:
              - tenant: acme
                defaultSize: large
                sizes: {medium: {}, large: {enabled: false}}
            """
        ),
        7,
        18,
        "$.compute[0].defaultSize",
        "Only enabled sizes can be the default size: turn Large on first.",
        id="default-size-not-enabled",
    ),
    pytest.param(
        doc(
            """\
            tenants: [{id: acme}]
            compute:
              - tenant: acme
                sizes: {medium: {enabled: false}}
            """
        ),
        6,
        31,
        "$.compute[0].sizes.medium.enabled",
        "Medium is turned off and no default size is chosen",
        id="medium-off-without-default",
    ),
    pytest.param(
        doc(
            """\
            tenants: [{id: acme}]
            compute:
              - {tenant: acme, sizes: {small: {}, huge: {}}}
            """
        ),
        5,
        39,
        "$.compute[0].sizes.huge",
        "unknown field 'huge'",
        id="unknown-size",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            hosts:
              - {name: h1, pool: p, labels: {bc.dev/cap.instance.placement: true}}
            """
        ),
        5,
        65,
        '$.hosts[0].labels["bc.dev/cap.instance.placement"]',
        "expected a string, got a boolean (true)",
        id="label-value-must-be-quoted",
    ),
    pytest.param(
        HEAD + "---\nkind: FleetConfig\n",
        3,
        1,
        "$",
        "expected a single document",
        id="two-documents",
    ),
    pytest.param("", 1, 1, "$", "the document is empty", id="empty-document"),
    pytest.param("- a\n- b\n", 1, 1, "$", "expected an object, got an array", id="not-a-mapping"),
    pytest.param(
        HEAD + "tenants:\n  - {1: x}\n",
        4,
        6,
        "$.tenants[0]",
        "a key must be a string",
        id="number-key",
    ),
    pytest.param(
        HEAD + "x: &a {id: t}\ntenants:\n  - {<<: *a}\n",
        5,
        6,
        "$.tenants[0]",
        "merge keys",
        id="merge-key",
    ),
    pytest.param(
        doc(
            "tenants: [{id: acme}]\n"
            "pools:\n  - {name: p, kind: vps-host, offeredTo: [acme, acme]}\n"
        ),
        5,
        49,
        "$.pools[0].offeredTo[1]",
        "'acme' is listed more than once",
        id="offered-twice",
    ),
    pytest.param(
        doc("tenants: [{id: Acme_Corp}]\n"),
        3,
        16,
        "$.tenants[0].id",
        "'Acme_Corp' is not allowed here: use 1-63 lower-case letters, digits or '-'",
        id="bad-tenant-id",
    ),
    pytest.param(
        doc(
            "pools:\n  - {name: p, kind: vps-host}\n"
            "hosts:\n  - {name: h, pool: p, tenantControled: true}\n"
        ),
        6,
        24,
        "$.hosts[0].tenantControled",
        "did you mean 'tenantControlled'?",
        id="misspelt-host-field",
    ),
    pytest.param(
        doc("pools:\n  - {name: p, kind: vps-host, policy: {overcommit: {vcpu: .inf}}}\n"),
        4,
        59,
        "$.pools[0].policy.overcommit.vcpu",
        "expected a finite number, got inf",
        id="overcommit-must-be-finite",
    ),
    pytest.param(
        doc(
            """\
            pools: [{name: p, kind: vps-host}]
            flavors:
              - {pool: p, name: a, vcpu: 2, memoryGiB: 4, diskGiB: 1,
                 placement: {hugepageSizeBytes: 3000000}}
            """
        ),
        6,
        37,
        "$.flavors[0].placement.hugepageSizeBytes",
        "3000000 is not a power of two from 4 KiB to 1 TiB",
        id="huge-page-size-not-a-power-of-two",
    ),
    pytest.param(
        doc("pools: [{name: Vps_Fra, kind: vps-host}]\n"),
        3,
        16,
        "$.pools[0].name",
        "'Vps_Fra' is not allowed here: use 1-63 lower-case letters",
        id="pool-name-is-lower-case",
    ),
    pytest.param(
        doc("tenants: [{id: !!python/object:os.system x}]\n"),
        3,
        16,
        "$.tenants[0].id",
        "unsupported YAML tag",
        id="python-tag",
    ),
]


@pytest.mark.parametrize(("text", "line", "column", "path", "message"), BROKEN)
def test_a_broken_document_points_at_the_problem(
    text: str, line: int, column: int, path: str, message: str
) -> None:
    errors = errors_of(text)
    matching = [e for e in errors if e["path"] == path and message in e["message"]]
    assert matching, errors
    assert (matching[0]["line"], matching[0]["column"]) == (line, column), matching[0]
    assert matching[0]["file"] == "fleet.yaml"


def test_the_loader_validates_exactly_what_the_shipped_schema_says() -> None:
    """The loader checks an inlined copy of the schema for speed; it must agree with the file."""
    shipped = Draft202012Validator(fleetconfig_schema())
    for text in [EXAMPLE.read_text(), *(p.values[0] for p in BROKEN)]:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            continue

        def found(validator: Draft202012Validator, data: Any = data) -> list[tuple[str, str]]:
            errors = validator.iter_errors(data)
            return sorted((json_path(tuple(e.absolute_path)), str(e.validator)) for e in errors)

        assert found(_validator()) == found(shipped), text


def test_every_error_is_reported_at_once_in_document_order() -> None:
    text = doc(
        """\
        pools:
          - {name: p, kind: vps-hst}
        flavors:
          - {pool: p, name: a, vcpu: 0, memoryGiB: 4, diskGiB: 1, colour: red}
        """
    )
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig_text(text, file="fleet.yaml")
    errors = caught.value.details["errors"]
    assert [(e["line"], e["path"]) for e in errors] == [
        (4, "$.pools[0].kind"),
        (6, "$.flavors[0].vcpu"),
        (6, "$.flavors[0].colour"),
    ]
    lines = caught.value.message.splitlines()
    assert lines[0] == (
        "fleet.yaml:4:21: 'vps-hst' is not one of 'vps-host', 'provider'; "
        "did you mean 'vps-host'? [$.pools[0].kind]"
    )
    assert all(line.startswith("fleet.yaml:") for line in lines)
    assert caught.value.code == "INVALID_INPUT"


def test_meaning_errors_are_collected_together() -> None:
    text = doc(
        """\
        pools:
          - {name: p, kind: vps-host, owner: nobody, providerAccount: hz}
        hosts:
          - {name: h, pool: q}
        """
    )
    paths = {e["path"] for e in errors_of(text)}
    assert paths == {"$.pools[0].owner", "$.pools[0].providerAccount", "$.hosts[0].pool"}


def test_a_missing_file_is_an_invalid_input_with_a_location(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig(missing)
    error = caught.value.details["errors"][0]
    assert (error["file"], error["line"], error["column"]) == (str(missing), 1, 1)


def test_bytes_that_are_not_utf8_point_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(HEAD.encode() + b"tenants: [{id: \xff}]\n")
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig(path)
    error = caught.value.details["errors"][0]
    assert (error["line"], error["column"]) == (3, 16)
    assert "UTF-8" in error["message"]


def test_json_paths_quote_keys_that_are_not_identifiers() -> None:
    assert json_path(("flavors", 2, "vcpu")) == "$.flavors[2].vcpu"
    assert json_path(("hosts", 0, "labels", "bc.dev/x")) == '$.hosts[0].labels["bc.dev/x"]'
    assert json_path(()) == "$"


# ---------------------------------------------------------------------------
# Normalization: what is left out equals its default


MINIMAL = doc(
    """\
    tenants: [{id: acme}]
    pools: [{name: p, kind: vps-host}]
    hosts: [{name: h, pool: p}]
    flavors: [{pool: p, name: a, vcpu: 2, memoryGiB: 4, diskGiB: 40}]
    compute: [{tenant: acme, sizes: {xlarge: {enabled: false}}}]
    """
)
EXPLICIT = doc(
    """\
    tenants: [{id: acme, name: acme}]
    pools:
      - name: p
        kind: vps-host
        owner: root
        offeredTo: []
        policy:
          overcommit: {vcpu: 1, memoryGiB: 1.0, diskGiB: 1}
          hostReserve: {vcpu: 2, memoryGiB: 8, diskGiB: 100}
    hosts: [{name: h, pool: p, labels: {}, tenantControlled: false}]
    flavors:
      - {pool: p, name: a, vcpu: 2.0, memoryGiB: 4, diskGiB: 40, gpus: 0,
         placement: {numaAffine: false, pinned: false}}
    compute:
      - tenant: acme
        sizes:
          small: {enabled: true}
          medium: {enabled: true, spares: 0}
          large: {}
          xlarge: {enabled: false, spares: 0}
    """
)


def test_defaults_left_out_equal_defaults_written_out() -> None:
    assert load_fleetconfig_text(MINIMAL) == load_fleetconfig_text(EXPLICIT)


def test_defaults_are_filled_in() -> None:
    fleet = load_fleetconfig_text(MINIMAL)
    pool = fleet.pools[0]
    assert pool.owner == "root"
    assert pool.overcommit == Overcommit(1.0, 1.0, 1.0)
    assert pool.host_reserve == HostReserve(vcpu=2, memory_gib=8, disk_gib=100)
    assert fleet.flavors[0].gpus == 0 and fleet.flavors[0].placement is None
    assert fleet.tenants[0].name == "acme"
    assert fleet.compute[0].sizes == (
        SizeSetting("small", enabled=True, spares=0),
        SizeSetting("medium", enabled=True, spares=0),
        SizeSetting("large", enabled=True, spares=0),
        SizeSetting("xlarge", enabled=False, spares=0),
    )


def test_compute_settings_without_sizes_keep_every_size_on() -> None:
    fleet = load_fleetconfig_text(doc("tenants: [{id: acme}]\ncompute: [{tenant: acme}]\n"))
    assert fleet.compute[0].sizes == ComputeSettings().sizes
    assert all(s.enabled and s.spares == 0 for s in fleet.compute[0].sizes)


def test_the_host_reserve_default_can_come_from_settings() -> None:
    reserve = HostReserve(vcpu=4, memory_gib=16, disk_gib=50)
    fleet = load_fleetconfig_text(MINIMAL, host_reserve=reserve)
    assert fleet.pools[0].host_reserve == reserve


@pytest.mark.parametrize(
    ("given", "kept", "notice"),
    [
        pytest.param(500, 100, "you entered 500, so we keep 100", id="above-100-keeps-100"),
        pytest.param(0.01, 0.1, "you entered 0.01, so we keep 0.1", id="below-0.1-keeps-0.1"),
    ],
)
def test_overcommit_out_of_range_is_clamped_with_a_warning_at_its_place(
    given: float, kept: float, notice: str
) -> None:
    fleet = load_fleetconfig_text(
        doc(f"pools:\n  - {{name: p, kind: vps-host, policy: {{overcommit: {{vcpu: {given}}}}}}}\n")
    )
    assert fleet.pools[0].overcommit.vcpu == kept
    (warning,) = fleet.warnings
    assert warning.path == "$.pools[0].policy.overcommit.vcpu"
    assert (warning.line, warning.column) == (4, 59)
    assert notice in warning.message


def test_overcommit_that_is_not_finite_is_an_error_at_its_place() -> None:
    with pytest.raises(InvalidInputError) as caught:
        load_fleetconfig_text(
            doc("pools:\n  - {name: p, kind: vps-host, policy: {overcommit: {vcpu: .nan}}}\n")
        )
    (error,) = caught.value.details["errors"]
    assert error["path"] == "$.pools[0].policy.overcommit.vcpu"
    assert (error["line"], error["column"]) == (4, 59)
    assert "expected a finite number, got nan" in error["message"]


def test_overcommit_in_range_is_kept() -> None:
    fleet = load_fleetconfig_text(
        doc("pools:\n  - {name: p, kind: vps-host, policy: {overcommit: {vcpu: 2.5}}}\n")
    )
    assert fleet.pools[0].overcommit.vcpu == 2.5
    assert not fleet.warnings


def test_spares_above_ten_keep_ten_and_spares_of_a_size_that_is_off_are_not_kept_ready() -> None:
    fleet = load_fleetconfig_text(
        doc(
            """\
            tenants: [{id: acme}]
            compute:
              - tenant: acme
                sizes:
                  medium: {spares: 25}
                  large: {enabled: false, spares: 3}
            """
        )
    )
    _, medium, large, _ = fleet.compute[0].sizes
    assert medium == SizeSetting("medium", enabled=True, spares=10)
    assert large == SizeSetting("large", enabled=False, spares=3)
    assert credits_table(ComputeSettings(sizes=fleet.compute[0].sizes)).total == 10 * 720
    assert sorted(w.path for w in fleet.warnings) == [
        "$.compute[0].sizes.large.spares",
        "$.compute[0].sizes.medium.spares",
    ]


def test_labels_are_kept_sorted_and_placement_normalized() -> None:
    fleet = load_fleetconfig_text(
        doc(
            """\
            pools: [{name: p, kind: vps-host, gpuModel: L40S}]
            hosts: [{name: h, pool: p, labels: {zone: b, arch: x86}}]
            flavors:
              - {pool: p, name: g, vcpu: 8, memoryGiB: 32, diskGiB: 200, gpus: 1,
                 placement: {pinned: true}}
            """
        )
    )
    assert fleet.hosts[0].labels == (("arch", "x86"), ("zone", "b"))
    assert fleet.flavors[0].placement == PlacementPolicy(pinned=True)


def test_the_desired_fleet_is_frozen() -> None:
    fleet = load_fleetconfig(EXAMPLE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fleet.tenants = ()  # type: ignore[misc]
    assert isinstance(fleet, DesiredFleet)


def test_root_may_be_referenced_without_being_declared() -> None:
    fleet = load_fleetconfig_text(doc("pools: [{name: p, kind: vps-host, owner: root}]\n"))
    assert fleet.pools[0].owner == "root"


# ---------------------------------------------------------------------------
# Property: whatever a valid document becomes, the loader answers with a location


EXAMPLE_DATA: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
EXAMPLE_TEXT = EXAMPLE.read_text()
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
)


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if isinstance(value, dict | list) else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _containers(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _containers(item, (*path, index))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _mutate(draw: Any, data: Any) -> Any:
    target = _at(data, draw(st.sampled_from(_containers(data))))
    operation = draw(st.sampled_from(["set", "delete", "add", "copy"]))
    if isinstance(target, dict):
        keys = list(target)
        if operation == "delete" and keys:
            del target[draw(st.sampled_from(keys))]
        elif operation == "add" or not keys:
            target[draw(st.text(min_size=1, max_size=10))] = draw(JUNK)
        elif operation == "copy":
            target[draw(st.sampled_from(keys))] = json.loads(
                json.dumps(target[draw(st.sampled_from(keys))])
            )
        else:
            target[draw(st.sampled_from(keys))] = draw(JUNK)
    elif isinstance(target, list):
        if operation == "delete" and target:
            target.pop(draw(st.integers(0, len(target) - 1)))
        elif operation == "copy" and target:
            target.append(json.loads(json.dumps(target[draw(st.integers(0, len(target) - 1))])))
        elif target:
            target[draw(st.integers(0, len(target) - 1))] = draw(JUNK)
        else:
            target.append(draw(JUNK))
    return data


def _assert_located(text: str) -> None:
    try:
        load_fleetconfig_text(text, file="fleet.yaml")
    except InvalidInputError as error:
        errors = error.details["errors"]
        assert errors
        line_count = text.count("\n") + 2
        for item in errors:
            assert item["file"] == "fleet.yaml"
            assert 1 <= item["line"] <= line_count, item
            assert item["column"] >= 1, item
            assert item["path"].startswith("$"), item
            assert item["message"], item
        lines = error.message.splitlines()
        if lines[-1].startswith("... and "):  # a long list ends with a count of the rest
            lines = lines[:-1]
        assert all(line.startswith("fleet.yaml:") for line in lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_documents_fail_only_with_located_invalid_input(data: st.DataObject) -> None:
    document = json.loads(json.dumps(EXAMPLE_DATA))
    for _ in range(data.draw(st.integers(1, 4))):
        document = _mutate(data.draw, document)
    _assert_located(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, len(EXAMPLE_TEXT)),
    st.integers(0, 20),
    st.text(
        alphabet=st.sampled_from(list("{}[]:,-#&*!|>'\"%@` \t\n\\x0") + ["\x00", "\ud800"]),
        max_size=6,
    ),
)
def test_text_edits_fail_only_with_located_invalid_input(start: int, cut: int, insert: str) -> None:
    _assert_located(EXAMPLE_TEXT[:start] + insert + EXAMPLE_TEXT[start + cut :])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_fast_schema_check_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    """jsonschema-rs only short-cuts documents jsonschema would accept as well."""
    from bcfleet.reconcile.schema import _surely_valid

    document = json.loads(json.dumps(EXAMPLE_DATA))
    for _ in range(data.draw(st.integers(1, 4))):
        document = _mutate(data.draw, document)
    if _surely_valid(document):
        assert list(_validator().iter_errors(document)) == []


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        pytest.param(
            "  - {name: p, kind: vps-host}\n",
            "pool 'p' is neither owned by nor offered to tenant 'acme'",
            id="not-offered",
        ),
        pytest.param(
            "  - {name: p, kind: provider, offeredTo: [acme], providerAccount: hz}\n",
            "pool 'p' is a provider pool; spare instances run on a vps-host pool",
            id="a-provider-pool",
        ),
    ],
)
def test_a_serverless_pool_the_tenant_cannot_use_is_an_error(pools: str, message: str) -> None:
    text = doc(
        "tenants: [{id: acme}]\n"
        "providerAccounts: [{name: hz, provider: hetzner, tokenEnv: HCLOUD_TOKEN}]\n"
        f"pools:\n{pools}"
        "compute:\n  - {tenant: acme, serverlessPool: p}\n"
    )
    [error] = errors_of(text)
    assert error["path"] == "$.compute[0].serverlessPool"
    assert error["message"].startswith(message)


def test_the_examples_policy_comments_hold() -> None:
    """fleet.example.yaml: each ratio is 1 unless set and clamped (with a warning) outside
    0.1..100; hostReserve.vcpu is the host's lowest CPUs, which no guest gets and capacity
    leaves out."""
    from bcfleet.domain.fit import derive_allocatable
    from bcfleet.domain.numa import reserved_cpus
    from bcfleet.domain.shapes import Inventory
    from bcfleet.domain.simulated_inventory import two_socket_host

    text = EXAMPLE.read_text()
    pool = next(p for p in load_fleetconfig(EXAMPLE).pools if p.name == "vps-fra")
    assert pool.overcommit == Overcommit(vcpu=2, memory_gib=1.5, disk_gib=1)
    assert "overcommit: { vcpu: 2, memoryGiB: 1.5 }" in text
    wild = load_fleetconfig_text(
        text.replace("vcpu: 2, memoryGiB: 1.5", "vcpu: 200, memoryGiB: 0.05")
    )
    clamped = next(p for p in wild.pools if p.name == "vps-fra")
    assert (clamped.overcommit.vcpu, clamped.overcommit.memory_gib) == (100, 0.1)
    assert [w.path for w in wild.warnings] == [
        "$.pools[0].policy.overcommit.vcpu",
        "$.pools[0].policy.overcommit.memoryGiB",
    ]
    assert pool.host_reserve.vcpu == 2
    inventory = Inventory.from_json(two_socket_host())
    assert reserved_cpus(inventory, pool.host_reserve.vcpu) == {0, 1}
    allocatable = derive_allocatable(inventory, pool.host_reserve)
    assert allocatable is not None and allocatable["vcpu"] == len(inventory.cpus) - 2
