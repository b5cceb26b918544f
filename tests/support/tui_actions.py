"""The console's actions under test: a source that records in which thread each change ran, and
what the dashboard said."""

from __future__ import annotations

import threading
from typing import Any

from bcfleet.tui.source import FleetSource

CHANGES = frozenset({
    "set_draining", "stop_instance", "start_instance", "delete_instance", "resize_instance",
    "cancel_reservation", "run_job", "offer_pool", "unoffer_pool", "set_quota",
    "deploy_service", "undeploy_service", "host_guests",
    "delete_flavor", "delete_service", "delete_environment", "delete_index", "delete_webhook",
    "revoke_token", "dependents", "delete_pool", "delete_provider_account", "remove_host",
    "delete_tenant",
})  # fmt: skip


class Recording:
    """A FleetSource that passes every call on, noting (name, on the UI thread?) of the changes."""

    def __init__(self, source: FleetSource) -> None:
        self.source = source
        self.calls: list[tuple[str, bool]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.source, name)
        if name not in CHANGES:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            on_ui = threading.current_thread() is threading.main_thread()
            self.calls.append((name, on_ui))
            return attr(*args, **kwargs)

        return call


def said(app: Any) -> list[str]:
    """The notifications shown, each as 'title: message'."""
    return [f"{n.title}: {n.message}" for n in app._notifications]
