"""Fixtures of the agent's tests: libvirt's test driver, a fresh empty host per test."""

from tests.support.libvirt_test_driver import conn, node

__all__ = ["conn", "node"]
