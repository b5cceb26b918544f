"""show agrees with list, for every kind of object, every kind of tenant and every role.

For each caller (root, the pool's owner, a tenant it is offered to, an unrelated tenant;
admin, member, viewer) and each kind: every item ``list`` returns, ``show`` returns equal
(the same JSON); every object ``show`` finds is one ``list`` returns; and every object
``list`` hides is NOT_FOUND on show with the same answer as a made-up id. A caller that
may not list a kind at all finds none of it on show either. Kinds without a show verb
(events, usage, tokens, provider accounts) use their narrowest lookup (a cursor, a
subject, a principal, an account's offers), which must agree with the list the same way.
The world is tests/support/security_world.py, read through the Python API.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.errors import FleetError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_usage import run_vps_usage
from tests.support.builders import OP
from tests.support.fleet import T0, open_fleet
from tests.support.security_world import KINDS, ROLES, build_world

Api = Any
Ref = tuple[str, ...]

MADE_UP = {
    "pool": "pool_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "flv": "flv_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "node": "node_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "ins": "ins_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "rsv": "rsv_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "svc": "svc_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "env": "env_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "idx": "idx_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "whk": "whk_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "pacct": "pacct_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "evt": "evt_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "tok": "tok_01aaaaaaaaaaaaaaaaaaaaaaaa",
    "usage": "999999999",
}


class Hidden(NotFoundError):
    """What a list-only kind's lookup answers when the object is not among what it returns."""


@dataclass(frozen=True)
class Caller:
    """A token of a tenant, or the local operator acting as a tenant (to name every object)."""

    credential: Any
    tenant: str

    @property
    def scope(self) -> str | None:
        """tenant_id for reads that take it optionally: only the operator acts as another."""
        return self.tenant if self.credential is OP else None


@dataclass(frozen=True)
class Kind:
    """How to list a kind, show one object of it by its ref, and name every object of it."""

    name: str
    list: Callable[[Api, Caller], list[dict[str, Any]]]
    show: Callable[[Api, Caller, Ref], dict[str, Any]]
    ref: Callable[[dict[str, Any]], Ref]
    made_up: Ref


