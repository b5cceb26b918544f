"""Settings from fleet.toml and BCFLEET_* environment variables (the documents' vps() and betterCompute() options)."""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from bcfleet.domain.egress import IPNetwork, parse_ranges
from bcfleet.domain.host_reserve import DEFAULT_RESERVE, HostReserve
from bcfleet.errors import InvalidInputError

DEFAULT_DB_URL = "sqlite:///fleet.db"


@dataclass(frozen=True)
class FleetSettings:
    db_url: str = DEFAULT_DB_URL
    spot_notice_ms: int = 120_000  # document 003: two minutes by default
    preemption_candidate_limit: int = 64  # document 003: at most 64 plans are compared
    host_reserve: HostReserve = field(default_factory=HostReserve)
    placement_strategy: str = "spread"  # spread | pack
    spare_boot_seconds: float = 20.0  # the simulated agent's boot delay, Retry-After's basis
    balloon_floor_percent: int = 50
    job_intervals: dict[str, float] = field(
        default_factory=lambda: {
            "vps.hosts": 30.0,
            "vps.usage": 300.0,
            "reservations.retry": 30.0,
            "reservations.lifecycle": 10.0,
            "spares": 30.0,
            "providers.reconcile": 60.0,
        }
    )
    lock_ttl_seconds: float = 30.0  # renewed every third of it while held (store/locks.py)
    provider_delete_grace_seconds: float = 300.0
    # The key sealing provider tokens at rest (bcfleet/secretbox.py); never shown.
    secret_key: str | None = field(default=None, repr=False)
    # Address ranges outbound requests for tenants may reach although private (bcfleet/egress.py).
    egress_allow: tuple[IPNetwork, ...] = ()
    # The bearer token /metrics requires (Prometheus' `authorization` setting); None: open.
    metrics_token: str | None = field(default=None, repr=False)
    # The edge of `fleet serve` (bcfleet/http/edge.py): seconds a connection has to send a
    # request head, seconds an idle keep-alive connection is kept, open connections at most
    # (held below the process's file-descriptor limit whatever is set).
    http_header_timeout_seconds: float = 10.0
    http_keepalive_seconds: int = 5
    http_max_connections: int = 1000


_ENV_FIELDS: dict[str, tuple[str, type]] = {
    "BCFLEET_DB": ("db_url", str),
    "BCFLEET_SPOT_NOTICE_MS": ("spot_notice_ms", int),
    "BCFLEET_PREEMPTION_CANDIDATE_LIMIT": ("preemption_candidate_limit", int),
    "BCFLEET_PLACEMENT_STRATEGY": ("placement_strategy", str),
    "BCFLEET_SPARE_BOOT_SECONDS": ("spare_boot_seconds", float),
    "BCFLEET_BALLOON_FLOOR_PERCENT": ("balloon_floor_percent", int),
    "BCFLEET_LOCK_TTL_SECONDS": ("lock_ttl_seconds", float),
    "BCFLEET_HTTP_HEADER_TIMEOUT_SECONDS": ("http_header_timeout_seconds", float),
    "BCFLEET_HTTP_KEEPALIVE_SECONDS": ("http_keepalive_seconds", int),
    "BCFLEET_HTTP_MAX_CONNECTIONS": ("http_max_connections", int),
}

_TOML_KEYS = {
    "db": "db_url",
    "spot_notice_ms": "spot_notice_ms",
    "preemption_candidate_limit": "preemption_candidate_limit",
    "placement_strategy": "placement_strategy",
    "spare_boot_seconds": "spare_boot_seconds",
    "balloon_floor_percent": "balloon_floor_percent",
    "lock_ttl_seconds": "lock_ttl_seconds",
    "provider_delete_grace_seconds": "provider_delete_grace_seconds",
    "http_header_timeout_seconds": "http_header_timeout_seconds",
    "http_keepalive_seconds": "http_keepalive_seconds",
    "http_max_connections": "http_max_connections",
}


# The bounds of each number a setting holds: (least, most). Times are seconds or milliseconds.
BOUNDS: dict[str, tuple[float, float]] = {
    "spot_notice_ms": (0, 86_400_000),  # up to a day of notice
    "preemption_candidate_limit": (1, 10_000),
    "spare_boot_seconds": (0, 3_600),
    "balloon_floor_percent": (1, 100),  # document 000's [instances] balloon_floor_percent
    "lock_ttl_seconds": (1, 3_600),
    "provider_delete_grace_seconds": (0, 30 * 86_400),
    "job_interval": (0.01, 7 * 86_400),
    "host_reserve": (0, 1_000_000),
    "http_header_timeout_seconds": (0.1, 3_600),
    "http_keepalive_seconds": (1, 3_600),
    "http_max_connections": (1, 1_000_000),
}
STRATEGIES = ("spread", "pack")


