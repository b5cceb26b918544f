"""Reservations: pending ones with their counted reasons, spot or regular, during, and preemption countdowns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.domain.states import ReservationState
from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, DIM_DASH, countdown, croppable, parse_stamp, short_id
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

# At 80 columns KIND, then ID, TENANT and POOL give way; STATE, WHEN, DURING and REASON stay.
COLUMNS = (
    Column("id", "ID"),
    Column("tenant", "TENANT", give_way=2, name=True),
    Column("pool", "POOL", give_way=1, name=True),
    Column("gpus", "GPUS"),
    Column("kind", "KIND", give_way=4),
    Column("state", "STATE"),
    Column("when", "WHEN"),
    Column("during", "DURING"),
    Column("reason", "REASON", crop_to=12),
)

PREEMPTED = "preempted"
"""What the console calls a spot reservation running out its notice (shown_state)."""
STATE_ORDER: dict[str, int] = {
    PREEMPTED: 0,
    ReservationState.PENDING: 1,
    ReservationState.PLACED: 2,
    ReservationState.BINDING: 3,
    ReservationState.ACTIVE: 4,
    ReservationState.RELEASED: 5,
}
"""The view's own order: reservations losing their GPUs first, then those waiting for some."""
STATE_STYLE: dict[str, str] = {
    ReservationState.PENDING: "yellow",
    ReservationState.ACTIVE: "green",
    ReservationState.RELEASED: "dim",
}


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


def shown_state(reservation: Mapping[str, Any]) -> str:
    """The state the console shows, in the list and in describe alike: 'preempted' for spot
    work running out its notice (stored as placed, binding or active until its deadline; REASON
    says by whom), else the stored state."""
    state = str(reservation.get("state", DASH))
    if deadline_of(reservation) and state != ReservationState.RELEASED:
        return PREEMPTED
    return state


def state_in_full(reservation: Mapping[str, Any]) -> str:
    """Describe's state: the shown state, and the stored one when they differ."""
    shown, stored = shown_state(reservation), str(reservation.get("state", DASH))
    return shown if shown == stored else f"{shown} ({stored} until its deadline)"


def state_cell(reservation: Mapping[str, Any]) -> Text:
    state = shown_state(reservation)
    style = "bold red" if state == PREEMPTED else STATE_STYLE.get(state, "")
    return Text(state, style=style)


def reason_text(reservation: Mapping[str, Any]) -> str:
    for kind in ("Unschedulable", "Preempted"):
        found = condition(reservation, kind)
        if found is not None:
            return str(found.get("message") or found.get("reason") or kind)
    return DASH


def during_text(reservation: Mapping[str, Any], now: datetime) -> str:
    """'10:00 → 22:00' today, 'MM-DD HH:MM' for other days; 'not placed' while pending."""
    during = reservation.get("during") or {}
    start, end = during.get("start"), during.get("end")
    if not start:
        return "not placed" if reservation.get("state") == ReservationState.PENDING else DASH
    return f"{day_time(start, now)} → {day_time(end, now)}"


def day_time(when: str | None, now: datetime) -> str:
    if not when:
        return DASH
    at = parse_stamp(when)
    return at.strftime("%H:%M") if at.date() == now.date() else at.strftime("%m-%d %H:%M")


def when_cell(
    reservation: Mapping[str, Any], deadline: str | None, now: datetime
) -> tuple[Text, float]:
    """The next moment that matters, counted down: a preempted one's deadline, a start, an end."""
    during = reservation.get("during") or {}
    state = reservation.get("state")
    if deadline and state != ReservationState.RELEASED:
        left, seconds = countdown(deadline, now)
        return Text("deadline ", style=left.style).append_text(left), seconds
    if state == ReservationState.PLACED and during.get("start"):
        left, seconds = countdown(during["start"], now)
        if seconds <= 0:  # the start passed and the lifecycle job has not activated it yet
            return Text("starting now"), seconds
        return Text(f"starts {left.plain}"), seconds
    if state in (ReservationState.ACTIVE, ReservationState.BINDING) and during.get("end"):
        left, seconds = countdown(during["end"], now)
        return Text(f"ends {left.plain}"), seconds
    return DIM_DASH, float("inf")


def reservation_row(reservation: Mapping[str, Any], pools: Mapping[str, str], now: datetime) -> Row:
    deadline = deadline_of(reservation)
    left, seconds = when_cell(reservation, deadline, now)
    gpus = gpu_count(reservation)
    nodes = int(reservation.get("nodes") or 1)
    kind = Text("spot", style="cyan") if reservation.get("spot") else Text("regular")
    state = state_cell(reservation)
    pool = pools.get(reservation.get("poolId", ""), reservation.get("poolId", DASH))
    rid = reservation["id"]
    reason = reason_text(reservation)
    during = during_text(reservation, now)
    return Row(
        key=rid,
        cells=(
            short_id(rid),
            reservation.get("tenantId", DASH),
            pool,
            f"{gpus}×{nodes}" if nodes > 1 else str(gpus),
            kind,
            state,
            left,
            during,
            croppable(reason),
        ),
        sort=(
            rid,
            reservation.get("tenantId"),
            pool,
            gpus * nodes,
            kind.plain,
            STATE_ORDER.get(state.plain, 9),
            seconds,
            (reservation.get("during") or {}).get("start") or "",
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
                left.plain,
                during,
                reason,
            )
        ),
    )


class ReservationsView(TableView):
    TITLE = "Reservations"
    ABOUT = (
        "GPU reservations: pending ones with their counted reasons, spot or regular, their "
        "window (during), and WHEN counts down to what comes next: the deadline of a spot "
        "reservation being preempted, the start of a placed one, the end of an active one. "
        "GPUS reads 4×2 for a gang of 4 GPUs on each of 2 nodes. Enter opens the host it "
        "holds GPUs on; d describes it."
    )
    COLUMNS = COLUMNS
    NOUN = ("reservation", "reservations")
    ACTIONS = actions_for("reservations")

    def open_row(self, key: str) -> None:
        """Enter: the host the reservation holds GPUs on (the first of a gang's, said so); one
        not placed on a host is described."""
        reservation = self.item(key)
        nodes = [str(n) for n in (reservation or {}).get("nodeIds") or ()]
        if not nodes:
            self.describe_row(key)
            return
        if len(nodes) > 1:
            self.notify(
                f"A gang on {len(nodes)} hosts: the first is shown; d describes the "
                "reservation with every host.",
                title="Reservation",
            )
        self.fleet_app.open_host(nodes[0], short_id(nodes[0]))

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        from bcfleet.tui.screens.describe import describe_object

        del item
        reservation = self.source.reservation(key)
        shown = describe_object(self.source, "reservation", reservation)
        return {**shown, "state": state_in_full(reservation)}  # the list's rule, said in full

    def item(self, key: str) -> Any:
        reservations = self.data[0] if self.data else ()
        return next((r for r in reservations if r["id"] == key), None)

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
