"""libvirt's test driver for the agent's tests: the binding, and an empty host with bcfleet's pool.

The binding is the optional `libvirt` extra: without it a test module is skipped, except in
CI (`CI=true`), where scripts/libvirt-host installs it and its absence is a failure.
"""

from __future__ import annotations

from types import ModuleType

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
