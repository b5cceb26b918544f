"""Load a FleetConfig file into a DesiredFleet for `fleet validate`, `fleet plan`, `fleet apply`.

Every problem, whether YAML syntax, schema or meaning, becomes a Diagnostic
(``file:line:column: message [$.json.path]``), and all of them are raised at once
as one InvalidInputError whose ``details["errors"]`` lists
``{file, line, column, path, message}``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bcfleet.domain.document_limits import (
    FLEETCONFIG_MAX_BYTES,
    MAX_PROBLEMS,
    problems_cut,
    too_large,
)
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.errors import InvalidInputError
from bcfleet.input_files import DocumentRefused, read_text
from bcfleet.reconcile.checks import meaning_findings
from bcfleet.reconcile.model import (
    ComputeSpec,
    DesiredFleet,
    Diagnostic,
    FlavorSpec,
    HostSpec,
    OfferSpec,
    PoolSpec,
    ProviderAccountSpec,
    QuotaSpec,
    TenantSpec,
    normalize_host_reserve,
    normalize_labels,
    normalize_overcommit,
    normalize_placement,
    normalize_sizes,
)
from bcfleet.reconcile.perf import collector_paused
from bcfleet.reconcile.schema import schema_problems
from bcfleet.reconcile.value_checks import value_findings
from bcfleet.reconcile.yamldoc import (
    ParsedDocument,
    Problem,
    YamlProblems,
    json_path,
    parse_yaml,
)

_MESSAGE_LINES = 50


def load_fleetconfig(
    path: str | os.PathLike[str], *, host_reserve: HostReserve | None = None
) -> DesiredFleet:
    """Read, validate and normalize a FleetConfig file."""
    name = os.fspath(path)
    return load_fleetconfig_text(read_fleetconfig(name), file=name, host_reserve=host_reserve)


def read_fleetconfig(path: str | os.PathLike[str]) -> str:
    """A FleetConfig file's text as the loader reads it: at most FLEETCONFIG_MAX_BYTES of
    UTF-8, a leading BOM dropped; INVALID_INPUT at ``file:line:column`` otherwise."""
    name = os.fspath(path)
    try:
        return read_text(name, limit=FLEETCONFIG_MAX_BYTES, what="FleetConfig")
    except DocumentRefused as refused:
        where = refused.where
        raise _invalid([Diagnostic(name, where.line, where.column, "$", where.message)]) from None


def load_fleetconfig_text(
    text: str, *, file: str = "<string>", host_reserve: HostReserve | None = None
) -> DesiredFleet:
    """Validate and normalize FleetConfig text; ``file`` names it in diagnostics."""
    with collector_paused():
        return _load_text(text, file, host_reserve)


def _load_text(text: str, file: str, host_reserve: HostReserve | None) -> DesiredFleet:
    if len(text.encode("utf-8", "replace")) > FLEETCONFIG_MAX_BYTES:  # a saved plan's text
        message = too_large("FleetConfig", FLEETCONFIG_MAX_BYTES)
        raise _invalid([Diagnostic(file, 1, 1, "$", message)])
    try:
        document = parse_yaml(text)
    except YamlProblems as exc:
        raise _invalid_at(file, ParsedDocument(None), exc.problems) from None
    problems = schema_problems(document.data)
    reported = {problem.path for problem in problems}
    problems += [p for p in value_findings(document.data) if p.path not in reported]
    if problems:
        raise _invalid_at(file, document, problems)
    findings = meaning_findings(document.data)
    if findings.errors:
        raise _invalid_at(file, document, findings.errors)
    return replace(
        build_desired(document.data, host_reserve=host_reserve),
        warnings=tuple(_diagnose(file, document, findings.warnings)),
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _diagnose(file: str, document: ParsedDocument, problems: Sequence[Problem]) -> list[Diagnostic]:
    diagnostics = []
    for problem in problems:
        where = problem.position or document.locate(problem.path, at_key=problem.at_key)
        diagnostics.append(
            Diagnostic(file, where.line, where.column, json_path(problem.path), problem.message)
        )
    return sorted(diagnostics, key=lambda d: (d.line, d.column, d.path, d.message))


def _invalid_at(
    file: str, document: ParsedDocument, problems: Sequence[Problem]
) -> InvalidInputError:
    """The error for ``problems``: at most MAX_PROBLEMS of them, located, and whether it stopped."""
    truncated = len(problems) > MAX_PROBLEMS
    return _invalid(_diagnose(file, document, problems[:MAX_PROBLEMS]), truncated=truncated)


def _invalid(diagnostics: list[Diagnostic], *, truncated: bool = False) -> InvalidInputError:
    lines = [d.format() for d in diagnostics[:_MESSAGE_LINES]]
    if len(diagnostics) > _MESSAGE_LINES:
        lines.append(f"... and {len(diagnostics) - _MESSAGE_LINES} more")
    details: dict[str, Any] = {"errors": [d.to_json() for d in diagnostics]}
    if truncated:
        lines.append(problems_cut())
        details["truncated"] = True
    return InvalidInputError("\n".join(lines), details)


def build_desired(
    data: Mapping[str, Any], *, host_reserve: HostReserve | None = None
) -> DesiredFleet:
    """A DesiredFleet from schema- and meaning-valid data, every default filled in."""

    def section(name: str) -> list[Mapping[str, Any]]:
        return list(data.get(name) or [])

    pools = section("pools")
    return DesiredFleet(
        tenants=tuple(TenantSpec(t["id"], t.get("name", t["id"])) for t in section("tenants")),
        provider_accounts=tuple(
            ProviderAccountSpec(a["name"], a["provider"], a["tokenEnv"], a.get("endpoint"))
            for a in section("providerAccounts")
        ),
        pools=tuple(_pool(p, host_reserve) for p in pools),
        offers=tuple(
            OfferSpec(p["name"], t)
            for p in pools
            for t in p.get("offeredTo") or []
            if t != p.get("owner", ROOT_TENANT)
        ),
        hosts=tuple(
            HostSpec(
                h["name"],
                h["pool"],
                normalize_labels(h.get("labels")),
                bool(h.get("tenantControlled", False)),
            )
            for h in section("hosts")
        ),
        flavors=tuple(_flavor(f) for f in section("flavors")),
        quotas=tuple(_quota(q) for q in section("quotas")),
        compute=tuple(
            ComputeSpec(
                c["tenant"],
                c.get("serverlessPool"),
                c.get("defaultSize"),
                normalize_sizes(c.get("sizes")),
            )
            for c in section("compute")
        ),
    )


def _pool(pool: Mapping[str, Any], host_reserve: HostReserve | None) -> PoolSpec:
    policy = pool.get("policy") or {}
    return PoolSpec(
        name=pool["name"],
        kind=pool["kind"],
        owner=pool.get("owner", ROOT_TENANT),
        gpu_model=pool.get("gpuModel"),
        overcommit=normalize_overcommit(policy.get("overcommit")),
        host_reserve=normalize_host_reserve(policy.get("hostReserve"), host_reserve),
        provider_account=pool.get("providerAccount"),
    )


def _flavor(flavor: Mapping[str, Any]) -> FlavorSpec:
    return FlavorSpec(
        pool=flavor["pool"],
        name=flavor["name"],
        vcpu=int(flavor["vcpu"]),
        memory_gib=int(flavor["memoryGiB"]),
        disk_gib=int(flavor["diskGiB"]),
        gpus=int(flavor.get("gpus", 0)),
        offer_id=flavor.get("offerId"),
        placement=normalize_placement(flavor.get("placement")),
    )


def _quota(quota: Mapping[str, Any]) -> QuotaSpec:
    def limit(name: str) -> int | None:
        value = quota.get(name)
        return None if value is None else int(value)

    return QuotaSpec(
        quota["tenant"],
        quota["pool"],
        vcpu=limit("vcpu"),
        memory_gib=limit("memoryGiB"),
        disk_gib=limit("diskGiB"),
        gpu=limit("gpu"),
    )
