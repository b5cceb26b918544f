"""A secret shown once (a new token, a webhook's signing secret): its own window, never kept.

Not a notification: those stay in the app's list. Enter or Esc closes it, and nothing
shows it again.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ShownOnce(ModalScreen[None]):
    """What was made, the secret, and that it is never shown again."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter,escape", "close", "Close")]
    DEFAULT_CSS = "ShownOnce { align: center middle; }"

    def __init__(self, said: str, label: str, secret: str) -> None:
        super().__init__()
        self.said, self.label, self.secret = said, label, secret

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.said)
            yield Static(Text(f"{self.label}: {self.secret}", style="bold"), id="secret")
            yield Static(
                "Copy it now: it is shown this once and never again. Enter closes.",
                classes="hint",
            )

    def action_close(self) -> None:
        self.secret = ""
        self.dismiss(None)
