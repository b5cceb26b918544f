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

    class Closed(Message, bubble=False):
        """The prompt closed (Enter, Esc) and its view has the focus back; said to the app."""

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
        self.screen.set_focus(self, scroll_visible=False)  # now: the next key read is the prompt's

    def close(self) -> None:
        """Hide the prompt; its view gives the focus to its body at once (`focus_body`)."""
        self.display = False
        if self.has_focus:
            self.screen.set_focus(None)
        self.app.post_message(self.Closed())  # to the app itself: its view may be leaving

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled(self.mode))
