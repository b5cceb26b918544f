"""A view's actions at work: its keys, the value asked for, the confirm, the worker, the results.

An action applies to what is visible: the marked rows the filter shows, or the
row under the cursor when it shows none; marked rows the filter hides are left out,
and the confirm and the status line say how many. Facts the confirm needs (a host's
guests) and the change itself are read and made in a thread worker, never on the UI
thread; each row's answer, or its error's code and message, is said when the worker
is done. Under
--read-only the keys are gone from the footer, the keys panel and the palette,
and pressing one says that the dashboard is read-only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events, work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from bcfleet.errors import FleetError
from bcfleet.tui.actions import Action, Item, find_action, question
from bcfleet.tui.screens.ask import AskValue
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm

READ_ONLY = "Read-only: {verb} is refused (the dashboard was opened with --read-only)."


@dataclass(frozen=True)
class PendingAction:
    """An action about to run: the rows (key, item, facts looked up) and the value asked for."""

    action: Action
    rows: tuple[tuple[str, Item, Item], ...]
    value: Any = None
    hidden: int = 0
    """Marked rows the filter hides: left out, and the confirm says so."""

    @property
    def question(self) -> str:
        asked = question(self.action, [(item, facts) for _, item, facts in self.rows], self.value)
        return asked + left_out(self.hidden)


def left_out(hidden: int) -> str:
    """The confirm's last line when the filter hides marked rows: they are not acted on."""
    if not hidden:
        return ""
    rows = "1 marked row is" if hidden == 1 else f"{hidden} marked rows are"
    return f"\n{rows} hidden by the filter and left out."


@dataclass(frozen=True)
class Outcome:
    """One row's result: what it says, and whether the change was made."""

    key: str
    ok: bool
    text: str


def error_text(error: Exception) -> str:
    """CODE: message for an API error; the first line of anything else (a refused connection)."""
    if isinstance(error, FleetError):
        return f"{error.code}: {error.message}"
    lines = str(error).strip().splitlines()
    return f"ERROR: {lines[0] if lines else type(error).__name__}"


