"""`n` for what a FleetConfig does not declare: services, webhooks and tokens, each from a YAML
template in $EDITOR (as tui/editing.py opens one), instances and reservations from a form
(screens/form.py); each confirmed, then made by its own API call.

The saved file is read as YAML 1.2 (reconcile/yamldoc.py); a syntax error, an unknown field
or a missing one reopens the editor with the problem at file:line:col, and so does the API's
INVALID_INPUT. A webhook's secret and a token are shown once, in a window of their own that
is never kept (not a notification), and never again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.errors import InvalidInputError
from bcfleet.reconcile.model import Diagnostic
from bcfleet.reconcile.yamldoc import START, Problem, YamlProblems, json_path, parse_yaml
from bcfleet.tui.editing import EditSession, local_source
from bcfleet.tui.screens.acting import error_text
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.form import Field, FormScreen
from bcfleet.tui.screens.secret import ShownOnce
from bcfleet.tui.source import LocalSource

if TYPE_CHECKING:
    from bcfleet.tui.screens.base import ViewScreen

Values = Mapping[str, Any]


def _first_tenant(source: LocalSource, row: Values) -> str:
    if row.get("tenantId"):
        return str(row["tenantId"])
    tenants = [t["id"] for t in source.tenants() if t["id"] != ROOT_TENANT]
    return tenants[0] if tenants else ROOT_TENANT


def _service(source: LocalSource, values: Values) -> Mapping[str, Any]:
    return source.api.services.create(
        source.credential,
        tenant_id=str(values["tenant"]),
        workspace=str(values["workspace"]),
        name=str(values["name"]),
        hosting=str(values.get("hosting") or "serverless"),
        size=values.get("size"),
        environment=values.get("environment"),
    )


def _webhook(source: LocalSource, values: Values) -> Mapping[str, Any]:
    return source.api.webhooks.create(
        source.credential,
        tenant_id=values.get("tenant"),
        url=str(values["url"]),
        event_types=[str(t) for t in values.get("eventTypes") or []],
    )


def _token(source: LocalSource, values: Values) -> Mapping[str, Any]:
    return source.api.iam.create_token(
        source.credential,
        tenant_id=str(values["tenant"]),
        name=str(values["name"]),
        role=str(values.get("role") or "member"),
        expires_in=values.get("expiresIn"),
    )


@dataclass(frozen=True)
class Maker:
    """How `n` makes one kind: its template, its fields (True: required), the call, the words."""

    kind: str
    fields: Mapping[str, bool]
    template: Callable[[LocalSource, Values], str]
    make: Callable[[LocalSource, Values], Mapping[str, Any]]
    said: Callable[[Mapping[str, Any]], str]
    secret: str | None = None
    """The answer's field shown once (a token, a webhook's signing secret)."""


MAKERS: dict[str, Maker] = {
    "service": Maker(
        "service",
        {"tenant": True, "workspace": True, "name": True, "hosting": False, "size": False,
         "environment": False},
        lambda source, row: f"tenant: {_first_tenant(source, row)}\nworkspace: default\n"
        "name: new-service\nhosting: serverless\n",
        _service,
        lambda a: f"Service {a.get('workspace')}/{a.get('name')} is made (undeployed).",
    ),
    "webhook": Maker(
        "webhook",
        {"tenant": False, "url": True, "eventTypes": False},
        lambda _source, _row: "url: https://hooks.example.com/bcfleet\neventTypes: []\n",
        _webhook,
        lambda a: f"Webhook {a.get('id')} is registered for {a.get('url')}.",
        secret="secret",
    ),
    "token": Maker(
        "token",
        {"tenant": True, "name": True, "role": False, "expiresIn": False},
        lambda source, row: f"tenant: {_first_tenant(source, row)}\nname: new-principal\n"
        "role: member\nexpiresIn: 30d\n",
        _token,
        lambda a: f"Token {a.get('id')} is made for {(a.get('principal') or {}).get('name')}.",
        secret="token",
    ),
}  # fmt: skip


def read_values(text: str, file: str, maker: Maker) -> dict[str, Any]:
    """The saved template's fields; INVALID_INPUT with each problem at file:line:column."""
    try:
        document = parse_yaml(text)
    except YamlProblems as exc:
        raise _invalid(file, [(p, p.position or START) for p in exc.problems]) from None
    data = document.data
    if not isinstance(data, Mapping):
        raise _invalid(file, [(Problem((), f"a {maker.kind} is a mapping of fields"), START)])
    problems = [
        (Problem((key,), f"unknown field {key!r}; expected {', '.join(maker.fields)}"),
         document.locate((key,), at_key=True))
        for key in data
        if key not in maker.fields
    ]  # fmt: skip
    problems += [
        (Problem((), f"missing field {name!r}"), START)
        for name, required in maker.fields.items()
        if required and data.get(name) in (None, "")
    ]
    if problems:
        raise _invalid(file, problems)
    return dict(data)


