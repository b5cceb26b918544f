"""The plan of an edit or of `:plan FILE`, as `fleet plan` prints it, above its Apply/Cancel question.

A Confirm (screens/confirm.py), so only a key typed after it appeared answers it
(`Confirm.typed_before`); the plan scrolls with the arrow keys and PageUp/PageDown.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from bcfleet.tui.screens.confirm import Confirm


class PlanConfirm(Confirm):
    """The plan's text, scrollable, and the question; True applies it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "scroll(1)", "Scroll", show=False),
        Binding("up,k", "scroll(-1)", "Scroll", show=False),
        Binding("pagedown", "scroll(10)", "Page", show=False),
        Binding("pageup", "scroll(-10)", "Page", show=False),
    ]
    DEFAULT_CSS = """
    PlanConfirm { align: center middle; }
    PlanConfirm #plan-dialog {
        width: 100%; max-width: 110; height: 100%; max-height: 40;
        border: round $warning; background: $surface; padding: 0 1;
    }
    PlanConfirm #plan { height: 1fr; }
    PlanConfirm #buttons { height: auto; margin-top: 0; }
    """

    def __init__(
        self, plan_text: str, question: str, verb: str = "Apply", *, applies: bool = True
    ) -> None:
        super().__init__(question, verb, keep="Cancel" if applies else "Close")
        self.plan_text = plan_text
        self.applies = applies
        """False under --read-only: the plan is shown, and only closes."""

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-dialog"):
            with VerticalScroll(id="plan"):
                yield Static(Text(self.plan_text.rstrip()), id="plan-text")
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                if self.applies:
                    yield Button(f"{self.verb} (y)", id="yes", variant="warning")
                yield Button(f"{self.keep} (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        if yes and not self.applies:
            return  # read-only: y applies nothing, n or Esc closes
        self.dismiss(yes)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#plan", VerticalScroll).scroll_relative(y=lines, animate=False)
