"""The preemption preview: a form for capacity.preview and its answer (document 003, "Preview a preemption").

Nothing is reserved: the preview says whether the request fits now, on which
candidates, why not, and how many spot reservations would be preempted with
the time the request would start after their notice. A count, never ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static

from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import PoolKind
from bcfleet.errors import FleetError
from bcfleet.tui.format import clock_time, duration_text
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.source import NotAvailable, PreviewRequest
from bcfleet.tui.widgets.onoff import OnOff


def answer_text(answer: Mapping[str, Any], now: datetime) -> Text:
    """The preview's answer in words: fits, candidates, reason, and what preempting would do."""
    fits = bool(answer.get("fits"))
    text = Text()
    text.append("Fits now: ", style="bold")
    text.append("yes" if fits else "no", style="bold green" if fits else "bold red")
    candidates = answer.get("candidates") or []
    text.append("\nCandidates: ", style="bold")
    text.append(", ".join(_candidate(c) for c in candidates) if candidates else "none")
    if answer.get("reason"):
        text.append("\nReason: ", style="bold")
        text.append(str(answer["reason"]))
    preemptible = answer.get("preemptible")
    text.append("\nBy preempting spot work: ", style="bold")
    if not preemptible:
        why = answer.get("preemptReason")
        text.append("not needed" if fits else f"no ({why})" if why else "no")
        return text
    count = int(preemptible.get("reservations", 0))
    starts = datetime.fromtimestamp(int(preemptible["startsAt"]) / 1000, tz=UTC)
    text.append(
        f"{count} spot reservation{'s' if count != 1 else ''} would be preempted", style="yellow"
    )
    text.append(f"\nIt would start at {starts.strftime('%Y-%m-%d')} {clock_time(starts)} UTC")
    text.append(f" (in {duration_text((starts - now).total_seconds())}), after their notice.")
    return text


def _candidate(candidate: Any) -> str:
    if isinstance(candidate, Mapping):
        return str(
            candidate.get("name") or candidate.get("nodeId") or candidate.get("id") or candidate
        )
    if isinstance(candidate, list | tuple):
        return "+".join(_candidate(c) for c in candidate)
    return str(candidate)


