"""The OpenAPI 3.1 document of the served operations, built from the same list app.py serves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bcfleet import __version__
from bcfleet.http.operations import Operation

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "additionalProperties": False,
            "properties": {
                "code": {
                    "type": "string",
                    "description": "A stable code of PRODUCT.md §3 (INTERNAL for a server fault).",
                },
                "message": {"type": "string"},
                "details": {
                    "type": "object",
                    "description": "For NO_CAPACITY: reason fleet_no_capacity, instance_size, "
                    "retry_after. For DATABASE_UNAVAILABLE: reason connection_lost or "
                    "statement_cancelled (nothing was saved), or commit_outcome_unknown.",
                },
            },
        }
    },
}

ERROR_RESPONSE: dict[str, Any] = {
    "description": "The error document of PRODUCT.md §3; the status is the code's.",
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before retrying (503 NO_CAPACITY, DATABASE_UNAVAILABLE).",
            "schema": {"type": "string"},
        },
        "WWW-Authenticate": {"description": "On 401.", "schema": {"type": "string"}},
    },
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}

SCHEMA_MEDIA = ("application/json", "text/event-stream")  # an SSE schema describes each event
SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "A bcfleet API token (bcf_…) from `fleet iam tokens create`.",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _parameters(op: Operation) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": op.path_schema(name)}
        for name in op.path_params
    ]
    for param in op.query:
        entry: dict[str, Any] = {"name": param.name, "in": "query", "schema": param.schema()}
        if param.description:
            entry["description"] = param.description
        if param.kind == "strings":
            entry["explode"] = True
        params.append(entry)
    for header in op.headers:
        entry = {"name": header.name, "in": "header", "schema": header.schema()}
        if header.description:
            entry["description"] = header.description
        params.append(entry)
    return params


def _success(op: Operation) -> dict[str, Any]:
    body: dict[str, Any] = {"description": op.summary}
    if op.response is not None:
        schema: dict[str, Any] = (
            _ref(op.response) if op.response_media in SCHEMA_MEDIA else {"type": "string"}
        )
        body["content"] = {op.response_media: {"schema": schema}}
        for media in op.other_media:
            body["content"][media] = {"schema": {"type": "string"}}
    if op.response_headers:
        body["headers"] = {
            name: {"description": text, "schema": {"type": "string"}}
            for name, text in op.response_headers.items()
        }
    return body


def operation_document(op: Operation) -> dict[str, Any]:
    """The OpenAPI operation object of one operation."""
    doc: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "responses": {
            str(op.status): _success(op),
            "default": {"$ref": "#/components/responses/Error"},
        },
    }
    if op.description:
        doc["description"] = op.description
    params = _parameters(op)
    if params:
        doc["parameters"] = params
    if op.request is not None:
        doc["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(op.request)}},
        }
    doc["security"] = [{"bearer": []}] if op.auth else []
    return doc


def build_document(
    operations: Iterable[Operation], schemas: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The whole document: every operation under its path, the schemas under components."""
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = operation_document(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "bcfleet",
            "version": __version__,
            "description": (
                "The compute-fleet control plane over HTTP. JSON is camelCase; errors are "
                '{"error": {"code", "message", "details"}} with the status of their code.'
            ),
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR_SCHEMA, **{k: dict(v) for k, v in schemas.items()}},
            "responses": {"Error": ERROR_RESPONSE},
            "securitySchemes": {"bearer": SECURITY_SCHEME},
        },
    }


def match_path(document: Mapping[str, Any], path: str) -> str | None:
    """The path template of the document that a concrete path matches, if any."""
    parts = path.split("/")
    found = [
        str(template)
        for template in document["paths"]
        if len(pattern := template.split("/")) == len(parts)
        and all(p == q or (p.startswith("{") and q) for p, q in zip(pattern, parts, strict=True))
    ]
    return min(found, key=lambda t: t.count("{"), default=None)


def response_schema(
    document: Mapping[str, Any], method: str, template: str, status: int
) -> dict[str, Any] | None:
    """The JSON schema the document gives a response (the Error schema for 'default')."""
    operation = document["paths"][template][method.lower()]
    response = operation["responses"].get(str(status)) or operation["responses"]["default"]
    if "$ref" in response:
        response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    content = response.get("content", {}).get("application/json")
    if content is None:
        return None
    return {"$ref": content["schema"]["$ref"], "components": document["components"]}


def response_problems(
    document: Mapping[str, Any], method: str, path: str, status: int, body: Any
) -> list[str]:
    """Every way a JSON response breaks the document; empty when it conforms."""
    from jsonschema import Draft202012Validator

    template = match_path(document, path)
    schema: dict[str, Any] | None
    if template is not None and method.lower() in document["paths"][template]:
        schema = response_schema(document, method, template, status)
    elif status >= 400:  # no such route or method: still the error document
        schema = {"$ref": "#/components/schemas/Error", "components": document["components"]}
    else:
        return [f"{method} {path} is not in the document"]
    if schema is None:
        return []
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return sorted(
        f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
        for e in validator.iter_errors(body)
    )
