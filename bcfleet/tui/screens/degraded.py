"""Degraded placements: every instance with a PlacementDegraded condition, its reason, host and flavor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bcfleet.tui.format import DASH, age, croppable
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("instance", "INSTANCE", name=True),
    Column("tenant", "TENANT", give_way=2, name=True),
    Column("host", "HOST", name=True),
    Column("flavor", "FLAVOR", give_way=1, name=True),
    Column("reason", "REASON", crop_to=16),
    Column("since", "SINCE"),
)


def degraded_condition(instance: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in instance.get("conditions") or []:
        if (
            condition.get("type") == "PlacementDegraded"
            and condition.get("status", "True") == "True"
        ):
            return dict(condition)
    return None


def degraded_row(instance: Mapping[str, Any], now: Any) -> Row | None:
    condition = degraded_condition(instance)
    if condition is None:
        return None
    since, seconds = age(condition.get("at") or condition.get("lastTransitionTime"), now)
    reason = croppable(str(condition.get("reason", DASH)), style="yellow")
    host = str(instance.get("host") or instance.get("nodeId") or DASH)
    flavor = str(instance.get("flavor") or instance.get("flavorId") or DASH)
    return Row(
        key=instance["id"],
        cells=(
            instance.get("name") or instance["id"],
            instance.get("tenantId", DASH),
            host,
            flavor,
            reason,
            since,
        ),
        sort=(
            instance.get("name") or instance["id"],
            instance.get("tenantId"),
            host,
            flavor,
            reason.plain,
            seconds,
        ),
    )


class DegradedView(TableView):
    TITLE = "Degraded placements"
    ABOUT = (
        "Instances running floating although their flavor asked for numaAffine or pinned "
        "(a PlacementDegraded condition): the reason, the host and the flavor. Reasons: "
        "NoNumaTopology, NoNumaNodeFits, GpuNumaUnknown, NumaMemoryTooSmall, NotEnoughFreeCpus."
    )
    COLUMNS = COLUMNS
    NOUN = ("degraded instance", "degraded instances")

    def open_row(self, key: str) -> None:
        self.describe_row(key)

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        from bcfleet.tui.screens.describe import describe_object

        del item
        return describe_object(self.source, "instance", self.source.instance(key))

    def fetch(self) -> Any:
        return self.source.degraded()

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return (row for row in (degraded_row(i, now) for i in data) if row is not None)
