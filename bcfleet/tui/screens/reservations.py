"""Reservations: pending ones with their counted reasons, spot or regular, during, and preemption countdowns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.format import DASH, countdown, short_time
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("id", "ID"),
    Column("tenant", "TENANT"),
    Column("pool", "POOL"),
    Column("gpus", "GPUS"),
    Column("kind", "KIND"),
    Column("state", "STATE"),
    Column("during", "DURING"),
    Column("deadline", "DEADLINE"),
    Column("reason", "REASON"),
)

STATE_ORDER = {"preempting": 0, "pending": 1, "placed": 2, "binding": 3, "active": 4, "released": 5}


def short_id(rid: str) -> str:
    """rsv_01JD…7K2Q: the prefix and the last six characters, enough to tell rows apart."""
    prefix, _, rest = rid.partition("_")
    return rid if len(rest) <= 8 else f"{prefix}_…{rest[-6:]}"


def gpu_count(reservation: Mapping[str, Any]) -> int:
    devices = reservation.get("devices") or []
    count = sum(int(d.get("count", 0)) for d in devices if d.get("class", "gpu") == "gpu")
    return count or int(reservation.get("gpus") or 0)


def condition(reservation: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in reservation.get("conditions") or [] if c.get("type") == kind), None)


def deadline_of(reservation: Mapping[str, Any]) -> str | None:
    preempted = condition(reservation, "Preempted")
    if preempted is None:
        return None
    return (
        reservation.get("deadline")
        or preempted.get("at")
        or (reservation.get("during") or {}).get("end")
    )


def state_cell(reservation: Mapping[str, Any], deadline: str | None) -> Text:
    state = str(reservation.get("state", DASH))
    if deadline and state != "released":
        return Text(f"{state}, preempted", style="bold red")
    style = {"pending": "yellow", "active": "green", "released": "dim"}.get(state, "")
    return Text(state, style=style)


def reason_text(reservation: Mapping[str, Any]) -> str:
    for kind in ("Unschedulable", "Preempted"):
        found = condition(reservation, kind)
        if found is not None:
            return str(found.get("message") or found.get("reason") or kind)
    return DASH


def during_text(reservation: Mapping[str, Any]) -> str:
    during = reservation.get("during") or {}
    start, end = during.get("start"), during.get("end")
    if not start:
        return "not placed" if reservation.get("state") == "pending" else DASH
    return f"{short_time(start)} → {short_time(end)}"


def reservation_row(reservation: Mapping[str, Any], pools: Mapping[str, str], now: datetime) -> Row:
    deadline = deadline_of(reservation)
    left, seconds = (
        countdown(deadline, now) if deadline else (Text(DASH, style="dim"), float("inf"))
    )
    gpus = gpu_count(reservation)
    nodes = int(reservation.get("nodes") or 1)
    kind = Text("spot", style="cyan") if reservation.get("spot") else Text("regular")
    state = state_cell(reservation, deadline)
    pool = pools.get(reservation.get("poolId", ""), reservation.get("poolId", DASH))
    rid = reservation["id"]
    reason = reason_text(reservation)
    during = during_text(reservation)
    return Row(
        key=rid,
        cells=(
            short_id(rid),
            reservation.get("tenantId", DASH),
            pool,
            f"{gpus}×{nodes}" if nodes > 1 else str(gpus),
            kind,
            state,
            during,
            left,
            reason,
        ),
        sort=(
            rid,
            reservation.get("tenantId"),
            pool,
            gpus * nodes,
            kind.plain,
            STATE_ORDER.get(state.plain.split(",")[0], 9),
            (reservation.get("during") or {}).get("start") or "",
            seconds,
            reason,
        ),
        search=tuple(
            t.lower()
            for t in (
                rid,
                str(reservation.get("tenantId")),
                pool,
                str(gpus),
                kind.plain,
                state.plain,
                during,
                left.plain,
                reason,
            )
        ),
    )


class ReservationsView(TableView):
    TITLE = "Reservations"
    ABOUT = (
        "GPU reservations: pending ones with their counted reasons, spot or regular, their "
        "window (during), and for spot reservations being preempted the deadline with a "
        "countdown. GPUS reads 4×2 for a gang of 4 GPUs on each of 2 nodes."
    )
    COLUMNS = COLUMNS
    NOUN = ("reservation", "reservations")

    def fetch(self) -> Any:
        reservations = self.source.reservations()
        pools = {p["id"]: p["name"] for p in self.source.pools()}
        return reservations, pools

    def rows(self, data: Any) -> Iterable[Row]:
        reservations, pools = data
        now = self.now or self.source.now()
        rows = [reservation_row(r, pools, now) for r in reservations]
        rows.sort(key=lambda r: (r.sort[5], r.sort[6], r.key))
        return rows