class ActingView(ViewScreen):
    """A view with actions (ACTIONS, from bcfleet/tui/actions.py); subclasses say which rows."""

    ACTIONS: ClassVar[tuple[Action, ...]] = ()

    class Prepared(Message):
        def __init__(self, plan: PendingAction) -> None:
            super().__init__()
            self.plan = plan

    class Finished(Message):
        def __init__(self, plan: PendingAction, outcomes: list[Outcome]) -> None:
            super().__init__()
            self.plan, self.outcomes = plan, outcomes

    class Refused(Message):
        """The facts for the confirm could not be read: nothing was asked, nothing changed."""

        def __init__(self, action: Action, error: Exception) -> None:
            super().__init__()
            self.action, self.error = action, error

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each declared action becomes a binding of the class itself (so the keys panel,
        # which lists the bindings bcfleet declares, shows it), before Textual merges them.
        declared = cls.__dict__.get("ACTIONS", ())
        if declared:
            bindings = [
                Binding(a.key, a.binding_action, a.key_label, show=a.footer) for a in declared
            ]
            cls.BINDINGS = [*cls.__dict__.get("BINDINGS", []), *bindings]
        super().__init_subclass__(**kwargs)

    def __init__(self) -> None:
        super().__init__()
        self.acting: PendingAction | None = None
        """The action whose worker runs now (one at a time)."""
        self.outcomes: list[Outcome] = []
        """The last action's results, row by row."""

    # -- what subclasses give -------------------------------------------------------------------

    def item(self, key: str) -> Item | None:
        """The JSON document of a row, as fetched."""
        del key
        return None

    def target_keys(self) -> list[str]:
        """The rows an action applies to: the marked ones, else the one under the cursor."""
        return []

    def hidden_marks(self) -> int:
        """Marked rows the filter hides (an action leaves them out)."""
        return 0

    def clear_marks(self, keys: list[str]) -> None:
        """An action was confirmed: its rows are no longer marked."""

    # -- keys and read-only ---------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "act":  # never from a key typed into the prompt
            return not self.fleet_app.read_only and not isinstance(self.focused, Input)
        return super().check_action(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """Read-only: an action's key (gone from the footer) says why it does nothing."""
        if not self.fleet_app.read_only or isinstance(self.focused, Input):
            return
        for action in self.ACTIONS:
            if event.key in (k.strip() for k in action.key.split(",")):
                event.stop()
                self.notify(
                    READ_ONLY.format(verb=action.verb.lower()),
                    title="Not changed",
                    severity="warning",
                )
                return

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        if self.fleet_app.read_only or not self.is_mounted:
            return
        keys = self.target_keys()
        items = [i for i in (self.item(k) for k in keys) if i is not None]
        if not items:
            return
        for action in self.ACTIONS:
            what = (
                f"{action.noun} {action.target(items[0])}"
                if len(items) == 1
                else f"{len(items)} marked {action.noun}s"
            )
            yield SystemCommand(
                f"{action.verb} {what}",
                f"({action.key})",
                lambda name=action.name: self.action_act(name),
            )

    # -- the steps: ask, look, confirm, run, say ------------------------------------------------

    def action_act(self, name: str) -> None:
        action = find_action(name)
        if self.fleet_app.read_only:
            self.notify(READ_ONLY.format(verb=action.verb.lower()), severity="warning")
            return
        if self.acting is not None:
            self.notify(f"Still running: {self.acting.action.verb.lower()}.", severity="warning")
            return
        rows = [(k, i) for k, i in ((k, self.item(k)) for k in self.target_keys()) if i is not None]
        if not rows:
            self.notify(f"No {action.noun} to {action.verb.lower()}.", severity="warning")
            return
        hidden = self.hidden_marks()
        if action.ask is None:
            self._look(action, rows, None, hidden)
            return
        ask = action.ask

        def answered(text: str | None) -> None:
            if text is None or not text.strip():
                return
            try:
                value = ask.read(text)
            except FleetError as exc:
                self.notify(error_text(exc), title="Not changed", severity="error")
                return
            self._look(action, rows, value, hidden)

        start = ask.start(rows[0][1]) if ask.start is not None and len(rows) == 1 else ""
        self.app.push_screen(AskValue(ask.prompt, ask.placeholder, start), answered)

    def _look(self, action: Action, rows: list[tuple[str, Item]], value: Any, hidden: int) -> None:
        if action.look is None:
            self._confirm(PendingAction(action, tuple((k, i, {}) for k, i in rows), value, hidden))
        else:
            self._look_in_thread(action, rows, value, hidden)

    @work(thread=True, group="action", exit_on_error=False)
    def _look_in_thread(
        self, action: Action, rows: list[tuple[str, Item]], value: Any, hidden: int
    ) -> None:
        look = action.look
        assert look is not None
        try:
            found = tuple((k, i, look(self.source, i, value)) for k, i in rows)
        except Exception as exc:  # noqa: BLE001 - said to the operator; nothing changed
            self.post_message(self.Refused(action, exc))
            return
        self.post_message(self.Prepared(PendingAction(action, found, value, hidden)))

    def on_acting_view_prepared(self, message: Prepared) -> None:
        self._confirm(message.plan)

    def on_acting_view_refused(self, message: Refused) -> None:
        self.notify(error_text(message.error), title="Not changed", severity="error")

    def _confirm(self, plan: PendingAction) -> None:
        def answer(yes: bool | None) -> None:
            if yes and self.acting is None:
                self.acting = plan
                self.clear_marks([key for key, _item, _facts in plan.rows])
                self._run_in_thread(plan)

        self.app.push_screen(Confirm(plan.question, plan.action.button, plan.action.keep), answer)

    @work(thread=True, group="action", exit_on_error=False)
    def _run_in_thread(self, plan: PendingAction) -> None:
        action, outcomes = plan.action, []
        for key, item, _facts in plan.rows:
            try:
                answer = action.run(self.source, item, plan.value)
                outcomes.append(Outcome(key, True, action.done(item, answer)))
            except Exception as exc:  # noqa: BLE001 - each row's error is said, the others go on
                outcomes.append(Outcome(key, False, f"{action.target(item)}: {error_text(exc)}"))
        self.post_message(self.Finished(plan, outcomes))

    def on_acting_view_finished(self, message: Finished) -> None:
        self.acting = None
        self.outcomes = outcomes = message.outcomes
        failed = sum(not o.ok for o in outcomes)
        verb = message.plan.action.button
        if len(outcomes) == 1:
            title = verb if not failed else f"{verb}: not changed"
        else:
            title = f"{verb}: {len(outcomes) - failed} of {len(outcomes)} done"
        self.notify(
            "\n".join(o.text for o in outcomes),
            title=title,
            severity="error" if failed else "information",
            timeout=12 if failed else 6,
        )
        self.request_refresh(force=True)
