"""Saved plans (`fleet plan --out plan.json`, `fleet apply plan.json`): the plan and what it rests on.

A saved plan records the bcfleet version, the state revision it was made
against, the configuration's text with its sha256, and the plan as JSON.
Applying it plans the recorded configuration again under the apply lock and
refuses (STALE_PLAN) unless every change, with its before- and after-values, is
unchanged (``apply._check_fresh``); a write to something the plan does not
touch does not stale it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bcfleet import __version__
from bcfleet.domain.document_limits import SAVED_PLAN_MAX_BYTES
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.errors import InvalidInputError, StalePlanError
from bcfleet.input_files import DocumentRefused, parse_json_text, read_text
from bcfleet.reconcile.actions import Plan
from bcfleet.reconcile.apply import Approved, plan_json
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.reconcile.plan_file import check_target, write_atomically

FORMAT = "bcfleet-plan"
FORMAT_VERSION = "1"


@dataclass(frozen=True)
class SavedPlan:
    file: str  # the configuration's file name, as diagnostics name it
    text: str  # the configuration's text
    plan: Mapping[str, Any]  # plan_json() of the plan
    allow_empty: bool = False
    version: str = __version__

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def state_revision(self) -> int:
        return int(self.plan["state_revision"])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "bcfleet_version": self.version,
            "config": {"file": self.file, "sha256": self.digest, "text": self.text},
            "state_revision": self.state_revision,
            "allow_empty": self.allow_empty,
            "plan": dict(self.plan),
        }


def save_plan(
    path: str | os.PathLike[str],
    result: Plan,
    *,
    file: str,
    text: str,
    allow_empty: bool,
    database_url: str | None = None,
    force: bool = False,
) -> SavedPlan:
    """Write a plan that has no errors, atomically, where plan_file.check_target allows (never
    over the database at database_url); INVALID_INPUT for one that could never be applied."""
    if result.errors:
        raise InvalidInputError(
            "a plan with errors cannot be saved: fix them first",
            {"errors": [error.to_json() for error in result.errors]},
        )
    saved = SavedPlan(file=file, text=text, plan=plan_json(result), allow_empty=allow_empty)
    body = json.dumps(saved.to_json(), indent=2) + "\n"
    target = check_target(
        os.fspath(path), database_url=database_url, force=force, is_plan=_looks_like_plan
    )
    try:
        write_atomically(target, body)
    except OSError as exc:
        raise InvalidInputError(
            f"cannot write the plan to {os.fspath(path)}: {exc.strerror or exc}"
        ) from exc
    return saved


def _looks_like_plan(path: Path) -> bool:
    """Whether the file is a saved plan of any version (one made by `fleet plan --out`)."""
    try:
        document = parse_json_text(read_text(path, limit=SAVED_PLAN_MAX_BYTES, what="saved plan"))
    except DocumentRefused:
        return False
    return isinstance(document, dict) and document.get("format") == FORMAT


def read_plan(path: str | os.PathLike[str]) -> SavedPlan:
    """Read a saved plan; INVALID_INPUT for a file that is not one or was edited,
    STALE_PLAN for one made by another bcfleet version."""
    name = os.fspath(path)
    try:
        document = parse_json_text(read_text(name, limit=SAVED_PLAN_MAX_BYTES, what="saved plan"))
    except DocumentRefused as refused:
        where = refused.where
        if refused.unreadable is not None:
            raise InvalidInputError(f"cannot read the plan {name}: {refused.unreadable}") from None
        at = f"line {where.line}, column {where.column}"
        raise _not_a_plan(name, f"{where.message} ({at})") from None
    saved = _parse(name, document)
    if saved.version != __version__:
        raise StalePlanError(
            f"{name} was made by bcfleet {saved.version}, this is {__version__}: make a new plan",
            {"planVersion": saved.version, "version": __version__},
        )
    return saved


def _not_a_plan(name: str, why: str) -> InvalidInputError:
    """INVALID_INPUT for a file given as a saved plan that is not one; the way out it names
    never writes over that file (it may be the FleetConfig itself)."""
    plan = plan_name_for(name)
    return InvalidInputError(
        f"{name} is not a saved plan: {why}; to apply a FleetConfig run `fleet apply -f {name}`, "
        f"or save its plan with `fleet plan -f {name} --out {plan}` and run `fleet apply {plan}`",
        {"file": name},
    )


def plan_name_for(name: str) -> str:
    """Where to save the plan of a FleetConfig: next to it, never the file itself."""
    path = Path(name)
    return str(path.with_name(f"{path.stem}.plan.json"))


def _parse(name: str, document: Any) -> SavedPlan:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _not_a_plan(name, f'no "format": "{FORMAT}"')
    try:
        config, plan = document["config"], document["plan"]
        saved = SavedPlan(
            file=str(config["file"]),
            text=str(config["text"]),
            plan=plan,
            allow_empty=bool(document.get("allow_empty", False)),
            version=str(document["bcfleet_version"]),
        )
        consistent = (
            config["sha256"] == saved.digest
            and int(document["state_revision"]) == saved.state_revision
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _not_a_plan(name, f"missing or malformed {exc}") from exc
    if not consistent or str(document.get("format_version")) != FORMAT_VERSION:
        raise _not_a_plan(name, "it was edited after it was made")
    return saved


def approved_from(saved: SavedPlan, *, host_reserve: HostReserve | None = None) -> Approved:
    """What applying a saved plan approves: its recorded configuration and plan."""
    desired = load_fleetconfig_text(saved.text, file=saved.file, host_reserve=host_reserve)
    return Approved(desired=desired, plan=saved.plan, allow_empty=saved.allow_empty, saved=True)
