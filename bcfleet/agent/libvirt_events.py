"""libvirt's default event loop on a daemon thread, and a wake-up the agent's round waits on.

The libvirt driver (bcfleet.agent.libvirt_driver) calls start_event_loop() before it opens a
connection (libvirt delivers events only to connections opened after the loop is registered),
then watch() a connection: its lifecycle events set a threading.Event so the agent's next
round starts at once, and its close callback marks the connection lost. Callbacks run on the
loop's thread and only set flags; every libvirt call stays on the agent's thread.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

import libvirt

_started = threading.Lock()
_thread: threading.Thread | None = None


def start_event_loop() -> None:
    """Register libvirt's default event implementation and run it on a daemon thread, once."""
    global _thread
    with _started:
        if _thread is not None:
            return
        libvirt.virEventRegisterDefaultImpl()
        _thread = threading.Thread(target=_run, name="libvirt-events", daemon=True)
        _thread.start()


def _run() -> None:
    while True:
        libvirt.virEventRunDefaultImpl()


@dataclass
class Watch:
    """What the event loop has seen on one connection since the agent last looked."""

    wake: threading.Event = field(default_factory=threading.Event)
    lost: threading.Event = field(default_factory=threading.Event)
    events: int = 0
    callback_id: int | None = None

    def lifecycle(self, _conn: Any, _dom: Any, _event: int, _detail: int, _opaque: Any) -> None:
        self.events += 1
        self.wake.set()

    def closed(self, _conn: Any, _reason: int, _opaque: Any) -> None:
        self.lost.set()
        self.wake.set()


def watch(conn: libvirt.virConnect) -> Watch:
    """Wake the agent on each lifecycle event of this connection, and on its close (without an
    event loop registered before the connection was opened, the rounds' resync alone)."""
    seen = Watch()
    with contextlib.suppress(libvirt.libvirtError):
        seen.callback_id = conn.domainEventRegisterAny(
            None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, seen.lifecycle, None
        )
    # drivers without a close callback (test:///) are found lost by their errors instead
    with contextlib.suppress(libvirt.libvirtError):
        conn.registerCloseCallback(seen.closed, None)
    return seen


def unwatch(conn: libvirt.virConnect, seen: Watch) -> None:
    """Stop the callbacks watch() registered; a closed connection has none left."""
    with contextlib.suppress(libvirt.libvirtError):
        if seen.callback_id is not None:
            conn.domainEventDeregisterAny(seen.callback_id)
        conn.unregisterCloseCallback()
