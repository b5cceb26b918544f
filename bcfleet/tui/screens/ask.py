"""A one-line question before an action that needs a value (a flavor, a tenant, limits); Esc says no."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class AskValue(ModalScreen[str | None]):
    """Dismissed with the text typed (Enter) or None (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, placeholder: str = "", start: str = "") -> None:
        super().__init__()
        self.question, self.placeholder, self.start = question, placeholder, start

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            yield Input(self.start, placeholder=self.placeholder, id="answer")
            yield Static("Enter goes on, Esc cancels.", classes="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