class PreviewView(ViewScreen):
    TITLE = "Preemption preview"
    ABOUT = (
        "Asks capacity.preview whether a GPU request would fit (pool, GPUs on each node, "
        "duration such as 12h, nodes for a gang, spot or regular) and, for a regular request "
        "that does not fit now, how many spot reservations would be preempted and when it "
        "would start. Nothing is reserved. Enter in any field runs it."
    )
    AUTO_REFRESH = False
    CLOCK_DEPENDENT = False

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+r", "preview", "Preview")]

    class Answered(Message):
        def __init__(
            self, answer: Mapping[str, Any] | None, error: Exception | None, at: datetime | None
        ):
            super().__init__()
            self.answer, self.error, self.at = answer, error, at

    def compose_body(self) -> ComposeResult:
        with Vertical(id="preview"):
            with Horizontal(classes="field-row"):
                yield Label("Tenant", classes="field-label")
                yield Select[str]([], id="tenant", prompt="Choose a tenant", compact=True)
            with Horizontal(classes="field-row"):
                yield Label("Pool", classes="field-label")
                yield Select[str]([], id="pool", prompt="Choose a pool", compact=True)
            with Horizontal(classes="field-row"):
                yield Label("GPUs per node", classes="field-label")
                yield Input("4", id="gpus", restrict=r"[0-9]*", max_length=3, compact=True)
            with Horizontal(classes="field-row"):
                yield Label("Nodes", classes="field-label")
                yield Input("1", id="nodes", restrict=r"[0-9]*", max_length=4, compact=True)
            with Horizontal(classes="field-row"):
                yield Label("Duration", classes="field-label")
                yield Input("12h", id="duration", max_length=12, compact=True)
            with Horizontal(classes="field-row"):
                yield Label("Spot", classes="field-label")
                yield OnOff(False, id="spot")
            with Horizontal(id="actions"):
                yield Button("Preview", id="run", variant="primary", compact=True)
            yield Static(id="answer")

    def fetch(self) -> Any:
        tenants = [t["id"] for t in self.source.tenants()]
        pools = [p for p in self.source.pools() if p.get("kind") == PoolKind.VPS_HOST]
        return tenants, pools

    def show(self, data: Any) -> None:
        tenants, pools = data
        with self.prevent(Select.Changed):
            for select_id, options, wanted in (
                ("#tenant", [(t, t) for t in tenants], self.fleet_app.tenant or ROOT_TENANT),
                ("#pool", [(_pool_label(p), p["name"]) for p in pools], _gpu_pool(pools)),
            ):
                select: Select[str] = self.query_one(select_id, Select)
                current: str | None = select.value if isinstance(select.value, str) else None
                select.set_options(options)
                values = [v for _, v in options]
                keep = current if current in values else wanted
                if keep is not None and keep in values:
                    select.value = keep

    def reload_on_resume(self) -> bool:
        return self.data is None

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        yield SystemCommand(
            "Preview", "Ask capacity.preview with the form's values", self.action_preview
        )

    def request(self) -> PreviewRequest | str:
        """The form as a request, or what is wrong with it."""
        pool, tenant = (
            self.query_one("#pool", Select).value,
            self.query_one("#tenant", Select).value,
        )
        gpus, nodes = self.query_one("#gpus", Input).value, self.query_one("#nodes", Input).value
        duration = self.query_one("#duration", Input).value.strip()
        if not isinstance(pool, str) or not isinstance(tenant, str):
            return "Choose a tenant and a pool."
        if not gpus.isdigit() or int(gpus) < 1:
            return "GPUs per node must be a whole number of at least 1."
        if not nodes.isdigit() or int(nodes) < 1:
            return "Nodes must be a whole number of at least 1."
        if not duration:
            return "Enter a duration such as 12h or 30m."
        spot = self.query_one("#spot", OnOff).value
        return PreviewRequest(tenant, pool, int(gpus), duration, int(nodes), spot)

    def action_preview(self) -> None:
        request = self.request()
        if isinstance(request, str):
            self.query_one("#answer", Static).update(Text(request, style="bold"))
            return
        self.query_one("#answer", Static).update("Asking capacity.preview…")
        self._ask(request)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _ask(self, request: PreviewRequest) -> None:
        try:
            answer = self.source.preview(request)
            at = self.source.now()  # the run's time: its countdown and "updated" stamp
        except Exception as exc:  # noqa: BLE001 - shown under the form
            self.post_message(self.Answered(None, exc, None))
        else:
            self.post_message(self.Answered(answer, None, at))

    def on_preview_view_answered(self, message: Answered) -> None:
        out = self.query_one("#answer", Static)
        error = message.error
        if message.answer is not None and message.at is not None:
            out.update(answer_text(message.answer, message.at))
            self._good(message.at)  # a run that answered clears an old error and stamps its time
        elif isinstance(error, NotAvailable):
            out.update(Text(f"{error.area}: not available in this build.", style="bold"))
        elif isinstance(error, FleetError):
            out.update(Text(f"{error.code}: {error.message}", style="bold red"))
            self.freshness.disconnected, self.freshness.problem = False, None  # it answered
        else:
            out.update(Text(f"Could not ask: {error}", style="bold red"))
            self.show_failure(error or Exception("no answer"), disconnected=True, area=None)
        self.update_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id in ("gpus", "nodes", "duration"):
            event.stop()
            self.action_preview()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "run":
            self.action_preview()

    def focus_body(self) -> None:
        self.set_focus(self.query_one("#gpus", Input))


def _gpu_pool(pools: list[dict[str, Any]]) -> str | None:
    """The pool the form starts on: the first with GPUs, else the first."""
    names: list[str] = [p["name"] for p in pools if p.get("gpuModel")]
    names += [p["name"] for p in pools]
    return names[0] if names else None


def _pool_label(pool: Mapping[str, Any]) -> str:
    model = pool.get("gpuModel")
    return f"{pool['name']} ({model})" if model else f"{pool['name']} (no GPUs)"
