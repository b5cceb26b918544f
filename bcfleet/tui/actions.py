"""The console's actions, declared: which view, which key, what changes in words, and the FleetSource call.

A list view names its actions (`ACTIONS = actions_for("instances")`); the table
screen binds their keys, asks to confirm with `question`, runs `run` in a thread
worker and says `done` (or the error's code and message) for each row. An action
that needs a value first (a flavor, a tenant, limits) declares an `Ask`.
Whether an action is allowed on a row is the API's rule, never decided here:
the row's answer says CONFLICT or FORBIDDEN when it is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bcfleet.errors import InvalidInputError
from bcfleet.tui.format import short_id
from bcfleet.tui.source import FleetSource

Item = Mapping[str, Any]
"""A row's JSON document, as the view fetched it."""
Answer = Mapping[str, Any]
"""The document an action's call answers with (a typed one where the API has it)."""
LISTED = 8
"""A confirm lists at most this many marked rows (it fits 80×24), then says how many more."""


@dataclass(frozen=True)
class Ask:
    """A value asked for before the confirm: the prompt, a hint, and how the text is read."""

    prompt: str
    placeholder: str = ""
    read: Callable[[str], Any] = str.strip
    start: Callable[[Item], str] | None = None
    """The text the prompt starts with for one row (its current value), to be edited."""


@dataclass(frozen=True)
class Action:
    """One action of one view; `key` is a Textual key name, unique within the view."""

    name: str
    view: str
    key: str
    verb: str
    """The footer's label and the confirm button's word."""
    noun: str
    """What a row is ("instance"), for "Stop 3 instances?"."""
    target: Callable[[Item], str]
    """The row in words: "web-1 (acme)"."""
    effect: Callable[[Item, Any, Item], str]
    """What changes for the row, in words, given the value asked for and the facts looked up."""
    run: Callable[[FleetSource, Item, Any], Answer]
    """The FleetSource call; runs in a worker thread."""
    done: Callable[[Item, Answer], str]
    """What the row's answer says, in words: "web-1 is stopped"."""
    ask: Ask | None = None
    look: Callable[[FleetSource, Item, Any], Item] | None = None
    """Facts the confirm needs that the row does not carry (a host's guests, what depends on
    it), given the value asked for; read in the worker."""
    footer: bool = True
    """Shown in the footer (at 80 columns there is room for about three); always in `?`."""
    label: str = ""
    """The footer's and the keys panel's words, when not the verb alone."""
    together: Callable[[list[Item]], str] | None = None
    """What changes for several rows at once, given each row's facts, when it is a count to
    add up ("100 guests stay" for ten hosts of ten), not one row's words said once."""
    keep: str = "Cancel"
    """The confirm's button that changes nothing."""

    @property
    def key_label(self) -> str:
        return self.label or self.verb

    @property
    def button(self) -> str:
        """The confirm's button that acts: the footer's words ("Set quota", "Cancel reservation")."""
        return self.key_label

    @property
    def binding_action(self) -> str:
        return f"act('{self.name}')"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _named(item: Item) -> str:
    return str(item.get("name") or item.get("id") or "?")


def _owned(item: Item) -> str:
    tenant = item.get("tenantId") or item.get("owner")
    return f"{_named(item)} ({tenant})" if tenant else _named(item)


def _state(item: Item, answer: Answer) -> str:
    return f"{_named(item)} is {answer.get('state') or answer.get('status') or 'changed'}"


def read_limits(text: str) -> dict[str, int | None]:
    """'gpu=8 vcpu=none' → {'gpu': 8, 'vcpu': None}; the API checks the names and bounds."""
    limits: dict[str, int | None] = {}
    for word in text.replace(",", " ").split():
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise InvalidInputError(
                f"{word!r} is not name=value; write e.g. gpu=8 vcpu=none", {"limit": word}
            )
        if value.lower() in ("none", "-", ""):
            limits[name] = None
        elif value.isdigit():
            limits[name] = int(value)
        else:
            raise InvalidInputError(
                f"{name}: {value!r} is not a whole number or 'none'", {"limit": word}
            )
    if not limits:
        raise InvalidInputError("no limits given; write e.g. gpu=8 vcpu=none", {})
    return limits


def _limits_text(limits: Mapping[str, int | None]) -> str:
    return ", ".join(f"{k} {'unlimited' if v is None else v}" for k, v in limits.items())


def _limits_change(before: Mapping[str, Any], after: Mapping[str, int | None]) -> str:
    """'gpu 8 → 16, vcpu unlimited → 64': each limit given, from what it is to what it becomes."""

    def shown(value: Any) -> str:
        return "unlimited" if value is None else str(value)

    return ", ".join(f"{k} {shown(before.get(k))} → {shown(v)}" for k, v in after.items())


