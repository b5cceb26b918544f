"""The console's deletes (Ctrl+D, as instances and reservations have it): pools, provider
accounts, hosts (removed), tenants, flavors, services, environments, indexes, webhooks and tokens, each confirmed with
what depends on the row.

What depends on a row, and what its delete would do now (deleted, archived, refused), is
the API's answer (fleet.api.dependents, GET …/dependents over HTTP), read in the worker
before the confirm; the confirm names it. Whether the delete may go on is the API's to say
when it runs: a refusal comes back as its code and message (CONFLICT naming the services
still in an environment), and nothing changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bcfleet.domain.dependents import ARCHIVED, REFUSED
from bcfleet.tui.actions import Action, Item, dependents_line
from bcfleet.tui.format import short_id
from bcfleet.tui.source import FleetSource

DELETE_KEY = "ctrl+d"
"""The key of every delete and cancel in the console (instances, reservations, these)."""


def _named(item: Item) -> str:
    return str(item.get("name") or item.get("id") or "?")


def _owned(item: Item) -> str:
    tenant = item.get("tenantId")
    return f"{_named(item)} ({tenant})" if tenant else _named(item)


def _looking(kind: str) -> Callable[[FleetSource, Item, Any], Item]:
    """The worker's read before the confirm: the row's dependents and the delete's outcome."""

    def look(source: FleetSource, item: Item, _value: Any) -> Item:
        found = source.dependents(kind, item)
        return {"dependents": found["items"], "outcome": found.get("outcome")}

    return look


def _flavor_effect(_item: Item, _value: Any, facts: Item) -> str:
    if facts.get("outcome") == ARCHIVED:
        said = (
            "instances used it, so it is archived, not deleted: hidden from lists, and new "
            "instances and resizes cannot name it; live ones keep their shape"
        )
    else:
        said = "no instance ever used it: it is deleted"
    return said + dependents_line(facts, "live instances")


def _flavor_done(item: Item, answer: Item) -> str:
    return f"{_named(item)} is {'archived' if answer.get('archived') else 'deleted'}"


def _environment_effect(_item: Item, _value: Any, facts: Item) -> str:
    if facts.get("outcome") == REFUSED:
        said = "the API refuses while services are in it: move them to another first"
    else:
        said = "no service is in it: it is deleted"
    return said + dependents_line(facts, "services in it")


def _token_target(token: Item) -> str:
    return f"{short_id(str(token['id']))} of {token.get('principal')} ({token.get('tenantId')})"


def _refused_or_gone(what: str) -> Callable[[Item, Any, Item], str]:
    """A delete the API refuses while anything holds the row (pools, provider accounts)."""

    def effect(_item: Item, _value: Any, facts: Item) -> str:
        if facts.get("outcome") == REFUSED:
            said = f"the API refuses while {what}: free it first"
        else:
            said = "nothing holds it: it is deleted"
        return said + dependents_line(facts, "it still has")

    return effect


def _host_effect(item: Item, value: Any, facts: Item) -> str:
    """Refused while anything ever ran on the host; else removed, its agents' tokens revoked."""
    if facts.get("outcome") == REFUSED:
        return _refused_or_gone("anything ever ran on it (drain it instead)")(item, value, facts)
    return "nothing holds it: it is removed" + dependents_line(
        facts, "its agents' tokens are revoked"
    )


DELETES: tuple[Action, ...] = (
    Action(
        "delete_pool", "pools", DELETE_KEY, "Delete", "pool", _owned,
        _refused_or_gone("anything is in it"),
        lambda source, p, _v: source.delete_pool(str(p["id"])),
        lambda p, _a: f"{_named(p)} is deleted",
        look=_looking("pool"),
        footer=False,  # the footer fits 80 columns; `?` and the palette list it
    ),
    Action(
        "remove_host", "hosts", DELETE_KEY, "Remove", "host", _named, _host_effect,
        lambda source, h, _v: source.remove_host(str(h["id"])),
        lambda h, _a: f"{_named(h)} is removed",
        look=_looking("host"),
        footer=False,  # the footer fits 80 columns; `?` and the palette list it
        label="Remove host",
    ),
    Action(
        "delete_tenant", "tenants", DELETE_KEY, "Delete", "tenant", _named,
        _refused_or_gone("anything names it (and always for root)"),
        lambda source, t, _v: source.delete_tenant(str(t["id"])),
        lambda t, _a: f"{_named(t)} is deleted",
        look=_looking("tenant"),
    ),
    Action(
        "delete_account", "provider-accounts", DELETE_KEY, "Delete", "provider account", _owned,
        _refused_or_gone("a pool uses it"),
        lambda source, a, _v: source.delete_provider_account(str(a["tenantId"]), str(a["name"])),
        lambda a, _a: f"{_named(a)} is deleted",
        look=_looking("providerAccount"),
    ),
    Action(
        "delete_flavor", "flavors", DELETE_KEY, "Delete", "flavor",
        lambda f: f"{f['name']} ({f.get('pool') or f.get('poolId')})",
        _flavor_effect,
        lambda source, f, _v: source.delete_flavor(str(f["poolId"]), str(f["name"])),
        _flavor_done,
        look=_looking("flavor"),
    ),
    Action(
        "delete_service", "services", DELETE_KEY, "Delete", "service", _owned,
        lambda _s, _v, facts: "it is undeployed first, then deleted; this cannot be undone"
        + dependents_line(facts, "the instance serving it is released"),
        lambda source, s, _v: source.delete_service(str(s["id"])),
        lambda s, _a: f"{_named(s)} is deleted",
        look=_looking("service"),
        footer=False,  # the footer fits 80 columns; `?` and the palette list it
    ),
    Action(
        "delete_environment", "environments", DELETE_KEY, "Delete", "environment", _owned,
        _environment_effect,
        lambda source, e, _v: source.delete_environment(str(e["id"])),
        lambda e, _a: f"{_named(e)} is deleted",
        look=_looking("environment"),
    ),
    Action(
        "delete_index", "indexes", DELETE_KEY, "Delete", "index", _owned,
        lambda _i, _v, _f: "it is deleted; its pod size no longer holds a size in use",
        lambda source, i, _v: source.delete_index(str(i["id"])),
        lambda i, _a: f"{_named(i)} is deleted",
    ),
    Action(
        "delete_webhook", "webhooks", DELETE_KEY, "Delete", "webhook",
        lambda w: f"{w.get('url')} ({w.get('tenantId')})",
        lambda _w, _v, facts: "no event is sent to it any more; its deliveries go with it"
        + dependents_line(facts, "dropped"),
        lambda source, w, _v: source.delete_webhook(str(w["id"])),
        lambda w, _a: f"webhook {short_id(str(w['id']))} is deleted",
        look=_looking("webhook"),
    ),
    Action(
        "revoke_token", "tokens", DELETE_KEY, "Revoke", "token", _token_target,
        lambda _t, _v, facts: "whoever uses it is refused from now on; this cannot be undone"
        + dependents_line(facts, "it is used by"),
        lambda source, t, _v: source.revoke_token(str(t["tenantId"]), str(t["id"])),
        lambda t, _a: f"{short_id(str(t['id']))} is revoked",
        look=_looking("token"),
        label="Revoke token",
    ),
)  # fmt: skip