def _convert(name: str, kind: type, raw: Any) -> Any:
    try:
        value = kind(raw)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"setting {name} must be {kind.__name__}, got {raw!r}") from exc
    if kind is float and not math.isfinite(value):
        raise InvalidInputError(f"setting {name} must be a finite number, got {raw!r}")
    return value


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _check_bounds(settings: FleetSettings) -> FleetSettings:
    """INVALID_INPUT naming the setting and its bounds for any number outside them."""
    numbers: list[tuple[str, str, float]] = [
        (name, name, getattr(settings, name))
        for name in BOUNDS
        if isinstance(getattr(settings, name, None), int | float)
    ]
    numbers += [(f"jobs.{job}", "job_interval", v) for job, v in settings.job_intervals.items()]
    reserve = settings.host_reserve
    numbers += [
        (f"host_reserve.{key}", "host_reserve", getattr(reserve, key))
        for key in ("vcpu", "memory_gib", "disk_gib")
    ]
    for shown, bound, value in numbers:
        least, most = BOUNDS[bound]
        if not (math.isfinite(value) and least <= value <= most):
            raise InvalidInputError(
                f"setting {shown} must be between {_number(least)} and {_number(most)}, "
                f"got {value!r}",
                {"setting": shown, "minimum": least, "maximum": most},
            )
    if settings.placement_strategy not in STRATEGIES:
        raise InvalidInputError(
            f"setting placement_strategy must be one of {', '.join(STRATEGIES)}, "
            f"got {settings.placement_strategy!r}",
            {"setting": "placement_strategy"},
        )
    return settings


def load_fleet_settings(
    path: Path | None = None, environ: dict[str, str] | None = None
) -> FleetSettings:
    """Defaults, then fleet.toml (if present), then BCFLEET_* variables, later winning."""
    env = dict(os.environ) if environ is None else environ
    settings = FleetSettings()
    toml_path = path or Path(env.get("BCFLEET_CONFIG", "fleet.toml"))
    if toml_path.is_file():
        settings = _apply_toml(settings, toml_path)
    updates: dict[str, Any] = {}
    for variable, (attr, kind) in _ENV_FIELDS.items():
        if variable in env and env[variable] != "":
            updates[attr] = _convert(variable, kind, env[variable])
    if env.get("BCFLEET_SECRET_KEY", "").strip():
        updates["secret_key"] = env["BCFLEET_SECRET_KEY"].strip()
    if env.get("BCFLEET_METRICS_TOKEN", "").strip():
        updates["metrics_token"] = env["BCFLEET_METRICS_TOKEN"].strip()
    if env.get("BCFLEET_EGRESS_ALLOW", "").strip():
        updates["egress_allow"] = _ranges("BCFLEET_EGRESS_ALLOW", env["BCFLEET_EGRESS_ALLOW"])
    return _check_bounds(replace(settings, **updates))


def _ranges(name: str, raw: Any) -> tuple[IPNetwork, ...]:
    """An egress allow list: "127.0.0.0/8,::1/128" or a list of ranges."""
    if not isinstance(raw, str | list):
        raise InvalidInputError(f"setting {name} must be a list of address ranges")
    try:
        return parse_ranges(raw)
    except ValueError as exc:
        raise InvalidInputError(f"setting {name}: {exc}") from None


def _secret_key(section: dict[str, Any], path: Path) -> str | None:
    """secret_key, or the contents of secret_key_file (relative to fleet.toml's folder)."""
    if isinstance(section.get("secret_key"), str) and section["secret_key"].strip():
        return str(section["secret_key"]).strip()
    named = section.get("secret_key_file")
    if named is None:
        return None
    key_path = path.parent / str(named)
    try:
        return key_path.read_text().strip() or None
    except OSError as exc:
        raise InvalidInputError(
            f"setting secret_key_file: cannot read {key_path} ({exc.strerror})"
        ) from None


def _instances(table: Any) -> dict[str, Any]:
    """Document 000's ``[instances]`` table: balloon_floor_percent (wins over the flat key)."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise InvalidInputError("setting instances must be a table ([instances])")
    if "balloon_floor_percent" not in table:
        return {}
    key = "instances.balloon_floor_percent"
    return {"balloon_floor_percent": _convert(key, int, table["balloon_floor_percent"])}


def _apply_toml(settings: FleetSettings, path: Path) -> FleetSettings:
    try:
        document = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read it ({exc.strerror})") from None
    section = document.get("fleet", document)
    known = {f.name: f for f in fields(FleetSettings)}
    updates: dict[str, Any] = {}
    for key, attr in _TOML_KEYS.items():
        if key in section:
            updates[attr] = _convert(key, type(getattr(settings, attr)), section[key])
    reserve = section.get("host_reserve")
    if isinstance(reserve, dict):
        updates["host_reserve"] = HostReserve(
            vcpu=_convert("host_reserve.vcpu", int, reserve.get("vcpu", DEFAULT_RESERVE.vcpu)),
            memory_gib=_convert(
                "host_reserve.memoryGiB", int, reserve.get("memoryGiB", DEFAULT_RESERVE.memory_gib)
            ),
            disk_gib=_convert(
                "host_reserve.diskGiB", int, reserve.get("diskGiB", DEFAULT_RESERVE.disk_gib)
            ),
        )
    intervals = section.get("jobs")
    if isinstance(intervals, dict):
        merged = dict(settings.job_intervals)
        merged.update({str(k): _convert(f"jobs.{k}", float, v) for k, v in intervals.items()})
        updates["job_intervals"] = merged
    sealing_key = _secret_key(section, path)
    if sealing_key is not None:
        updates["secret_key"] = sealing_key
    if "egress_allow" in section:
        updates["egress_allow"] = _ranges("egress_allow", section["egress_allow"])
    updates.update(_instances(document.get("instances")))
    assert set(updates) <= set(known)
    return replace(settings, **updates)