def limits_now(quota: Item) -> str:
    """The quota's limits as the prompt reads them ('gpu=8 vcpu=64'), to be edited."""
    return " ".join(f"{k}={v}" for k, v in (quota.get("limits") or {}).items() if v is not None)


def _stay(guests: int) -> str:
    return "1 guest stays" if guests == 1 else f"{guests} guests stay"


def _guests(source: FleetSource, host: Item, _value: Any) -> Item:
    return {"guests": len(source.host_guests(str(host["name"])))}


def _serving(source: FleetSource, instance: Item, _value: Any) -> Item:
    return {"dependents": source.instance_dependents(str(instance["id"]))}


def _held_there(source: FleetSource, pool: Item, tenant: Any) -> Item:
    owner = pool.get("owner")
    return {"dependents": source.offer_dependents(str(pool["id"]), str(tenant), owner=owner)}


def _dependents(facts: Item, lead: str) -> str:
    """The confirm's line naming what depends on the row (the API's list); the API's answer
    to the change decides whether it may go on."""
    found = facts.get("dependents")
    if found is None:
        return f"; {lead}: not told by this source"
    if not found:
        return ""
    named = ", ".join(
        f"{d['kind']} {d['name']}" + (f" ({d['state']})" if d.get("state") else "") for d in found
    )
    return f"; {lead}: {named}"


