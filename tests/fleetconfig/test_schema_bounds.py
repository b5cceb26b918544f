"""The shipped FleetConfig schema is generated from domain/bounds.py, and every bound answers alike
in the schema, `fleet validate`, the CLI and the HTTP API, at the limit and one past it.

One fleet serves the whole module: the CLI writes to its database file while the HTTP API serves
it, each call under names of its own. A FleetConfig carries each value in a document that is
valid otherwise, so the schema and `fleet validate` judge that value alone.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from bcfleet.domain.bounds import (
    LABEL_KEY_MAX,
    LABEL_VALUE_MAX,
    NAME_MAX,
    QUOTA_MAX,
    SHAPE_MAX,
    SLUG_MAX,
    TENANT_NAME_MAX,
    URL_MAX,
)
from bcfleet.domain.sizes import SPARES_ASKED_MAX
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.schemas import load_schema
from bcfleet.schemas.fleetconfig import FILE, fleetconfig_schema, schema_text
from tests.support.builders import OP, hosted_pool
from tests.support.fleet import T0, open_fleet, run_cli
from tests.support.http import ApiClient, served

UNSET_TOKEN = "BCFLEET_BOUNDS_TEST_UNSET"  # no provider is ever reached: the token is missing
_serial = itertools.count()


def test_the_shipped_schema_is_what_the_bounds_generate() -> None:
    assert FILE.read_text(encoding="utf-8") == schema_text(), (
        "run `python -m bcfleet.schemas.fleetconfig` to regenerate the shipped schema"
    )
    assert load_schema("fleetconfig") == fleetconfig_schema()


# ---------------------------------------------------------------------------
# The world: root's vps-fra offered to acme, a provider pool hz-pool on account hz


@dataclass
class World:
    db: str
    api: ApiClient
    files: Path

    def cli(self, *args: str) -> tuple[bool, Any]:
        result = run_cli("--json", *args, db=self.db, env={"BCFLEET_NOW": T0.isoformat()})
        assert "Traceback" not in result.stderr, result.stderr
        return result.exit_code == 0, json.loads(result.stdout or "null")

    def http(self, method: str, path: str, body: Any) -> tuple[bool, Any]:
        response = self.api.call(method, path, json=body)
        assert response.status_code < 500, response.text
        return response.status_code < 300, response.json()

    def validate(self, document: dict[str, Any]) -> tuple[bool, Any]:
        path = self.files / f"fleet-{next(_serial)}.yaml"
        path.write_text(json.dumps(document, ensure_ascii=False))  # JSON is YAML
        result = run_cli("--json", "validate", "-f", str(path))
        assert "Traceback" not in result.stderr, result.stderr
        return result.exit_code == 0, json.loads(result.stdout or "null")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from bcfleet.clock import FakeClock

    files = tmp_path_factory.mktemp("bounds")
    db = f"sqlite:///{files / 'fleet.db'}"
    fleet: Fleet = open_fleet(db, FakeClock(T0))
    hosted_pool(fleet, "vps-fra", offered_to=("acme",))
    fleet.api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env=UNSET_TOKEN
    )
    fleet.api.pools.create(
        OP, tenant_id="root", name="hz-pool", kind="provider", provider_account="hz"
    )
    try:
        with served(fleet) as (_, api):
            yield World(db, api, files)
    finally:
        fleet.close()


BASE: dict[str, Any] = {
    "apiVersion": "bcfleet.dev/v1",
    "kind": "FleetConfig",
    "tenants": [{"id": "root"}, {"id": "acme"}],
    "providerAccounts": [{"name": "hz", "provider": "hetzner", "tokenEnv": UNSET_TOKEN}],
    "pools": [
        {"name": "vps-fra", "kind": "vps-host", "offeredTo": ["acme"]},
        {"name": "hz-pool", "kind": "provider", "providerAccount": "hz"},
    ],
}


def document(**sections: Any) -> dict[str, Any]:
    """BASE with sections added to (lists) or laid over."""
    doc = json.loads(json.dumps(BASE))
    for name, items in sections.items():
        doc[name] = doc.get(name, []) + items
    return doc


def fill(length: int, head: str = "", tail: str = "") -> str:
    """A unique text of exactly ``length`` characters: head, a serial number, x's, tail."""
    start = f"{head}{next(_serial)}"
    return start + "x" * (length - len(start) - len(tail)) + tail


def word(length: int) -> str:
    """A unique slug, tenant id or label name of ``length`` characters (starts with a letter)."""
    return fill(length, "n")


