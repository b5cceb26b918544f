"""The one seam between the agent's loop (bcfleet.agent.runner) and what runs its guests.

A Hypervisor is the simulated one (bcfleet.agent.hypervisor) or the libvirt driver
(bcfleet.agent.libvirt_driver, opened by open_libvirt(), the only place that reaches for the
optional libvirt-python package). Each round the agent hands it the host's specs and the
time and reports the (instance id, state) pairs it returns; problems() are the conditions it
holds (by instance id, "host" for the host's own), balloons() the memory its running guests'
balloons leave them, and pause() waits until the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from bcfleet.errors import UnsupportedError

LIBVIRT_INSTALL = "pip install 'bcfleet[libvirt]'"


class Hypervisor(Protocol):
    def converge(self, specs: Sequence[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
        """Move every guest towards its spec; the observed states that changed."""
        ...

    def problems(self) -> dict[str, str]:
        """The conditions it holds now: instance id (or "host") → message."""
        ...

    def balloons(self) -> dict[str, int]:
        """Each running guest's memory as its balloon leaves it now: instance id → bytes."""
        ...

    def pause(self, seconds: float, sleep: Callable[[float], None]) -> None:
        """Wait for the next round (at most `seconds`; sooner when something happened)."""
        ...

    def close(self) -> None: ...


def open_libvirt(uri: str, **options: Any) -> Hypervisor:
    """The libvirt driver on `uri`; UNSUPPORTED with the pip command when libvirt-python is missing."""
    try:
        from bcfleet.agent.libvirt_driver import LibvirtDriver
    except ImportError as exc:
        raise UnsupportedError(
            f"--hypervisor needs libvirt-python: {LIBVIRT_INSTALL}",
            {"reason": "libvirt_missing", "install": LIBVIRT_INSTALL, "uri": uri},
        ) from exc
    return LibvirtDriver.open(uri, **options)