ACTIONS: tuple[Action, ...] = (
    # -- hosts -------------------------------------------------------------------------------
    Action(
        "drain", "hosts", "c", "Drain", "host", _named,
        lambda _h, _v, facts: f"{_stay(int(facts.get('guests', 0)))}, no new placements",
        lambda source, h, _v: source.set_draining(str(h["name"]), True),
        lambda h, _a: f"{_named(h)} is draining",
        look=_guests,
        together=lambda found: f"{_stay(sum(int(f.get('guests', 0)) for f in found))} on "
        "them, no new placements",
    ),
    Action(
        "undrain", "hosts", "u", "Undrain", "host", _named,
        lambda _h, _v, _f: "new instances may be placed on it again",
        lambda source, h, _v: source.set_draining(str(h["name"]), False),
        lambda h, _a: f"{_named(h)} is ready",
    ),
    # -- instances ---------------------------------------------------------------------------
    Action(
        "stop", "instances", "x", "Stop", "instance", _owned,
        lambda _i, _v, _f: "it stops; it keeps its host, GPUs and quota",
        lambda source, i, _v: source.stop_instance(str(i["id"])),
        _state,
    ),
    Action(
        "start", "instances", "t", "Start", "instance", _owned,
        lambda _i, _v, _f: "it runs again on its host",
        lambda source, i, _v: source.start_instance(str(i["id"])),
        _state,
    ),
    Action(
        "delete", "instances", "ctrl+d", "Delete", "instance", _owned,
        lambda _i, _v, facts: "its host, GPUs and quota are released; this cannot be undone"
        + _dependents(facts, "it serves"),
        lambda source, i, _v: source.delete_instance(str(i["id"])),
        lambda i, _a: f"{_named(i)} is deleted",
        look=_serving,
    ),
    Action(
        "resize", "instances", "z", "Resize", "instance", _owned,
        lambda i, flavor, _f: f"flavor {i.get('flavor') or '?'} → {flavor}, on the same host",
        lambda source, i, flavor: source.resize_instance(str(i["id"]), flavor),
        lambda i, a: f"{_named(i)} is now {a.get('flavor') or 'resized'}",
        ask=Ask("Resize to which flavor?", "a flavor of the instance's pool"),
        footer=False,
    ),
    # -- reservations ------------------------------------------------------------------------
    Action(
        "cancel", "reservations", "ctrl+d", "Cancel", "reservation",
        lambda r: f"{short_id(str(r['id']))} ({r.get('tenantId')})",
        lambda _r, _v, _f: "released now: its GPUs are freed and its quota refunded",
        lambda source, r, _v: source.cancel_reservation(str(r["id"])),
        lambda r, a: f"{short_id(str(r['id']))} is {a.get('state', 'released')}",
        label="Cancel reservation", keep="Keep",
    ),
    # -- jobs --------------------------------------------------------------------------------
    Action(
        "run_job", "jobs", "n", "Run", "job", lambda j: str(j["job"]),
        lambda _j, _v, _f: "it runs once now, due or not",
        lambda source, j, _v: source.run_job(str(j["job"])),
        lambda j, a: f"{j['job']}: {a.get('outcome')}"
        + (f" ({a['error']})" if a.get("error") else ""),
        label="Run now",
    ),
    # -- pools, flavors, quotas, services (their views declare ACTIONS = actions_for(…)) -------
    Action(
        "delete_flavor", "flavors", "ctrl+d", "Delete", "flavor",
        lambda f: f"{f.get('pool') or f.get('poolId')}/{_named(f)}",
        lambda _f, _v, _facts: "no new instance may use it; one any instance ever used is "
        "archived instead, and those instances keep running",
        lambda source, f, _v: source.delete_flavor(str(f["poolId"]), str(f["name"])),
        lambda f, a: f"{_named(f)} is {'archived' if a.get('archived') else 'deleted'}",
    ),
    Action(
        "offer", "pools", "o", "Offer", "pool", _owned,
        lambda _p, tenant, _f: f"tenant {tenant} may place in it",
        lambda source, p, tenant: source.offer_pool(str(p["id"]), tenant, owner=p.get("owner")),
        lambda p, a: f"{_named(p)} is offered to {', '.join(a.get('offeredTo') or []) or '-'}",
        ask=Ask("Offer to which tenant?", "tenant id"),
    ),
    Action(
        "unoffer", "pools", "O", "Unoffer", "pool", _owned,
        lambda _p, tenant, facts: f"tenant {tenant} may no longer place in it"
        + _dependents(facts, f"{tenant} holds there"),
        lambda source, p, tenant: source.unoffer_pool(str(p["id"]), tenant, owner=p.get("owner")),
        lambda p, a: f"{_named(p)} is offered to {', '.join(a.get('offeredTo') or []) or '-'}",
        ask=Ask("Take the offer back from which tenant?", "tenant id"),
        look=_held_there,
    ),
    Action(
        "edit_quota", "quotas", "e", "Set", "quota",
        lambda q: f"{q.get('tenantId')} in {q.get('pool') or q.get('poolId')}",
        lambda q, limits, _f: _limits_change(q.get("limits") or {}, limits),
        lambda source, q, limits: source.set_quota(
            str(q["tenantId"]), str(q.get("poolId") or q["pool"]), limits
        ),
        lambda _q, a: f"{a.get('tenantId')} in {a.get('pool')}: "
        f"{_limits_text(a.get('limits') or {}) or 'no limits'}",
        ask=Ask("New limits (none removes one)", "gpu=8 vcpu=64 memoryGiB=none", read_limits,
                limits_now),
        label="Set quota",
    ),
    Action(
        "deploy", "services", "p", "Deploy", "service", _owned,
        lambda _s, _v, _f: "it takes a spare instance of its size now",
        lambda source, s, _v: source.deploy_service(str(s["id"])),
        _state,
    ),
    Action(
        "undeploy", "services", "P", "Undeploy", "service", _owned,
        lambda _s, _v, _f: "the instance serving it is released",
        lambda source, s, _v: source.undeploy_service(str(s["id"])),
        _state,
        footer=False,  # the footer fits 80 columns; `?` and the palette list it
    ),
)  # fmt: skip


def actions_for(view: str) -> tuple[Action, ...]:
    """The actions a view offers, in the order the footer shows them."""
    return tuple(a for a in ACTIONS if a.view == view)


def find_action(name: str) -> Action:
    return next(a for a in ACTIONS if a.name == name)


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}."


def question(action: Action, rows: list[tuple[Item, Item]], value: Any) -> str:
    """The confirm's text: one row ("Drain host fra-07?" and what changes) or the marked rows
    listed; what changes is said once when it is the same for every row, else row by row."""
    effects = [action.effect(item, value, facts) for item, facts in rows]
    if len(rows) == 1:
        return f"{action.verb} {action.noun} {action.target(rows[0][0])}?\n{_sentence(effects[0])}"
    lines = [f"{action.verb} {plural(len(rows), action.noun)}?"]
    if action.together is not None:
        lines.append(_sentence(action.together([facts for _, facts in rows])))
        lines += [f"• {action.target(item)}" for item, _ in rows[:LISTED]]
    elif len(set(effects)) == 1:
        lines.append(_sentence(effects[0]))
        lines += [f"• {action.target(item)}" for item, _ in rows[:LISTED]]
    else:
        listed = zip(rows[:LISTED], effects[:LISTED], strict=True)
        lines += [f"• {action.target(item)}: {effect}" for (item, _), effect in listed]
    if len(rows) > LISTED:
        lines.append(f"… and {len(rows) - LISTED} more")
    return "\n".join(lines)
