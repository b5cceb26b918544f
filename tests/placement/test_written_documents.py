"""Documents a placement writes from kept text (a kept flavor's shape and claims, a kept lone
placement's host placement) are stored as the documents themselves: read back by hand, on
both engines, they are what the answer shows, and on SQLite the very text json.dumps writes."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from bcfleet.domain.shapes import Shape
from bcfleet.fleet import Fleet
from tests.placement.test_catalog_cache import handles
from tests.support.builders import OP

__all__ = ["handles"]

_ROW = text(
    "SELECT CAST(i.shape AS TEXT), CAST(i.host_placement AS TEXT), CAST(i.conditions AS TEXT), "
    "CAST(a.claims AS TEXT) FROM instances i JOIN allocations a ON a.consumer_id = i.id "
    "WHERE i.id = :id"
)


def _stored(fleet: Fleet, instance_id: str) -> tuple[str, str, str, str]:
    with fleet.engine.connect() as connection:
        shape, placement, conditions, claims = connection.execute(_ROW, {"id": instance_id}).one()
    return shape, placement, conditions, claims


def test_kept_texts_store_the_documents_the_answer_shows(
    handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, _, pool = handles  # four hosts: four guests alone on theirs, then two beside another
    sqlite = a.engine.dialect.name == "sqlite"
    for _ in range(6):
        made = a.api.instances.create(OP, tenant_id="bench", pool_id=pool["id"], flavor="b1.small")
        assert made["state"] == "running"
        shape, placement, conditions, claims = _stored(a, made["id"])
        expected = {
            "shape": made["shape"],
            "placement": made["hostPlacement"],
            "conditions": made["conditions"],
            "claims": Shape.from_json(made["shape"]).claims(),
        }
        got = {"shape": shape, "placement": placement, "conditions": conditions, "claims": claims}
        assert {k: json.loads(v) for k, v in got.items()} == expected
        if sqlite:  # the text itself, as the standard library writes each document
            assert got == {k: json.dumps(v) for k, v in expected.items()}
