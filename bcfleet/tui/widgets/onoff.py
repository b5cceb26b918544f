"""An Enabled switch that says its state in words ('● on', '○ off', 'locked'), never by colour alone."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class OnOff(Widget, can_focus=True):
    """Space or Enter flips it, unless it is locked (then it says why when pressed)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space,enter", "flip", "Switch", show=False),
    ]

    value: reactive[bool] = reactive(False, layout=True)
    locked: reactive[bool] = reactive(False, layout=True)
    """Both change the width: without a new layout ' locked' was cut off after the default moved."""

    class Changed(Message):
        def __init__(self, switch: OnOff, value: bool) -> None:
            super().__init__()
            self.switch, self.value = switch, value

        @property
        def control(self) -> OnOff:
            return self.switch

    class Refused(Message):
        """Pressed while locked."""

        def __init__(self, switch: OnOff) -> None:
            super().__init__()
            self.switch = switch

    def __init__(self, value: bool = False, *, locked: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(OnOff.value, value)
        self.set_reactive(OnOff.locked, locked)

    def render(self) -> Text:
        text = Text("● on " if self.value else "○ off", style="bold" if self.value else "dim")
        if self.locked:
            text.append(" locked", style="italic")
        return text

    def action_flip(self) -> None:
        if self.locked or self.disabled:
            self.post_message(self.Refused(self))
            return
        self.value = not self.value
        self.post_message(self.Changed(self, self.value))

    def on_click(self) -> None:
        self.action_flip()
