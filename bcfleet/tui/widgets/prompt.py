"""The k9s-style prompt line: `:` switches view (with completion), `/` filters the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input

Mode = Literal["command", "filter"]


class Prompt(Input):
    """One line at the bottom of a view; hidden until `:` or `/` opens it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "cursor_right", "Complete", show=False),
        Binding("escape", "cancel", "Cancel", show=False),
    ]

    class Cancelled(Message):
        def __init__(self, mode: Mode) -> None:
            super().__init__()
            self.mode = mode

    def __init__(self, commands: Sequence[str]) -> None:
        super().__init__(id="prompt", compact=True, select_on_focus=False)
        self.commands = tuple(commands)
        self.mode: Mode = "filter"

    def open(self, mode: Mode, value: str = "") -> None:
        """Show the prompt in a mode, focused, with a starting value."""
        self.mode = mode
        self.suggester = (
            SuggestFromList(self.commands, case_sensitive=False) if mode == "command" else None
        )
        self.placeholder = (
            "view name: " + " ".join(self.commands)
            if mode == "command"
            else "filter: words, col:word"
        )
        self.value = value
        self.cursor_position = len(value)
        self.display = True
        self.focus()

    def close(self) -> None:
        self.display = False

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled(self.mode))
