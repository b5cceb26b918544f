"""libvirt's test driver for the agent's tests: the binding, and an empty host with bcfleet's pool.

The binding is the optional `libvirt` extra: without it a test module is skipped, except in
CI (`CI=true`), where scripts/libvirt-host installs it and its absence is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.fleet import IN_CI

NODE = """<node><pool type="dir"><name>bcfleet</name><target><path>/var/lib/bcfleet</path>
</target></pool></node>"""
"""An empty test-driver host (`test://<file>`) with bcfleet's storage pool."""


def libvirt_or_skip() -> ModuleType:
    """libvirt-python, or the calling module skipped (a failure in CI)."""
    try:
        import libvirt
    except ImportError:
        if IN_CI:
            raise  # libvirt-python is required in CI: scripts/libvirt-host installs it
        pytest.skip(
            "libvirt-python is not installed: pip install 'bcfleet[libvirt]'",
            allow_module_level=True,
        )
    return libvirt


@pytest.fixture
def node(tmp_path: Path) -> str:
    """A test driver URI whose every open is a fresh, empty host (test:///default is shared
    by the connections open at the same time in a process)."""
    path = tmp_path / "node.xml"
    path.write_text(NODE)
    return f"test://{path}"


@pytest.fixture
def conn(node: str) -> Iterator[Any]:
    """An open connection to `node`, libvirt's event loop running."""
    libvirt = libvirt_or_skip()
    from bcfleet.agent.libvirt_events import start_event_loop

    start_event_loop()
    connection = libvirt.open(node)
    yield connection
    connection.close()
