"""The billing-meter catalogue: list and create meters (usage of unknown meters is dead-lettered)."""

from __future__ import annotations

import re
from typing import Any

from sqlmodel import select

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import MeterJson, MeterPageJson
from bcfleet.clock import format_time
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.store.models import BillingMeter

METER_NAME = re.compile(r"^[a-z0-9]+(\.[a-z0-9_-]+)*$")


def meter_json(meter: BillingMeter) -> MeterJson:
    return {
        "name": meter.name,
        "unit": meter.unit,
        "description": meter.description,
        "createdAt": format_time(meter.created_at),
    }


class MetersAPI(Area):
    def create(
        self,
        credential: Credential | None,
        name: str,
        *,
        unit: str = "hours",
        description: str = "",
    ) -> MeterJson:
        if not METER_NAME.fullmatch(name):
            raise InvalidInputError(
                f"meter name {name!r} must be dotted lower-case words, e.g. gpu.l40s.spot.hours",
                {"name": name},
            )
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("billing:meters:manage", tenant_resource(ROOT_TENANT))
            if session.get(BillingMeter, name) is not None:
                raise ConflictError(f"meter {name!r} already exists", {"name": name})
            meter = BillingMeter(
                name=name, unit=unit, description=description, created_at=self.fleet.now()
            )
            session.add(meter)
            return meter_json(meter)

    def ensure(self, credential: Credential | None, names: list[str]) -> dict[str, Any]:
        """Create whichever of the named meters are missing; report which were created."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("billing:meters:manage", tenant_resource(ROOT_TENANT))
            created = []
            for name in sorted(set(names)):
                if session.get(BillingMeter, name) is None:
                    session.add(BillingMeter(name=name, created_at=self.fleet.now()))
                    created.append(name)
            return {"created": created}

    def list(self, credential: Credential | None) -> MeterPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:meters:read", tenant_resource(actor.tenant_id))
            rows = session.exec(select(BillingMeter).order_by(BillingMeter.name)).all()
            return {"items": [meter_json(m) for m in rows]}
