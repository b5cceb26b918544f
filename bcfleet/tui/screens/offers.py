"""Provider offers (`:offers`): what each provider account's provider sells, as
`fleet provider-accounts offers` lists it, deprecated and unavailable ones flagged.

Reading offers asks each provider, so the view does not refresh by itself: r reads
again. An account whose provider does not answer shows one row with the error's code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.format import DASH, Cell, croppable
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row


def offer_key(offer: Mapping[str, Any]) -> str:
    parts = (offer.get("tenantId"), offer.get("account"), offer.get("id"), offer.get("region"))
    return "/".join(str(p or "") for p in parts)


def status_cell(offer: Mapping[str, Any]) -> Cell:
    """error (bold), deprecated or unavailable (yellow), else available."""
    if offer.get("error"):
        return Text(str(offer["error"]), style="bold red", overflow="ellipsis")
    if offer.get("deprecated"):
        return Text("deprecated", style="yellow")
    if not offer.get("available", True):
        return Text("unavailable", style="yellow")
    return "available"


def price_text(offer: Mapping[str, Any]) -> str:
    price = offer.get("pricePerHour")
    return DASH if price is None else f"{float(price):.4f} {offer.get('currency') or ''}".strip()


def offer_row(offer: Mapping[str, Any], now: datetime) -> Row:
    del now
    status = status_cell(offer)
    cells: tuple[Cell, ...] = (
        croppable(f"{offer.get('account')} ({offer.get('tenantId')})"),
        str(offer.get("id") or DASH),
        str(offer.get("kind") or DASH),
        str(offer.get("region") or DASH),
        str(offer.get("vcpu", DASH)),
        str(offer.get("memoryGiB", DASH)),
        str(offer.get("diskGiB", DASH)),
        price_text(offer),
        status,
    )
    sort = (
        str(cells[0]), cells[1], cells[2], cells[3], offer.get("vcpu") or 0,
        offer.get("memoryGiB") or 0, offer.get("diskGiB") or 0,
        float(offer.get("pricePerHour") or 0), status.plain if isinstance(status, Text) else status,
    )  # fmt: skip
    return Row(offer_key(offer), cells, sort=sort)


class OffersView(TableView):
    TITLE = "Provider offers"
    ABOUT = (
        "What each provider account's provider sells: offer id, kind, region, vCPU, memory, "
        "disk, price per hour, and whether it is available, deprecated or unavailable (never "
        "pick those without seeing it). Reading asks the providers: r reads again. Copy an "
        "offer's numbers into a provider pool's flavor."
    )
    AUTO_REFRESH = False
    COLUMNS = (
        Column("account", "ACCOUNT", crop_to=12, name=True),
        Column("offer", "OFFER", name=True),
        Column("kind", "KIND", give_way=3),
        Column("region", "REGION"),
        Column("vcpu", "VCPU"),
        Column("memory", "MEM GiB"),
        Column("disk", "DISK GiB", give_way=2),
        Column("price", "PRICE/H", give_way=1),
        Column("status", "STATUS", crop_to=12),
    )
    NOUN = ("offer", "offers")

    def fetch(self) -> Any:
        return self.source.offers()

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return [offer_row(o, now) for o in data]

    def item(self, key: str) -> Mapping[str, Any] | None:
        data = self.data if isinstance(self.data, list) else []
        return next((o for o in data if offer_key(o) == key), None)

    def row_name(self, key: str) -> str:
        item = self.item(key) or {}
        return str(item.get("id") or key)

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        del key
        return dict(item)

    def open_row(self, key: str) -> None:
        self.describe_row(key)