# ---------------------------------------------------------------------------
# Every bound: how each edge is given a value (the value comes in already unique)

Edge = Callable[[Any], Any]


@dataclass(frozen=True)
class Bound:
    """A bound, its values at the limit and one past (a fresh one each call), and how each
    edge is given a value."""

    limit: Callable[[], Any]
    past: Callable[[], Any]
    fleetconfig: Edge  # value -> document
    cli: Edge  # value -> argv
    http: Edge  # value -> (method, path, body)
    past_kept: bool = False  # a value past the limit is kept, with a notice (clamped)


def _pool_yaml(**fields: Any) -> dict[str, Any]:
    return document(pools=[{"name": word(10), "kind": "vps-host", **fields}])


def _pool_cli(*options: str) -> list[str]:
    return ["pools", "create", "--name", word(10), "--kind", "vps-host", *options]


def _pool_http(**fields: Any) -> tuple[str, str, Any]:
    return ("POST", "/v1/pools", {"name": word(10), "kind": "vps-host", **fields})


def _flavor_yaml(pool: str = "vps-fra", **fields: Any) -> dict[str, Any]:
    shape = {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}
    return document(flavors=[{"pool": pool, "name": word(10), **shape, **fields}])


def _flavor_cli(pool: str = "vps-fra", **options: Any) -> list[str]:
    shape = {"vcpu": 2, "memory-gib": 4, "disk-gib": 40, **options}
    argv = ["flavors", "create", "--tenant", "root", "--pool", pool, "--name", word(10)]
    return argv + [item for key, value in shape.items() for item in (f"--{key}", str(value))]


def _flavor_http(pool: str = "vps-fra", **fields: Any) -> tuple[str, str, Any]:
    shape = {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, **fields}
    return ("POST", f"/v1/pools/{pool}/flavors", {"name": word(10), **shape})


def _labels_yaml(key: str, value: str) -> dict[str, Any]:
    return document(hosts=[{"name": word(10), "pool": "vps-fra", "labels": {key: value}}])


def _labels_cli(key: str, value: str) -> list[str]:
    return ["hosts", "adopt", "--pool", "vps-fra", "--name", word(10), "--label", f"{key}={value}"]


def _labels_http(key: str, value: str) -> tuple[str, str, Any]:
    return ("POST", "/v1/hosts", {"pool": "vps-fra", "name": word(10), "labels": {key: value}})


def _key(length: int) -> str:
    """A label key of ``length`` characters: a DNS prefix, '/', a 63-character name."""
    return fill(length - 64, "p") + "/" + "n" * 63


def _spares_yaml(n: int) -> dict[str, Any]:
    setting = {"tenant": "acme", "serverlessPool": "vps-fra", "sizes": {"small": {"spares": n}}}
    return document(compute=[setting])


def _reserve(n: int) -> dict[str, Any]:
    return {"policy": {"hostReserve": {"vcpu": n}}}


def _account_yaml(**fields: Any) -> dict[str, Any]:
    account = {"name": word(10), "provider": "hetzner", "tokenEnv": UNSET_TOKEN, **fields}
    return document(providerAccounts=[account])


def _account_cli(*options: str) -> list[str]:
    return ["provider-accounts", "create", "--name", word(10), "--provider", "hetzner",
            "--token-env", UNSET_TOKEN, *options]  # fmt: skip


def _account_http(**fields: Any) -> tuple[str, str, Any]:
    body = {"name": word(10), "provider": "hetzner", "tokenEnv": UNSET_TOKEN, **fields}
    return ("POST", "/v1/provider-accounts", body)


def _url(length: int) -> str:
    return fill(length, "https://", ".example")


