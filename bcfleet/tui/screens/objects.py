"""The base of the console's object lists (pools, flavors, tenants, …): rows from one source read.

Enter and d describe the row (screens/describe.py); `row_of` is the view's pure part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Row


class ObjectsView(TableView):
    """A list of one kind of object, read in the view's worker by READ, one row each."""

    READ: ClassVar[str] = ""
    """The FleetSource method that lists the objects."""

    @staticmethod
    def row_of(item: Mapping[str, Any], now: datetime, /) -> Row:
        raise NotImplementedError

    def fetch(self) -> Any:
        read: Callable[[], Sequence[Mapping[str, Any]]] = getattr(self.source, self.READ)
        return read()

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return [self.row_of(item, now) for item in data]

    def item(self, key: str) -> Mapping[str, Any] | None:
        data = self.data if isinstance(self.data, list) else []
        return next((i for i in data if key_of(i) == key), None)

    def open_row(self, key: str) -> None:
        self.describe_row(key)


def key_of(item: Mapping[str, Any]) -> str:
    """A row's key: the object's id, or tenant/pool for objects that have none (quotas)."""
    if "id" in item:
        return str(item["id"])
    return f"{item.get('tenantId')}/{item.get('poolId')}"
