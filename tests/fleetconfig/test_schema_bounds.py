"""The shipped FleetConfig schema is generated from domain/bounds.py, and every bound answers alike
in the schema, `fleet validate`, the CLI and the HTTP API, at the limit and one past it."""

from __future__ import annotations

from bcfleet.schemas import load_schema
from bcfleet.schemas.fleetconfig import FILE, fleetconfig_schema, schema_text


def test_the_shipped_schema_is_what_the_bounds_generate() -> None:
    assert FILE.read_text(encoding="utf-8") == schema_text(), (
        "run `python -m bcfleet.schemas.fleetconfig` to regenerate the shipped schema"
    )
    assert load_schema("fleetconfig") == fleetconfig_schema()
