"""Keys typed ahead (a paste, tmux send-keys, a slow link catching up) act one after the other.

Textual hands each key to the widget focused when the key is read, and runs a
binding only once the key has come back up from that widget; a key that opened a
prompt or a confirm therefore missed the keys right behind it, which had gone to
the view already (`/proxy` stopped an instance: `x` Stop, `y` Yes; `:quotas` quit).
Here a key is read only when the one before it has been handled to the end: it
went up the widgets it was handed to and reached the app, where its binding ran.
Besides:

- Enter or Esc in a prompt holds the keys behind it until the prompt has closed
  and its view has taken the focus back (`Prompt.Closed`);
- once the console quits, no key does anything more;
- a confirm takes only keys typed after it appeared (`Confirm.typed_before`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from textual import events
from textual.message_pump import MessagePump

from bcfleet.tui.widgets.prompt import Prompt

if TYPE_CHECKING:
    from textual.app import App

ENDS_PROMPT = frozenset({"enter", "escape"})
LOST_AFTER = 3.0
"""Seconds a key may take to be handled before the keys behind it go on anyway."""


class KeyOrder:
    """The app's keys as they are read: one at a time, the others waiting in order."""

    def __init__(self, app: App[Any], dispatch: Callable[[events.Key], Awaitable[None]]) -> None:
        self.app = app
        self.dispatch = dispatch
        """Textual's own handling of a key read (priority bindings, then to the focus)."""
        self.waiting: deque[events.Key] = deque()
        self.in_flight = 0
        """The number of the key being handled (0: none)."""
        self._sent = 0
        self._watching: int | None = None
        self.closing: Prompt | None = None
        """The prompt an Enter or Esc went to, until it has closed."""
        self.quitting = False

    def busy(self) -> bool:
        """A key is being handled, or a prompt it ended has not closed yet."""
        return bool(self.in_flight) or (self.closing is not None and self.closing.display)

    async def read(self, event: events.Key) -> None:
        """A key as the terminal gives it: handled now, or after those before it."""
        if self.quitting:
            return
        if self.busy() or self.waiting:
            self.waiting.append(event)
            self._watch()
            return
        await self._send(event)

    def _watch(self) -> None:
        """Should a key's way up be lost (a widget removed with the wait still in its queue),
        the keys behind it go on after LOST_AFTER seconds rather than never."""
        if self._watching is None:
            self._watching = self.in_flight
            self.app.set_timer(LOST_AFTER, self._lost)

    async def _lost(self) -> None:
        stuck, self._watching = self._watching, None
        if stuck and self.in_flight == stuck:
            self.in_flight = 0
            await self.resume()
        if self.waiting:
            self._watch()

    async def resume(self) -> None:
        """The key in flight was handled, or a prompt closed: the next keys go on."""
        while self.waiting and not self.busy():
            if self.quitting:
                self.waiting.clear()
                return
            await self._send(self.waiting.popleft())

    async def _send(self, event: events.Key) -> None:
        focused = self.app.focused
        target: MessagePump = focused or self.app.screen
        self.closing = None
        if isinstance(focused, Prompt) and focused.display and event.key in ENDS_PROMPT:
            self.closing = focused
        self._sent += 1
        self.in_flight = number = self._sent
        await self.dispatch(event)
        self._follow(target, number)

    def _follow(self, node: MessagePump, number: int) -> None:
        """Wait behind the key in each queue it may bubble through, up to the app's."""
        app = self.app
        queued = node is not app and node.call_later(self._reached, node, number)
        if not queued and not app.call_later(self._arrived, number):
            self.in_flight = 0  # the app is closing

    def _reached(self, node: MessagePump, number: int) -> None:
        parent = node._parent  # noqa: SLF001 - the way a key bubbles
        self._follow(parent if isinstance(parent, MessagePump) else self.app, number)

    async def _arrived(self, number: int) -> None:
        if self.in_flight == number:
            self.in_flight = 0
            await self.resume()