BOUNDS = {
    "tenant-id": Bound(
        lambda: word(SLUG_MAX),
        lambda: word(SLUG_MAX + 1),
        lambda v: document(tenants=[{"id": v}]),
        lambda v: ["tenants", "create", v],
        lambda v: ("POST", "/v1/tenants", {"id": v}),
    ),
    "tenant-name": Bound(
        lambda: fill(TENANT_NAME_MAX),
        lambda: fill(TENANT_NAME_MAX + 1),
        lambda v: document(tenants=[{"id": word(8), "name": v}]),
        lambda v: ["tenants", "create", word(8), "--name", v],
        lambda v: ("POST", "/v1/tenants", {"id": word(8), "name": v}),
    ),
    "pool-name": Bound(
        lambda: word(SLUG_MAX),
        lambda: word(SLUG_MAX + 1),
        lambda v: document(pools=[{"name": v, "kind": "vps-host"}]),
        lambda v: ["pools", "create", "--name", v, "--kind", "vps-host"],
        lambda v: ("POST", "/v1/pools", {"name": v, "kind": "vps-host"}),
    ),
    "gpu-model": Bound(
        lambda: fill(SLUG_MAX, "L"),
        lambda: fill(SLUG_MAX + 1, "L"),
        lambda v: _pool_yaml(gpuModel=v),
        lambda v: _pool_cli("--gpu-model", v),
        lambda v: _pool_http(gpuModel=v),
    ),
    "host-reserve": Bound(
        lambda: SHAPE_MAX,
        lambda: SHAPE_MAX + 1,
        lambda v: _pool_yaml(**_reserve(v)),
        lambda v: _pool_cli("--host-reserve-vcpu", str(v)),
        lambda v: _pool_http(**_reserve(v)),
    ),
    "overcommit-ratio": Bound(
        lambda: 100,
        lambda: 101,
        lambda v: _pool_yaml(policy={"overcommit": {"vcpu": v}}),
        lambda v: _pool_cli("--overcommit", f"vcpu={v}"),
        lambda v: _pool_http(policy={"overcommit": {"vcpu": v}}),
        past_kept=True,
    ),
    "host-name": Bound(
        lambda: word(SLUG_MAX),
        lambda: word(SLUG_MAX + 1),
        lambda v: document(hosts=[{"name": v, "pool": "vps-fra"}]),
        lambda v: ["hosts", "adopt", "--pool", "vps-fra", "--name", v],
        lambda v: ("POST", "/v1/hosts", {"pool": "vps-fra", "name": v}),
    ),
    "label-key": Bound(
        lambda: _key(LABEL_KEY_MAX),
        lambda: _key(LABEL_KEY_MAX + 1),
        lambda v: _labels_yaml(v, "x"),
        lambda v: _labels_cli(v, "x"),
        lambda v: _labels_http(v, "x"),
    ),
    "label-value": Bound(
        lambda: fill(LABEL_VALUE_MAX),
        lambda: fill(LABEL_VALUE_MAX + 1),
        lambda v: _labels_yaml("bc.dev/role", v),
        lambda v: _labels_cli("bc.dev/role", v),
        lambda v: _labels_http("bc.dev/role", v),
    ),
    "flavor-vcpu": Bound(
        lambda: SHAPE_MAX,
        lambda: SHAPE_MAX + 1,
        lambda v: _flavor_yaml(vcpu=v),
        lambda v: _flavor_cli(vcpu=v),
        lambda v: _flavor_http(vcpu=v),
    ),
    "flavor-vcpu-low": Bound(
        lambda: 1,
        lambda: 0,
        lambda v: _flavor_yaml(vcpu=v),
        lambda v: _flavor_cli(vcpu=v),
        lambda v: _flavor_http(vcpu=v),
    ),
    "flavor-memory": Bound(
        lambda: SHAPE_MAX,
        lambda: SHAPE_MAX + 1,
        lambda v: _flavor_yaml(memoryGiB=v),
        lambda v: _flavor_cli(**{"memory-gib": v}),
        lambda v: _flavor_http(memoryGiB=v),
    ),
    "flavor-disk": Bound(
        lambda: SHAPE_MAX,
        lambda: SHAPE_MAX + 1,
        lambda v: _flavor_yaml(diskGiB=v),
        lambda v: _flavor_cli(**{"disk-gib": v}),
        lambda v: _flavor_http(diskGiB=v),
    ),
    "flavor-gpus": Bound(
        lambda: SHAPE_MAX,
        lambda: SHAPE_MAX + 1,
        lambda v: _flavor_yaml(gpus=v),
        lambda v: _flavor_cli(gpus=v),
        lambda v: _flavor_http(gpus=v),
    ),
    "flavor-gpus-low": Bound(
        lambda: 0,
        lambda: -1,
        lambda v: _flavor_yaml(gpus=v),
        lambda v: _flavor_cli(gpus=v),
        lambda v: _flavor_http(gpus=v),
    ),
    "offer-id": Bound(
        lambda: fill(NAME_MAX, "cx"),
        lambda: fill(NAME_MAX + 1, "cx"),
        lambda v: _flavor_yaml("hz-pool", offerId=v),
        lambda v: _flavor_cli("hz-pool", offer=v),
        lambda v: _flavor_http("hz-pool", offerId=v),
    ),
    "quota": Bound(
        lambda: QUOTA_MAX,
        lambda: QUOTA_MAX + 1,
        lambda v: document(quotas=[{"tenant": "acme", "pool": "vps-fra", "vcpu": v}]),
        lambda v: ["quotas", "set", "--tenant", "acme", "--pool", "vps-fra", "--vcpu", str(v)],
        lambda v: ("PUT", "/v1/quotas/acme/vps-fra", {"vcpu": v}),
    ),
    "spares": Bound(
        lambda: SPARES_ASKED_MAX,
        lambda: SPARES_ASKED_MAX + 1,
        _spares_yaml,
        lambda v: [
            "settings",
            "compute",
            "set",
            "--tenant",
            "acme",
            "--serverless-pool",
            "vps-fra",
            "--spares",
            f"small={v}",
        ],  # fmt: skip
        lambda v: (
            "PATCH",
            "/v1/settings/compute?tenant=acme",
            {"serverlessPool": "vps-fra", "spares": {"small": v}},
        ),  # fmt: skip
    ),
    "account-name": Bound(
        lambda: word(SLUG_MAX),
        lambda: word(SLUG_MAX + 1),
        lambda v: document(
            providerAccounts=[{"name": v, "provider": "hetzner", "tokenEnv": UNSET_TOKEN}]
        ),
        lambda v: [
            "provider-accounts",
            "create",
            "--name",
            v,
            "--provider",
            "hetzner",
            "--token-env",
            UNSET_TOKEN,
        ],  # fmt: skip
        lambda v: (
            "POST",
            "/v1/provider-accounts",
            {"name": v, "provider": "hetzner", "tokenEnv": UNSET_TOKEN},
        ),  # fmt: skip
    ),
    "endpoint-length": Bound(
        lambda: _url(URL_MAX),
        lambda: _url(URL_MAX + 1),
        lambda v: _account_yaml(endpoint=v),
        lambda v: _account_cli("--endpoint", v),
        lambda v: _account_http(endpoint=v),
    ),
}


