"""A yes/no question before a state-changing action (drain a host); Esc or n says no."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class Confirm(ModalScreen[bool]):
    """Dismissed with True (the action's button or y) or False (the other button, n, Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    AUTO_FOCUS = "#no"

    def __init__(self, question: str, verb: str, keep: str = "Cancel") -> None:
        super().__init__()
        self.question, self.verb, self.keep = question, verb, keep
        self.shown_at: float | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(f"{self.verb} (y)", id="yes", variant="warning")
                yield Button(f"{self.keep} (n)", id="no")

    def on_mount(self) -> None:
        self.shown_at = get_time()  # the clock of the keys' own stamps

    def typed_before(self, event: events.Key) -> bool:
        """Whether a key was typed before the confirm appeared (typed ahead: it answers nothing)."""
        return self.shown_at is None or event.time < self.shown_at

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
