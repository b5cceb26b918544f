"""The OpenAPI document judged by openapi-spec-validator, and held to what the server does: every
request header the server reads is declared, and a 405's Allow lists every declared method."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from openapi_spec_validator import validate

from bcfleet.fleet import Fleet
from bcfleet.http.app import openapi_document
from tests.support.http import served

HTTP_DIR = Path(__file__).resolve().parents[2] / "bcfleet" / "http"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
TRANSPORT_HEADERS = {"content-length"}  # HTTP's own framing, not an API parameter
SECURITY_HEADERS = {"authorization"}  # declared as the bearer security scheme


def test_the_document_is_valid_openapi_3_1() -> None:
    validate(openapi_document())


def test_every_header_the_server_reads_is_declared() -> None:
    read = {
        name.lower()
        for path in HTTP_DIR.rglob("*.py")
        for name in re.findall(r"request\.headers\.get\(\"([^\"]+)\"", path.read_text())
    }
    document = openapi_document()
    declared = {
        parameter["name"].lower()
        for item in document["paths"].values()
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "header"
    }
    assert "bearer" in document["components"]["securitySchemes"]
    assert read - TRANSPORT_HEADERS - SECURITY_HEADERS <= declared, read - declared
    assert "last-event-id" in declared


def _served_elsewhere(document: dict[str, Any], path: str, method: str) -> bool:
    """Whether another template (/v1/reservations/{id} for /v1/reservations/batch) takes it."""
    parts = path.split("/")
    for template, item in document["paths"].items():
        pattern = template.split("/")
        if (
            len(pattern) == len(parts)
            and method.lower() in item
            and all(p == q or p.startswith("{") for p, q in zip(pattern, parts, strict=True))
        ):
            return True
    return False


def test_a_405_allows_every_method_the_document_declares(fleet: Fleet) -> None:
    document = openapi_document()
    with served(fleet) as (server, _api), httpx.Client(base_url=server.url) as client:
        for template, item in document["paths"].items():
            declared = {m.upper() for m in item}
            concrete = re.sub(r"\{[^}]+\}", "x", template)
            for method in METHODS:
                if method in declared or _served_elsewhere(document, concrete, method):
                    continue
                answer = client.request(method, concrete)
                assert answer.status_code == 405, (method, template, answer.status_code)
                allowed = {m.strip() for m in answer.headers["allow"].split(",")}
                assert allowed == declared, (template, allowed, declared)