def answers(world: World, bound: Bound, make: Callable[[], Any]) -> tuple[dict[str, bool], Any]:
    """Whether each edge takes a value ``make`` gives (a fresh one for each: names are taken
    once), and what each answered."""
    doc = bound.fleetconfig(make())
    method, path, body = bound.http(make())
    said = {
        "validate": world.validate(doc),
        "cli": world.cli(*bound.cli(make())),
        "http": world.http(method, path, body),
    }
    taken = {edge: ok for edge, (ok, _) in said.items()}
    taken["schema"] = Draft202012Validator(load_schema("fleetconfig")).is_valid(doc)
    return taken, {edge: answer for edge, (_, answer) in said.items()}


@pytest.mark.parametrize("name", list(BOUNDS))
def test_every_edge_takes_the_limit_and_refuses_one_past_it(world: World, name: str) -> None:
    bound = BOUNDS[name]
    at_limit, said = answers(world, bound, bound.limit)
    assert at_limit == dict.fromkeys(at_limit, True), said
    past, said = answers(world, bound, bound.past)
    assert past == dict.fromkeys(past, bound.past_kept), said
    if bound.past_kept:  # and every edge says what it kept instead
        assert all("so we keep" in json.dumps(answer) for answer in said.values()), said


def test_the_walk_covers_every_bounded_field_of_the_schema() -> None:
    """Each maxLength, maximum and minimum the schema states is one BOUNDS walks (by its limit)."""
    stated: set[tuple[str, int]] = set()

    def collect(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for keyword in ("maxLength", "maximum"):
                if keyword in node:
                    stated.add((keyword, node[keyword]))
            for key, sub in node.items():
                collect(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for index, sub in enumerate(node):
                collect(sub, f"{where}/{index}")

    collect(fleetconfig_schema(), "")
    walked = {bound.limit() for bound in BOUNDS.values()}
    lengths = {len(v) for v in walked if isinstance(v, str)}
    numbers = {v for v in walked if isinstance(v, int)}
    for keyword, limit in stated:
        assert limit in (lengths if keyword == "maxLength" else numbers), (keyword, limit)


# ---------------------------------------------------------------------------
# URLs: one rule (bounds.url_problem) for webhooks and provider endpoints, on every edge

URLS = [
    pytest.param("http://example.com/a\u200bb", False, id="zero-width-space"),
    pytest.param("http://example.com/a b", False, id="blank"),
    pytest.param("http://example.com:99999/", False, id="port-past-65535"),
    pytest.param("http://example.com:65535/", True, id="port-65535"),
    pytest.param("HTTPS://example.com/v1", True, id="upper-case-scheme"),
    pytest.param("https://user@example.com:8443/v1?a=b#c", True, id="user-port-query-fragment"),
    pytest.param("http://[1.2.3.4]/", False, id="ipv4-in-brackets"),
    pytest.param("http://a\uff03b/", False, id="full-width-hash-in-host"),
    pytest.param("ftp://example.com/", False, id="not-http"),
]


def _hook(url: str) -> str:
    """The URL on a host that never resolves (.invalid), so the egress guard lets it pass."""
    return url.replace("example.com", "hooks.invalid")


@pytest.mark.parametrize(("url", "ok"), URLS)
def test_every_edge_answers_a_url_alike(world: World, url: str, ok: bool) -> None:
    doc = _account_yaml(endpoint=url)
    said = {
        "validate": world.validate(doc),
        "cli endpoint": world.cli(*_account_cli("--endpoint", url)),
        "http endpoint": world.http(*_account_http(endpoint=url)),
        "cli webhook": world.cli("webhooks", "create", "--tenant", "root", "--url", _hook(url)),
        "http webhook": world.http("POST", "/v1/webhooks?tenant=root", {"url": _hook(url)}),
    }
    taken = {edge: taken for edge, (taken, _) in said.items()}
    assert taken == dict.fromkeys(taken, ok), said
    if ok:  # the schema's pattern is looser than the rule, never stricter
        assert Draft202012Validator(load_schema("fleetconfig")).is_valid(doc)


# ---------------------------------------------------------------------------
# Whole numbers: 2.0 is the whole number 2 on every edge, 2.5 is refused in the same words

WHOLE_BOUNDS = [
    name
    for name, bound in BOUNDS.items()
    if isinstance(bound.limit(), int)
    and not isinstance(bound.limit(), bool)
    and not bound.past_kept
]


def _as_written(bound: Bound, value: float) -> Bound:
    """The bound with ``value`` (a float) given to every edge in place of its limit."""
    return Bound(lambda: value, lambda: value, bound.fleetconfig, bound.cli, bound.http)


@pytest.mark.parametrize("name", WHOLE_BOUNDS)
def test_every_edge_reads_a_whole_float_as_the_whole_number(world: World, name: str) -> None:
    bound = BOUNDS[name]
    limit = bound.limit()
    taken, said = answers(world, _as_written(bound, float(limit)), lambda: float(limit))
    assert taken == dict.fromkeys(taken, True), said
    half = limit - 0.5 if limit > 0 else 0.5
    taken, said = answers(world, _as_written(bound, half), lambda: half)
    assert taken == dict.fromkeys(taken, False), said
    for edge, answer in said.items():  # the CLI's option parser says it before the API's range
        assert "whole number" in json.dumps(answer) and repr(half) in json.dumps(answer), edge
    assert all("must be a whole number from" in json.dumps(said[e]) for e in ("validate", "http"))


def test_the_python_api_reads_a_whole_float_as_the_whole_number(fleet: Fleet) -> None:
    hosted_pool(fleet, "vps-fra", offered_to=("acme",))
    pool = fleet.api.pools.create(
        OP, tenant_id="root", name="vps-ber", kind="vps-host", host_reserve={"vcpu": 2.0}
    )
    assert pool["policy"]["hostReserve"] == {"vcpu": 2}
    assert type(pool["policy"]["hostReserve"]["vcpu"]) is int
    shape = {"vcpu": 2.0, "memory_gib": 4.0, "disk_gib": 40.0, "gpus": 0.0}
    flavor = fleet.api.flavors.create(OP, tenant_id="root", pool_id="vps-fra", name="g1", **shape)
    assert [type(flavor[k]) for k in ("vcpu", "memoryGiB", "diskGiB", "gpus")] == [int] * 4
    quota = fleet.api.quotas.set(OP, tenant_id="acme", pool="vps-fra", limits={"vcpu": 8.0})
    assert type(quota["limits"]["vcpu"]) is int and quota["limits"]["vcpu"] == 8
    refusals = [
        lambda: fleet.api.pools.create(
            OP, tenant_id="root", name="vps-muc", kind="vps-host", host_reserve={"vcpu": 2.5}
        ),
        lambda: fleet.api.flavors.create(
            OP, tenant_id="root", pool_id="vps-fra", name="g2", **{**shape, "vcpu": 2.5}
        ),
        lambda: fleet.api.quotas.set(OP, tenant_id="acme", pool="vps-fra", limits={"vcpu": 2.5}),
    ]
    for refused in refusals:
        with pytest.raises(InvalidInputError, match="must be a whole number from .*, got 2.5"):
            refused()