def _invalid(file: str, problems: list[tuple[Problem, Any]]) -> InvalidInputError:
    found = [
        Diagnostic(file, at.line, at.column, json_path(p.path), p.message) for p, at in problems
    ]
    return InvalidInputError(
        "\n".join(d.format() for d in found), {"errors": [d.to_json() for d in found]}
    )


class MakeSession(EditSession):
    """A template of a kind FleetConfig does not declare: confirmed, then made by the API."""

    def __init__(self, view: ViewScreen, source: LocalSource, maker: Maker, text: str) -> None:
        super().__init__(view, source, f"new-{maker.kind}", text)
        self.maker = maker

    def saved(self, text: str) -> None:
        try:
            values = read_values(text, str(self.path), self.maker)
        except InvalidInputError as error:
            self.reopen(error)
            return
        question = f"Create this {self.maker.kind}?\n\n{text.strip()}"

        def answer(yes: bool | None) -> None:
            if not yes:
                self.end(f"No {self.maker.kind} made: nothing changed.")
                return
            self.app.run_worker(lambda: self._make(values), thread=True, group="edit")

        self.app.push_screen(Confirm(question, "Create"), answer)

    def _make(self, values: Values) -> None:
        try:
            answer = self.maker.make(self.source, values)
        except InvalidInputError as error:
            self.app.call_from_thread(self.reopen, _as_lines(error))
            return
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            self.app.call_from_thread(self.end, error_text(error), error=True)
            return
        self.app.call_from_thread(self._made, answer)

    def _made(self, answer: Mapping[str, Any]) -> None:
        said = self.maker.said(answer)
        if self.maker.secret and answer.get(self.maker.secret):
            self.app.push_screen(ShownOnce(said, self.maker.secret, str(answer[self.maker.secret])))
            self.end("")
        else:
            self.end(said)
        self.view.request_refresh(force=True)


def _as_lines(error: InvalidInputError) -> InvalidInputError:
    """The API's INVALID_INPUT as the header's lines (it has no position in the file)."""
    return InvalidInputError(f"INVALID_INPUT: {error.message}")


def make_new(view: ViewScreen, kind: str, row: Values | None = None) -> None:
    """`n` (or `:new KIND`) for a kind of MAKERS: its template in the editor."""
    maker = MAKERS[kind]
    source = local_source(view, "Creating")
    if source is None:
        return

    def read() -> None:
        try:
            text = maker.template(source, row or {})
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(view.notify, error_text(error), severity="error")
            return
        note = f"A new {kind} (made by the API, not a FleetConfig): fill it in, save and quit."
        view.app.call_from_thread(lambda: MakeSession(view, source, maker, text).open([note]))

    view.app.run_worker(read, thread=True, group="edit")


# -- instances and reservations: a form, not a template -------------------------------------------


@dataclass(frozen=True)
class FormMaker:
    """How `n` makes an instance or a reservation: the form's fields, the call, the words."""

    kind: str
    fields: Callable[[LocalSource, Values], list[Field]]
    make: Callable[[LocalSource, Mapping[str, str]], Mapping[str, Any]]
    said: Callable[[Mapping[str, Any]], str]


