"""Webhooks (`:webhooks`) and, on Enter, a webhook's deliveries: each tenant's URLs, the event
types they take, and what was sent, is waiting or died. A webhook's secret is never read:
webhooks.list does not carry it (it is shown once, when the webhook is created)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, Cell, age, croppable, short_id
from bcfleet.tui.screens.objects import ObjectsView
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

DELIVERY_STYLE = {"delivered": "green", "pending": "yellow", "dead": "bold red"}


def webhook_row(hook: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(hook.get("createdAt"), now, short=True)
    types = ", ".join(hook.get("eventTypes") or ()) or "every event"
    active: Cell = "yes" if hook.get("active", True) else Text("no", style="dim")
    cells: tuple[Cell, ...] = (
        str(hook.get("tenantId") or DASH),
        croppable(str(hook["url"])),
        croppable(types),
        active,
        since,
    )
    sort = (cells[0], str(hook["url"]), types, str(active), seconds)
    return Row(str(hook["id"]), cells, sort=sort)


class WebhooksView(ObjectsView):
    TITLE = "Webhooks"
    ABOUT = (
        "Every webhook you may see: its tenant, URL, the event types it takes (none listed: "
        "every event) and its age. Enter shows its deliveries; d describes it. Its secret is "
        "never shown (only once, when it is created)."
    )
    COLUMNS = (
        Column("tenant", "TENANT", give_way=2, name=True),
        Column("url", "URL", crop_to=24),
        Column("events", "EVENTS", crop_to=12),
        Column("active", "ACTIVE", give_way=1),
        Column("age", "AGE", give_way=3),
    )
    NOUN = ("webhook", "webhooks")
    ACTIONS = actions_for("webhooks")
    KIND = "webhook"
    READ = "webhooks"
    row_of = staticmethod(webhook_row)

    def row_name(self, key: str) -> str:
        item = self.item(key) or {}
        return str(item.get("url") or short_id(key))

    def open_row(self, key: str) -> None:
        item = self.item(key)
        if item is not None:
            self.app.push_screen(DeliveriesView(dict(item)))


def delivery_row(delivery: Mapping[str, Any], now: datetime) -> Row:
    state = str(delivery.get("state") or DASH)
    since, seconds = age(delivery.get("createdAt"), now, short=True)
    status = delivery.get("lastStatus")
    answer = str(status) if status is not None else str(delivery.get("lastError") or DASH)
    cells: tuple[Cell, ...] = (
        str(delivery["id"]),
        str(delivery.get("eventType") or DASH),
        Text(state, style=DELIVERY_STYLE.get(state, "")),
        str(delivery.get("attempts", 0)),
        croppable(answer),
        since,
    )
    sort = (int(delivery["id"]), cells[1], state, int(delivery.get("attempts") or 0), answer,
            seconds)  # fmt: skip
    return Row(str(delivery["id"]), cells, sort=sort)


class DeliveriesView(TableView):
    """Webhooks › one webhook's deliveries, newest first (q or Esc goes back)."""

    TITLE = "Deliveries"
    ABOUT = (
        "A webhook's latest deliveries, newest first: the event type, the state (pending, "
        "delivered, dead after its last try), the tries so far and the last answer (an HTTP "
        "status, or the error). Enter or d shows every field."
    )
    COLUMNS = (
        Column("id", "ID"),
        Column("type", "EVENT TYPE", name=True),
        Column("state", "STATE"),
        Column("attempts", "TRIES", give_way=1),
        Column("answer", "LAST ANSWER", crop_to=12),
        Column("age", "AGE", give_way=2),
    )
    NOUN = ("delivery", "deliveries")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "close", "Back")]

    def __init__(self, webhook: Mapping[str, Any]) -> None:
        super().__init__()
        self.webhook = webhook

    def crumbs(self) -> list[str]:
        return ["Webhooks", str(self.webhook.get("url") or short_id(str(self.webhook["id"])))]

    def fetch(self) -> Any:
        return self.source.webhook_deliveries(str(self.webhook["id"]))

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return [delivery_row(d, now) for d in data]

    def item(self, key: str) -> Mapping[str, Any] | None:
        data = self.data if isinstance(self.data, list) else []
        return next((d for d in data if str(d.get("id")) == key), None)

    def row_name(self, key: str) -> str:
        return f"delivery {key}"

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        del key
        return dict(item)

    def open_row(self, key: str) -> None:
        self.describe_row(key)

    def action_close(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
