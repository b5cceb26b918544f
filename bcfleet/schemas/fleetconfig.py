"""The FleetConfig JSON Schema, built from the bounds the API enforces; writes fleetconfig.schema.json.

Every limit, pattern and list below is read from the domain module that checks it
(``domain/bounds.py``, ``domain/sizes.py``, ``domain/states.py``), as the OpenAPI document's
are, so the schema an editor reads refuses what the API refuses and nothing more. The shipped
file is this module's output: ``python -m bcfleet.schemas.fleetconfig`` rewrites it, and a test
fails while the two differ. Where a rule is more than a schema keyword can say (a URL's parser,
printable text), the schema states a looser form and ``fleet validate`` asks the rule itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bcfleet.domain.bounds import (
    ENV_NAME,
    GPU_MODEL,
    HUGEPAGE_SIZES,
    LABEL_KEY,
    LABEL_KEY_MAX,
    LABEL_KEY_WORDS,
    LABEL_VALUE_MAX,
    NAME_MAX,
    QUOTA_MAX,
    RATIO_MAX,
    RATIO_MIN,
    SHAPE_MAX,
    SLUG,
    SLUG_MAX,
    TENANT_ID,
    TENANT_NAME_MAX,
    URL_MAX,
    URL_WORDS,
    url_pattern,
)
from bcfleet.domain.host_reserve import DEFAULT_RESERVE
from bcfleet.domain.sizes import SIZE_NAMES, SPARES_ASKED_MAX, SPARES_MAX
from bcfleet.domain.states import PROVIDERS, PoolKind

Schema = dict[str, Any]

FILE = Path(__file__).with_name("fleetconfig.schema.json")


def _ref(name: str) -> Schema:
    return {"$ref": f"#/$defs/{name}"}


def _array(item: str, description: str = "", *, unique: bool = False) -> Schema:
    body: Schema = {"type": "array"}
    if description:
        body["description"] = description
    if unique:
        body["uniqueItems"] = True
    body["items"] = _ref(item)
    return body


def _object(properties: Schema, required: list[str] | None = None, **extra: Any) -> Schema:
    body: Schema = {"type": "object", "additionalProperties": False}
    if required:
        body["required"] = required
    body.update(extra)
    body["properties"] = properties
    return body


def _whole(low: int, high: int) -> Schema:
    return {"type": "integer", "minimum": low, "maximum": high}


def _per_scalar(kind: str) -> Schema:
    return {name: _ref(kind) for name in ("vcpu", "memoryGiB", "diskGiB")}


def _definitions() -> Schema:
    reserve = DEFAULT_RESERVE
    return {
        "tenantId": {
            "type": "string",
            "description": "1-63 lower-case letters, digits or '-', starting with a letter",
            "pattern": TENANT_ID.pattern,
        },
        "name": {
            "type": "string",
            "description": f"1-{SLUG_MAX} lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
            "pattern": SLUG.pattern,
        },
        "count": _whole(0, SHAPE_MAX),
        "positiveCount": _whole(1, SHAPE_MAX),
        "quotaCount": _whole(0, QUOTA_MAX),
        "ratio": {
            "type": "number",
            "description": f"an overcommit ratio; outside {RATIO_MIN:g}..{RATIO_MAX:g} it is "
            "clamped into that range, with a warning",
        },
        "size": {"type": "string", "enum": list(SIZE_NAMES)},
        "tenant": _object(
            {
                "id": _ref("tenantId"),
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": TENANT_NAME_MAX,
                    "description": "the display name, printable; defaults to the id",
                },
            },
            ["id"],
        ),
        "providerAccount": _object(
            {
                "name": _ref("name"),
                "provider": {"type": "string", "enum": list(PROVIDERS)},
                "tokenEnv": {
                    "type": "string",
                    "description": "an environment variable name: uppercase letters, digits "
                    "and '_'",
                    "pattern": ENV_NAME.pattern,
                },
                "endpoint": {
                    "type": "string",
                    "maxLength": URL_MAX,
                    "description": URL_WORDS,
                    "pattern": url_pattern(),
                },
            },
            ["name", "provider", "tokenEnv"],
        ),
        "overcommit": _object(
            _per_scalar("ratio"),
            description="allocatable × ratio is what a host takes; default 1, each clamped to "
            f"{RATIO_MIN:g}..{RATIO_MAX:g}; GPUs are never overcommitted",
        ),
        "hostReserve": _object(
            _per_scalar("count"),
            description="what each host keeps for itself; the fleet's defaults are "
            f"{reserve.vcpu} vCPU, {reserve.memory_gib} GiB memory, {reserve.disk_gib} GiB disk",
        ),
        "pool": {
            **_object(
                {
                    "name": _ref("name"),
                    "kind": {"type": "string", "enum": [kind.value for kind in PoolKind]},
                    "owner": {
                        **_ref("tenantId"),
                        "description": "the owning tenant; defaults to root",
                    },
                    "offeredTo": _array("tenantId", unique=True),
                    "gpuModel": {
                        "type": "string",
                        "pattern": GPU_MODEL.pattern,
                        "description": "letters, digits, '.', '_' and '-'",
                    },
                    "policy": _object(
                        {"overcommit": _ref("overcommit"), "hostReserve": _ref("hostReserve")}
                    ),
                    "providerAccount": _ref("name"),
                },
                ["name", "kind"],
            ),
            "if": {
                "properties": {"kind": {"const": PoolKind.PROVIDER.value}},
                "required": ["kind"],
            },
            "then": {"required": ["providerAccount"]},
        },
        "labelKey": {
            "type": "string",
            "maxLength": LABEL_KEY_MAX,
            "description": LABEL_KEY_WORDS,
            "pattern": LABEL_KEY.pattern,
        },
        "host": _object(
            {
                "name": _ref("name"),
                "pool": _ref("name"),
                "labels": {
                    "type": "object",
                    "propertyNames": _ref("labelKey"),
                    "additionalProperties": {
                        "type": "string",
                        "maxLength": LABEL_VALUE_MAX,
                        "description": f"0-{LABEL_VALUE_MAX} printable characters",
                    },
                },
                "tenantControlled": {
                    "type": "boolean",
                    "description": "a tenant runs this host itself: no capacity rows are "
                    "derived for it",
                },
            },
            ["name", "pool"],
        ),
        "placement": _object(
            {
                "numaAffine": {"type": "boolean"},
                "pinned": {"type": "boolean"},
                "hugepageSizeBytes": {
                    "type": "integer",
                    "enum": list(HUGEPAGE_SIZES),
                    "description": "a power of two from 4 KiB to 1 TiB: 2 MiB is 2097152, "
                    "1 GiB is 1073741824",
                },
            }
        ),
        "flavor": _object(
            {
                "pool": _ref("name"),
                "name": _ref("name"),
                "vcpu": _ref("positiveCount"),
                "memoryGiB": _ref("positiveCount"),
                "diskGiB": _ref("positiveCount"),
                "gpus": _ref("count"),
                "offerId": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": NAME_MAX,
                    "description": "the provider's offer, printable",
                },
                "placement": _ref("placement"),
            },
            ["pool", "name", "vcpu", "memoryGiB", "diskGiB"],
        ),
        "quota": _object(
            {
                "tenant": _ref("tenantId"),
                "pool": _ref("name"),
                **{name: _ref("quotaCount") for name in ("vcpu", "memoryGiB", "diskGiB", "gpu")},
            },
            ["tenant", "pool"],
        ),
        "sizeSetting": _object(
            {
                "enabled": {"type": "boolean", "description": "defaults to true for a listed size"},
                "spares": {
                    **_whole(0, SPARES_ASKED_MAX),
                    "description": f"spare instances kept ready; more than {SPARES_MAX} keeps "
                    f"{SPARES_MAX}",
                },
            }
        ),
        "compute": _object(
            {
                "tenant": _ref("tenantId"),
                "serverlessPool": _ref("name"),
                "defaultSize": _ref("size"),
                "sizes": _object(
                    {name: _ref("sizeSetting") for name in SIZE_NAMES},
                    description="a size left out keeps the default: enabled, with 0 spares",
                ),
            },
            ["tenant"],
        ),
    }


def fleetconfig_schema() -> Schema:
    """The FleetConfig schema (JSON Schema 2020-12), as the shipped file holds it."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://bcfleet.dev/schemas/fleetconfig.schema.json",
        "title": "bcfleet FleetConfig",
        "description": "The fleet that `fleet plan` and `fleet apply` converge the state to: "
        "tenants, provider accounts, pools, hosts, flavors, quotas and compute settings.",
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind"],
        "properties": {
            "apiVersion": {"const": "bcfleet.dev/v1"},
            "kind": {"const": "FleetConfig"},
            "tenants": _array(
                "tenant",
                "Tenants; `root` (the operator) always exists and may be referenced without "
                "being declared.",
            ),
            "providerAccounts": _array(
                "providerAccount",
                "Provider accounts of the root tenant; the token is read from the environment "
                "variable `tokenEnv`, never stored.",
            ),
            "pools": _array("pool"),
            "hosts": _array("host", "Hosts of vps-host pools, adopted by name."),
            "flavors": _array("flavor", "Named instance shapes, per pool (document 000)."),
            "quotas": _array(
                "quota", "What a tenant may hold in a pool; a limit left out is not limited."
            ),
            "compute": _array(
                "compute",
                "Compute settings of a tenant (document 004): instance sizes, spare instances, "
                "default size.",
            ),
        },
        "$defs": _definitions(),
    }


def schema_text() -> str:
    """The shipped file's text: the schema as indented JSON, non-ASCII kept, one final newline."""
    return json.dumps(fleetconfig_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    """Rewrite the shipped file from the bounds (``python -m bcfleet.schemas.fleetconfig``)."""
    FILE.write_text(schema_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {FILE.name}\n")


if __name__ == "__main__":
    main()