def _pool_id(source: LocalSource, name: str) -> str:
    """A pool's id from its name (or its id); the API says NOT_FOUND for neither."""
    return next((str(p["id"]) for p in source.pools() if name in (p["name"], p["id"])), name)


def _pool_of(source: LocalSource, row: Values) -> str:
    if row.get("pool"):
        return str(row["pool"])
    pools = [p["name"] for p in source.pools()]
    return pools[0] if pools else ""


def _instance_fields(source: LocalSource, row: Values) -> list[Field]:
    return [
        Field("tenant", "Tenant", _first_tenant(source, row)),
        Field("pool", "Pool", _pool_of(source, row)),
        Field("flavor", "Flavor", str(row.get("flavor") or ""), "a flavor of the pool"),
        Field("name", "Name (optional)", "", "web-1"),
    ]


def _instance(source: LocalSource, values: Mapping[str, str]) -> Mapping[str, Any]:
    return source.api.instances.create(
        source.credential,
        tenant_id=values["tenant"],
        pool_id=_pool_id(source, values["pool"]),
        flavor=values["flavor"],
        name=values.get("name") or None,
    )


def _reservation_fields(source: LocalSource, row: Values) -> list[Field]:
    return [
        Field("tenant", "Tenant", _first_tenant(source, row)),
        Field("pool", "Pool", _pool_of(source, row)),
        Field("gpus", "GPUs", "1"),
        Field("duration", "Duration", "1h", "30m, 2h, 1d"),
        Field("start", "Start (empty: now)", "", "e.g. 2026-12-06T14:00:00Z"),
        Field("spot", "Spot (yes/no)", "no"),
    ]


def _whole(name: str, text: str) -> int:
    if not text.isdigit():
        raise InvalidInputError(f"{name}: {text!r} is not a whole number", {"field": name})
    return int(text)


def _reservation(source: LocalSource, values: Mapping[str, str]) -> Mapping[str, Any]:
    return source.api.reservations.create(
        source.credential,
        tenant_id=values["tenant"],
        pool_id=_pool_id(source, values["pool"]),
        gpus=_whole("GPUs", values["gpus"]),
        duration=values["duration"],
        start=values.get("start") or None,
        spot=values.get("spot", "").lower() in ("y", "yes", "true", "1"),
    )


FORMS: dict[str, FormMaker] = {
    "instance": FormMaker(
        "instance",
        _instance_fields,
        _instance,
        lambda a: f"Instance {a.get('name') or a.get('id')} is {a.get('state')}.",
    ),
    "reservation": FormMaker(
        "reservation",
        _reservation_fields,
        _reservation,
        lambda a: f"Reservation {a.get('id')} is {a.get('state')}.",
    ),
}


def fill_in(view: ViewScreen, kind: str, row: Values | None = None) -> None:
    """`n` on Instances or Reservations: the form, a confirm, then the API's create."""
    maker = FORMS[kind]
    source = local_source(view, "Creating")
    if source is None:
        return

    def read() -> None:
        try:
            fields = maker.fields(source, row or {})
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(view.notify, error_text(error), severity="error")
            return
        view.app.call_from_thread(
            view.app.push_screen, FormScreen(f"A new {kind}", fields), answered
        )

    def answered(values: dict[str, str] | None) -> None:
        if not values:
            return
        shown = "\n".join(f"{k}: {v}" for k, v in values.items() if v)

        def confirmed(yes: bool | None) -> None:
            if yes:
                view.app.run_worker(lambda: made(values), thread=True, group="edit")

        view.app.push_screen(Confirm(f"Create this {kind}?\n\n{shown}", "Create"), confirmed)

    def made(values: dict[str, str]) -> None:
        try:
            answer = maker.make(source, values)
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(
                view.notify, error_text(error), title="Not created", severity="error", timeout=10
            )
            return
        view.app.call_from_thread(view.notify, maker.said(answer), timeout=10)
        view.app.call_from_thread(view.request_refresh, force=True)

    view.app.run_worker(read, thread=True, group="edit")
