"""Services, with their environments and indexes as sub-views (e and i from Services).

A service's describe adds the indexes of its workspace; its environment is in its fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, Cell, age
from bcfleet.tui.screens.objects import ObjectsView
from bcfleet.tui.widgets.keyed_table import Column, Row

STATUS_STYLE = {"deployed": "green", "undeployed": "dim", "failed": "bold red"}


def service_row(service: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(service.get("createdAt"), now, short=True)
    status = str(service.get("status") or DASH)
    instance = str(service.get("instanceState") or DASH)
    cells: tuple[Cell, ...] = (
        str(service.get("tenantId") or DASH),
        str(service.get("workspace") or DASH),
        service["name"],
        Text(status, style=STATUS_STYLE.get(status, "")),
        str(service.get("effectiveSize") or service.get("size") or DASH),
        str(service.get("environment") or DASH),
        instance,
        since,
    )
    sort = (*(c if isinstance(c, str) else c.plain for c in cells[:7]), seconds)
    return Row(service["id"], cells, sort=sort)


class ServicesView(ObjectsView):
    TITLE = "Services"
    ABOUT = (
        "Every service you may see: workspace, status, the size it runs at, its environment "
        "and its instance's state. e opens the environments, i the indexes. Enter or d "
        "describes a service, with the indexes of its workspace."
    )
    COLUMNS = (
        Column("tenant", "TENANT", give_way=3, name=True),
        Column("workspace", "WORKSPACE", give_way=1, name=True),
        Column("name", "NAME", name=True),
        Column("status", "STATUS"),
        Column("size", "SIZE"),
        Column("environment", "ENV", name=True),
        Column("instance", "INSTANCE", name=True),
        Column("age", "AGE", give_way=2),
    )
    NOUN = ("service", "services")
    ACTIONS = actions_for("services")
    KIND = "service"
    READ = "services"
    row_of = staticmethod(service_row)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "app.view('environments')", "Envs"),
        Binding("i", "app.view('indexes')", "Indexes"),
    ]

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        from bcfleet.tui.screens.describe import describe_object

        doc = dict(describe_object(self.source, self.KIND, item or {"id": key}))
        indexes = [
            f"{i['name']} ({i.get('podSizeLabel') or i.get('podSize')})"
            for i in self.source.indexes()
            if (i.get("tenantId"), i.get("workspace"))
            == (item.get("tenantId"), item.get("workspace"))
        ]
        doc["workspaceIndexes"] = indexes or [DASH]
        return doc


def environment_row(environment: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(environment.get("createdAt"), now, short=True)
    cells: tuple[Cell, ...] = (
        str(environment.get("tenantId") or DASH),
        environment["name"],
        str(environment.get("sizeLabel") or environment.get("size") or DASH),
        str(environment.get("services", 0)),
        since,
    )
    sort = (cells[0], cells[1], cells[2], int(environment.get("services", 0)), seconds)
    return Row(environment["id"], cells, sort=sort)


class EnvironmentsView(ObjectsView):
    TITLE = "Environments"
    ABOUT = "Services › environments: each one's size and how many services are in it."
    COLUMNS = (
        Column("tenant", "TENANT", give_way=1, name=True),
        Column("name", "NAME", name=True),
        Column("size", "SIZE", crop_to=16),
        Column("services", "SERVICES"),
        Column("age", "AGE", give_way=2),
    )
    NOUN = ("environment", "environments")
    ACTIONS = actions_for("environments")
    KIND = "environment"
    READ = "environments"
    row_of = staticmethod(environment_row)

    def crumbs(self) -> list[str]:
        return ["Services", self.TITLE]


def index_row(index: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(index.get("createdAt"), now, short=True)
    compute = index.get("compute") or {}
    cells: tuple[Cell, ...] = (
        str(index.get("tenantId") or DASH),
        str(index.get("workspace") or DASH),
        index["name"],
        "yes" if index.get("deployed") else "no",
        str(index.get("podSizeLabel") or index.get("podSize") or DASH),
        str(compute.get("text") or DASH),
        since,
    )
    sort = (*cells[:6], seconds)
    return Row(index["id"], cells, sort=sort)


class IndexesView(ObjectsView):
    TITLE = "Indexes"
    ABOUT = "Services › pipeline indexes: workspace, whether deployed, pod size and compute."
    COLUMNS = (
        Column("tenant", "TENANT", give_way=2, name=True),
        Column("workspace", "WORKSPACE", give_way=1, name=True),
        Column("name", "NAME", name=True),
        Column("deployed", "DEPLOYED"),
        Column("pod", "POD SIZE"),
        Column("compute", "COMPUTE", crop_to=14),
        Column("age", "AGE", give_way=3),
    )
    NOUN = ("index", "indexes")
    ACTIONS = actions_for("indexes")
    KIND = "index"
    READ = "indexes"
    row_of = staticmethod(index_row)

    def crumbs(self) -> list[str]:
        return ["Services", self.TITLE]
