"""The dashboard's views: name (for `:name`), number key, title and screen; the app builds its modes here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.catalog import (
    FlavorsView,
    PoolsView,
    ProviderAccountsView,
    QuotasView,
    TenantsView,
)
from bcfleet.tui.screens.compute import ComputeView
from bcfleet.tui.screens.degraded import DegradedView
from bcfleet.tui.screens.doctor import DoctorView
from bcfleet.tui.screens.events import EventsView
from bcfleet.tui.screens.hosts import HostsView
from bcfleet.tui.screens.iam import PoliciesView, TokensView
from bcfleet.tui.screens.instances import InstancesView
from bcfleet.tui.screens.jobs import JobsView
from bcfleet.tui.screens.offers import OffersView
from bcfleet.tui.screens.preview import PreviewView
from bcfleet.tui.screens.reservations import ReservationsView
from bcfleet.tui.screens.services import EnvironmentsView, IndexesView, ServicesView
from bcfleet.tui.screens.usage import UsageView
from bcfleet.tui.screens.usage_export import UsageExportView
from bcfleet.tui.screens.webhooks import WebhooksView


@dataclass(frozen=True)
class ViewSpec:
    name: str
    key: str
    """Its number key; "" for views reached by `:name` (and the palette) only."""
    title: str
    screen: Callable[[], ViewScreen]
    aliases: tuple[str, ...] = ()


VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("hosts", "1", "Hosts", HostsView, ("host", "nodes", "no")),
    ViewSpec("degraded", "2", "Degraded placements", DegradedView, ("deg",)),
    ViewSpec("reservations", "3", "Reservations", ReservationsView, ("rsv", "res")),
    ViewSpec("preview", "4", "Preemption preview", PreviewView, ("pre",)),
    ViewSpec("compute", "5", "Compute settings", ComputeView, ("settings",)),
    ViewSpec("usage", "6", "Usage and credits", UsageView, ("credits",)),
    ViewSpec("events", "7", "Events", EventsView, ("ev",)),
    ViewSpec("jobs", "8", "Jobs", JobsView, ()),
    ViewSpec("instances", "9", "Instances", InstancesView, ("instance", "inst", "vm", "vms")),
    ViewSpec("pools", "0", "Pools", PoolsView, ("pool", "po")),
    ViewSpec("flavors", "", "Flavors", FlavorsView, ("flavor", "flavour", "flavours", "fl")),
    ViewSpec("tenants", "", "Tenants", TenantsView, ("tenant", "te")),
    ViewSpec("quotas", "", "Quotas", QuotasView, ("quota", "quo")),
    ViewSpec("services", "", "Services", ServicesView, ("service", "svc")),
    ViewSpec("environments", "", "Environments (services)", EnvironmentsView, ("env", "envs")),
    ViewSpec("indexes", "", "Indexes (services)", IndexesView, ("index", "idx")),
    ViewSpec(
        "provider-accounts",
        "",
        "Provider accounts",
        ProviderAccountsView,
        ("provideraccounts", "accounts", "pa", "providers"),
    ),
    ViewSpec("offers", "", "Provider offers", OffersView, ("offer", "provider-offers")),
    ViewSpec("webhooks", "", "Webhooks", WebhooksView, ("webhook", "hooks", "wh")),
    ViewSpec("tokens", "", "IAM tokens", TokensView, ("token", "tok")),
    ViewSpec("policies", "", "IAM policies", PoliciesView, ("policy", "pol")),
    ViewSpec("export", "", "Usage export", UsageExportView, ("usage-export",)),
    ViewSpec("doctor", "", "Doctor", DoctorView, ("doc",)),
)


def find_view(text: str) -> ViewSpec | None:
    """The view a `:` command names: its name, an alias, its number, or a unique prefix."""
    word = text.strip().lstrip(":").lower()
    if not word:
        return None
    for view in VIEWS:
        if word in (view.name, view.key, *view.aliases):
            return view
    starting = [v for v in VIEWS if v.name.startswith(word)]
    return starting[0] if len(starting) == 1 else None