def _items(answer: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = answer["items"]
    return items


def _one(items: list[dict[str, Any]], key: str, value: Any) -> dict[str, Any]:
    found = [i for i in items if i[key] == value]
    if not found:
        raise Hidden(f"{value!r} not found", {})
    assert len(found) == 1
    return found[0]


def _flavors(api: Api, c: Caller) -> list[dict[str, Any]]:
    pools = _items(api.pools.list(c.credential))
    return [f for p in pools for f in _items(api.flavors.list(c.credential, tenant_id=c.tenant,
                                                              pool_id=p["id"]))]  # fmt: skip


def _event(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    seq, event_id = int(ref[0]), ref[1]
    page = _items(api.events.list(c.credential, after=seq - 1, limit=1))
    return _one(page, "id", event_id)


def _usage(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    window, subject, meter = ref
    page = _items(api.usage.list(c.credential, subject=subject, meter=meter, limit=10_000))
    return _one(page, "id", int(window))


def _token(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    token_id, principal = ref
    return _one(_items(api.iam.list_tokens(c.credential, tenant_id=c.tenant,
                                           principal=principal)), "id", token_id)  # fmt: skip


def _account(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    """An account's offers find it (or stop at the provider's door) or say NOT_FOUND."""
    try:
        api.provider_accounts.offers(c.credential, tenant_id=c.tenant, account_id=ref[0])
    except NotFoundError:
        raise
    except FleetError:
        pass  # found: no token to talk to the provider with
    return _one(_items(api.provider_accounts.list(c.credential, tenant_id=c.tenant)), "id", ref[0])


def _host(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    """hosts.show is the listing's item, the inventory document (too big for a list) and the
    CPUs worked out from it."""
    shown: dict[str, Any] = api.hosts.show(c.credential, host=ref[0])
    assert "resources" in shown and "inventory" in shown and "reservedCpus" in shown
    del shown["inventory"], shown["reservedCpus"]
    return shown


def _quota(api: Api, c: Caller, ref: Ref) -> dict[str, Any]:
    return _items(api.quotas.show(c.credential, tenant_id=c.tenant, pool=ref[0]))[0]


KINDS_OF_OBJECTS = [
    Kind("pools", lambda a, c: _items(a.pools.list(c.credential)),
         lambda a, c, r: a.pools.show(c.credential, pool=r[0]), lambda i: (i["id"],),
         (MADE_UP["pool"],)),
    Kind("flavors", _flavors,
         lambda a, c, r: a.flavors.get(c.credential, tenant_id=c.tenant, pool_id=r[0], name=r[1]),
         lambda i: (i["poolId"], i["id"]), (MADE_UP["pool"], MADE_UP["flv"])),
    Kind("hosts", lambda a, c: _items(a.hosts.list(c.credential)), _host, lambda i: (i["id"],),
         (MADE_UP["node"],)),
    Kind("instances", lambda a, c: _items(a.instances.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.instances.show(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["ins"],)),
    Kind("reservations", lambda a, c: _items(a.reservations.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.reservations.get(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["rsv"],)),
    Kind("quotas", lambda a, c: _items(a.quotas.show(c.credential, tenant_id=c.tenant)),
         _quota, lambda i: (i["poolId"],), (MADE_UP["pool"],)),
    Kind("services", lambda a, c: _items(a.services.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.services.show(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["svc"],)),
    Kind("environments", lambda a, c: _items(a.environments.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.environments.show(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["env"],)),
    Kind("indexes", lambda a, c: _items(a.indexes.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.indexes.show(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["idx"],)),
    Kind("webhooks", lambda a, c: _items(a.webhooks.list(c.credential, tenant_id=c.scope)),
         lambda a, c, r: a.webhooks.show(c.credential, r[0]), lambda i: (i["id"],),
         (MADE_UP["whk"],)),
    Kind("provider accounts",
         lambda a, c: _items(a.provider_accounts.list(c.credential, tenant_id=c.tenant)),
         _account, lambda i: (i["id"],), (MADE_UP["pacct"],)),
    Kind("usage", lambda a, c: _items(a.usage.list(c.credential, tenant_id=c.scope, limit=10_000)), _usage,
         lambda i: (str(i["id"]), i["subjectId"], i["meter"]),
         (MADE_UP["usage"], MADE_UP["ins"], "compute.vcpu.hours")),
    Kind("events", lambda a, c: _items(a.events.list(c.credential, tenant_id=c.scope, limit=1000)), _event,
         lambda i: (str(i["seq"]), i["id"]), ("1", MADE_UP["evt"])),
    Kind("tokens", lambda a, c: _items(a.iam.list_tokens(c.credential, tenant_id=c.tenant)),
         _token, lambda i: (i["id"], i["principal"]), (MADE_UP["tok"], "nobody")),
]  # fmt: skip


def _universe(fleet: Fleet, kind: Kind) -> set[Ref]:
    """Every object of the kind, as root's admin sees it acting as each tenant and as itself."""
    refs: set[Ref] = set()
    for tenant in (*KINDS.values(), "initech"):
        caller = Caller(OP, tenant)
        try:
            refs.update(kind.ref(i) for i in kind.list(fleet.api, caller))
        except FleetError:
            continue
    return refs


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, dict[str, Any]]]:
    path: Path = tmp_path_factory.mktemp("show-list") / "fleet.db"
    fleet = open_fleet(f"sqlite:///{path}", FakeClock(T0))
    with pytest.MonkeyPatch.context() as env:
        env.delenv("HCLOUD_TOKEN", raising=False)  # offers stop at the provider's door
        built = build_world(fleet)
        pool = built["pool"]["id"]
        fleet.api.quotas.set(OP, tenant_id="acme", pool=pool, limits={"vcpu": 64, "gpu": 4})
        fleet.api.instances.create(OP, tenant_id="hostco", pool_id=pool, flavor="g1.small")
        fleet.api.usage.setup_meters(OP)
        fleet.clock.advance(seconds=2 * 3600)  # type: ignore[attr-defined]
        run_vps_usage(fleet, fleet.now())
        built["universe"] = {kind.name: _universe(fleet, kind) for kind in KINDS_OF_OBJECTS}
        yield fleet, built
    fleet.close()


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any] | FleetError:
    try:
        return call()
    except FleetError as error:
        return error


def _shape(error: FleetError, ref: Ref) -> tuple[str, str]:
    """An error's code and message with the ref's parts blanked: the same for any id."""
    message = str(error)
    for part in sorted(ref, key=len, reverse=True):
        message = message.replace(part, "REF")
    return error.code, re.sub(r"\d+", "N", message)


def _problems(fleet: Fleet, world: dict[str, Any], kind: Kind, caller: Caller) -> list[str]:
    api = fleet.api
    listed = _answer(lambda: {"items": kind.list(api, caller)})
    universe: set[Ref] = world["universe"][kind.name]
    problems = []
    if isinstance(listed, FleetError):
        for ref in sorted(universe):
            found = _answer(lambda ref=ref: kind.show(api, caller, ref))  # type: ignore[misc]
            if not isinstance(found, FleetError):
                problems.append(f"list refused ({listed.code}) but show found {ref}")
        return problems
    items = {kind.ref(i): i for i in listed["items"]}
    made_up = _answer(lambda: kind.show(api, caller, kind.made_up))
    if not isinstance(made_up, NotFoundError):
        return [f"a made-up ref answered {made_up!r}"]
    hidden_shape = _shape(made_up, kind.made_up)
    for ref in sorted(universe | set(items)):
        shown = _answer(lambda ref=ref: kind.show(api, caller, ref))  # type: ignore[misc]
        if ref in items:
            if shown != items[ref]:
                problems.append(f"{ref}: show {shown!r} != list {items[ref]!r}")
        elif not isinstance(shown, FleetError):
            if kind.name == "quotas" and not shown["limits"] and not any(shown["used"].values()):
                continue  # a visible pool without quotas reads as unlimited, and lists nothing
            problems.append(f"{ref}: show found what list hides")
        elif not isinstance(shown, NotFoundError) or _shape(shown, ref) != hidden_shape:
            problems.append(f"{ref}: hidden answers {_shape(shown, ref)}, made up {hidden_shape}")
    return problems


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("tenant_kind", list(KINDS))
@pytest.mark.parametrize("kind", KINDS_OF_OBJECTS, ids=lambda k: k.name.replace(" ", "-"))
def test_show_agrees_with_list(
    world: tuple[Fleet, dict[str, Any]], kind: Kind, tenant_kind: str, role: str
) -> None:
    fleet, built = world
    caller = Caller(built["tokens"][(tenant_kind, role)], KINDS[tenant_kind])
    assert _problems(fleet, built, kind, caller) == []


def test_the_world_has_something_to_hide_of_every_kind(
    world: tuple[Fleet, dict[str, Any]],
) -> None:
    """Each kind holds objects, and the unrelated tenant's admin lists fewer than exist."""
    fleet, built = world
    globex = Caller(built["tokens"][("unrelated", "admin")], "globex")
    for kind in KINDS_OF_OBJECTS:
        universe = built["universe"][kind.name]
        assert universe, kind.name
        listed = _answer(lambda kind=kind: {"items": kind.list(fleet.api, globex)})  # type: ignore[misc]
        seen = set() if isinstance(listed, FleetError) else {kind.ref(i) for i in listed["items"]}
        assert seen < universe, kind.name
