"""`fleet doctor [--invariants]`: warnings such as vps.hosts.capacity, and the invariant checks."""

from __future__ import annotations

import sys

import click

from bcfleet.cli.common import common_options, output, state


@click.command("doctor")
@common_options
@click.option(
    "--invariants", is_flag=True, help="Also check capacity, bookings, quotas and allocations."
)
def group(invariants: bool) -> None:
    """Check the fleet; exits 1 when an invariant is broken."""
    s = state()
    report = s.fleet.api.doctor.check(s.credential, invariants=invariants)

    def text(r: dict[str, object]) -> str:
        lines = [f"warning: {w['code']}: {w['message']}" for w in r["warnings"]]  # type: ignore[attr-defined]
        checks = r.get("invariants")
        if isinstance(checks, dict):
            for name, problems in checks["problems"].items():
                lines.append(f"{'ok  ' if not problems else 'FAIL'} {name}")
                lines.extend(f"     {p}" for p in problems)
        return "\n".join(lines) or "No warnings."

    output(report, text)
    if invariants and not report["invariants"]["ok"]:
        sys.exit(1)
