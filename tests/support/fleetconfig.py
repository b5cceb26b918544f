"""Shared pieces of the FleetConfig apply tests: documents, and ways to see that a database did not change."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlmodel import SQLModel

import bcfleet.store.models  # noqa: F401  (registers every table)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fleet.example.yaml"

BASE = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - { id: root }
  - { id: acme, name: ACME }
providerAccounts:
  - { name: hetzner-main, provider: hetzner, tokenEnv: HCLOUD_TOKEN }
pools:
  - name: vps-fra
    kind: vps-host
    offeredTo: [acme]
    gpuModel: L40S
    policy:
      overcommit: { vcpu: 2, memoryGiB: 1.5 }
      hostReserve: { vcpu: 2 }
  - { name: hetzner-fsn, kind: provider, offeredTo: [acme], providerAccount: hetzner-main }
hosts:
  - { name: fra-01, pool: vps-fra, labels: { bc.dev/cap.instance.placement: "true" } }
  - { name: fra-02, pool: vps-fra }
flavors:
  - { pool: vps-fra, name: g1.small, vcpu: 2, memoryGiB: 4, diskGiB: 40 }
  - { pool: vps-fra, name: g1.large, vcpu: 8, memoryGiB: 32, diskGiB: 200 }
  - { pool: vps-fra, name: gpu1.l40s, vcpu: 8, memoryGiB: 32, diskGiB: 200, gpus: 1,
      placement: { numaAffine: true, pinned: true, hugepageSizeBytes: 1073741824 } }
  - { pool: hetzner-fsn, name: cx23, vcpu: 2, memoryGiB: 4, diskGiB: 40, offerId: cx23 }
quotas:
  - { tenant: acme, pool: vps-fra, vcpu: 64, memoryGiB: 256, diskGiB: 2000, gpu: 4 }
  - { tenant: acme, pool: hetzner-fsn, vcpu: 16, memoryGiB: 64 }
"""

# BASE, edited: a flavor reshaped, one removed, one added, a quota and a policy changed,
# host labels cleared, an offer taken back and a tenant renamed.
CHANGED = (
    BASE.replace("name: g1.large, vcpu: 8, memoryGiB: 32", "name: g1.large, vcpu: 8, memoryGiB: 64")
    .replace(
        "  - { pool: hetzner-fsn, name: cx23,",
        "  - { pool: vps-fra, name: g1.medium, vcpu: 4, memoryGiB: 8, diskGiB: 80 }\n"
        "  - { pool: hetzner-fsn, name: cx23,",
    )
    .replace("vcpu: 16, memoryGiB: 64 }", "vcpu: 32, memoryGiB: 64 }")
    .replace("overcommit: { vcpu: 2, memoryGiB: 1.5 }", "overcommit: { vcpu: 3, memoryGiB: 1.5 }")
    .replace('labels: { bc.dev/cap.instance.placement: "true" }', "labels: {}")
    .replace("offeredTo: [acme], providerAccount", "offeredTo: [], providerAccount")
    .replace("{ id: acme, name: ACME }", "{ id: acme, name: ACME Corp }")
    .replace(
        "  - { pool: vps-fra, name: g1.small, vcpu: 2, memoryGiB: 4, diskGiB: 40 }\n",
        "",
    )
)


def without_compute(text: str) -> str:
    """The document with its compute section left out."""
    head, _, _ = text.partition("\ncompute:")
    return head.rstrip("\n") + "\n"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def settle_sqlite(path: Path) -> None:
    """Move everything from the WAL into the main file, so its bytes are the whole state."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def dump(url: str, *, skip: tuple[str, ...] = ()) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, sorted, on SQLite or PostgreSQL: equal dumps, equal state."""
    engine = create_engine(url)
    tables: dict[str, list[tuple[object, ...]]] = {}
    try:
        with engine.connect() as connection:
            for table in SQLModel.metadata.sorted_tables:
                if table.name in skip:
                    continue
                rows = connection.execute(text(f'SELECT * FROM "{table.name}"')).all()
                tables[table.name] = sorted((tuple(row) for row in rows), key=repr)
    finally:
        engine.dispose()
    return tables
