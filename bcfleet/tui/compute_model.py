"""The Compute tab's form as data: what is typed, what it would save, and why it cannot be saved yet.

Pure, over the rules of bcfleet/domain (draft_change, credits_table,
check_default, is_default_locked, users_of_size's messages), so what the form
shows while editing is exactly what a save would decide, before anything is
sent. The screen (screens/compute.py) only draws an Evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bcfleet.domain.compute_settings import (
    ChangeResult,
    ComputeChange,
    ComputeSettings,
    CreditsRow,
    SizeChange,
    check_default,
    credits_table,
    default_size_choices,
    draft_change,
    in_use_message,
    is_default_locked,
)
from bcfleet.domain.sizes import SIZE_NAMES, SIZES, format_credits, label
from bcfleet.errors import FleetError
from bcfleet.tui.source import ComputeSnapshot


def shapes_text(size: str, *, short: bool = False) -> str:
    """'Services 1 vCPU, 4 GiB memory · Indexes 0.9+ vCPU, 8 GiB memory' (short: 'Svc … · Idx …').

    The short form (at most 40 cells) leaves room at 80 columns for the headings in
    document 004's words.
    """
    entry = SIZES[size]
    if short:
        service, index = entry.service, entry.index
        return (
            f"Svc {service.vcpu} vCPU {service.memory_gib} GiB · "
            f"Idx {index.vcpu}+ vCPU {index.memory_gib} GiB"
        )
    return f"Services {entry.service.describe()} · Indexes {entry.index.describe()}"


@dataclass(frozen=True)
class Form:
    """What the form holds: switches, spare counts as typed, the chosen default (None: none) and
    the serverless pool's id (None: none, which a save cannot set, as `settings compute set`)."""

    enabled: Mapping[str, bool]
    spares: Mapping[str, str]
    default: str | None
    pool: str | None = None

    @classmethod
    def of(cls, settings: ComputeSettings) -> Form:
        return cls(
            enabled={s.size: s.enabled for s in settings.sizes},
            spares={s.size: str(s.spares) for s in settings.sizes},
            default=settings.default_size,
            pool=settings.serverless_pool,
        )

    def with_enabled(self, size: str, on: bool) -> Form:
        return replace(self, enabled={**self.enabled, size: on})

    def with_spares(self, size: str, text: str) -> Form:
        return replace(self, spares={**self.spares, size: text})

    def with_default(self, size: str | None) -> Form:
        return replace(self, default=size)

    def with_pool(self, pool: str | None) -> Form:
        return replace(self, pool=pool)


@dataclass(frozen=True)
class SizeLine:
    size: str
    label: str
    enabled: bool
    locked: bool
    spares_problem: str | None
    credits: str


@dataclass(frozen=True)
class Evaluation:
    """Everything the form shows for its current values."""

    lines: tuple[SizeLine, ...]
    total: str
    default_choices: tuple[tuple[str, str], ...]
    change: ComputeChange | None
    notices: tuple[str, ...] = ()
    default_problem: str | None = None
    in_use: tuple[str, ...] = ()
    dirty: bool = False
    problems: tuple[str, ...] = field(default=())

    @property
    def can_save(self) -> bool:
        return self.change is not None and self.dirty and not self.in_use and not self.problems


UNKNOWN_CREDITS = "?"
"""Credits of a spares field whose text is no count (and the Total then): not a number to trust."""


def _spares(size: str, text: str) -> tuple[int | None, str | None]:
    raw = text.strip()
    if not raw:
        return None, f"Enter a number of spare instances for {label(size)} (0 to keep none ready)"
    if not raw.isdigit():
        return None, (
            f"Spare instances of {label(size)} must be a whole number of 0 or more, not {raw!r}"
        )
    return int(raw), None


def _change(snapshot: ComputeSnapshot, form: Form) -> tuple[ComputeChange, dict[str, str]]:
    sizes: dict[str, SizeChange] = {}
    problems: dict[str, str] = {}
    for name in SIZE_NAMES:
        count, problem = _spares(name, form.spares[name])
        if problem:
            problems[name] = problem
        current = snapshot.settings.setting(name)
        sizes[name] = SizeChange(
            enabled=form.enabled[name] if form.enabled[name] != current.enabled else None,
            spares=count if count is not None and count != current.spares else None,
        )
    moved = form.default != snapshot.settings.default_size
    pool = form.pool if form.pool != snapshot.settings.serverless_pool else None
    return (
        ComputeChange(
            sizes={k: v for k, v in sizes.items() if v != SizeChange()},
            default_size=form.default if moved else None,
            clear_default=moved and form.default is None,
            serverless_pool=pool,
        ),
        problems,
    )


def _in_use(snapshot: ComputeSnapshot, draft: ComputeSettings) -> tuple[str, ...]:
    """A warning per size this form turns off while something still uses it."""
    warnings = []
    for before, after in zip(snapshot.settings.sizes, draft.sizes, strict=True):
        holders = snapshot.users.get(after.size, ())
        if before.enabled and not after.enabled and holders:
            warnings.append(
                in_use_message(after.size, holders)
                + f". Switch {label(after.size)} back on or move them to another size."
            )
    return tuple(warnings)


def evaluate(snapshot: ComputeSnapshot, form: Form) -> Evaluation:
    """The form's credits, locks, choices, warnings and the change a save would send."""
    change, spares_problems = _change(snapshot, form)
    try:
        drafted: ChangeResult = draft_change(snapshot.settings, change)
    except FleetError as error:  # a rule of the input itself (unknown size, both default and clear)
        return _broken(snapshot, form, error.message)
    draft = drafted.settings
    default_problem = None
    try:
        check_default(snapshot.settings, draft)
    except FleetError as error:
        default_problem = error.message
    table = credits_table(draft)
    lines = tuple(
        SizeLine(
            size=row.size,
            label=row.label,
            enabled=row.enabled,
            locked=is_default_locked(draft, row.size),
            spares_problem=spares_problems.get(row.size),
            credits=_credits_text(row, row.size in spares_problems),
        )
        for row in table.rows
    )
    problems = tuple(spares_problems.values()) + ((default_problem,) if default_problem else ())
    unknown = any(table.rows[SIZE_NAMES.index(size)].enabled for size in spares_problems)
    return Evaluation(
        lines=lines,
        total=UNKNOWN_CREDITS if unknown else format_credits(table.total),
        default_choices=default_size_choices(draft),
        change=change,
        notices=tuple(n.message for n in drafted.notices),
        default_problem=default_problem,
        in_use=_in_use(snapshot, draft),
        dirty=bool(change.sizes)
        or change.default_size is not None
        or change.clear_default
        or change.serverless_pool is not None,
        problems=problems,
    )


def _credits_text(row: CreditsRow, unknown: bool) -> str:
    """A row's Credits per month as the field reads: '-' when off, '?' when no count is typed."""
    if not row.enabled:
        return "-"
    return UNKNOWN_CREDITS if unknown else format_credits(row.credits_per_month)


def _broken(snapshot: ComputeSnapshot, form: Form, message: str) -> Evaluation:
    base = evaluate(snapshot, Form.of(snapshot.settings))
    return Evaluation(
        lines=base.lines,
        total=base.total,
        default_choices=base.default_choices,
        change=None,
        problems=(message,),
        dirty=form != Form.of(snapshot.settings),
    )
