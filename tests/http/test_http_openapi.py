"""The OpenAPI document: every served route is documented, every documented one served, refs resolve."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from starlette.routing import Route

from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app, openapi_document
from bcfleet.http.openapi import match_path


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_every_served_route_is_documented_and_every_documented_one_served(fleet: Fleet) -> None:
    app = create_app(fleet, tally_seconds=0)
    served = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or ())
        if method != "HEAD"
    }
    document = app.state.openapi
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    assert served == documented


def test_operation_ids_are_unique_and_path_parameters_declared() -> None:
    document = openapi_document()
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    for path, item in document["paths"].items():
        names = {p[1:-1] for p in path.split("/") if p.startswith("{")}
        for op in item.values():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == names, (path, op["operationId"])
            assert "default" in op["responses"]


def test_every_reference_resolves_and_every_schema_is_valid_json_schema() -> None:
    document = openapi_document()
    json.dumps(document)  # plain JSON all the way down
    for ref in _refs(document):
        kind, name = ref.removeprefix("#/components/").split("/")
        assert name in document["components"][kind], ref
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def test_concrete_paths_match_the_most_literal_template() -> None:
    document = openapi_document()
    assert match_path(document, "/v1/events/stream") == "/v1/events/stream"
    assert match_path(document, "/v1/pools/p/flavors/f") == "/v1/pools/{pool}/flavors/{name}"
    assert match_path(document, "/v1/unknown") is None
