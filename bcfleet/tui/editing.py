"""The console's `e` (edit), `n` (new) and `:plan FILE`: YAML in $EDITOR, then the plan, a confirm, the apply.

`e` opens the FleetConfig YAML of the row (tui/declare.py, the describe view's) in
$EDITOR (vi when it is unset, and the console says so); `n` opens a template of the
view's kind. The console is suspended while the editor runs. On save:

- an unchanged file, or one with nothing but comments, cancels;
- a document that fails validation reopens the editor with each problem at
  ``file:line:column`` in comment lines at the top (`#|`, removed again on save), as
  k9s does; so does a plan with errors (a pool's kind changed, a size in use);
- otherwise the plan is shown (screens/plan.py) and, once confirmed with a key typed
  after it appeared, applied by `fleet apply`'s own reconciler (reconcile/apply.py): under
  the apply lock, planned again, and STALE_PLAN (nothing applied) when a change it shows,
  or a before-value it showed, changed meanwhile.

The edited document declares one object, not the fleet: it is merged into the state and
its plan scoped to what it declares (reconcile/edit.py), so an edit never deletes what it
leaves out. `:plan FILE` plans a whole FleetConfig as `fleet plan -f FILE` does, deletions
included, and applies it after the confirm as `fleet apply -f FILE` does.

Over HTTP these keys say so and do nothing: the server has no plan or apply endpoint, and
FleetConfig applies where the database is.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import SuspendNotSupported

from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.errors import InvalidInputError, StalePlanError
from bcfleet.reconcile.actions import Plan
from bcfleet.reconcile.apply import Approved, apply, make_plan, observe_state, plan_json
from bcfleet.reconcile.edit import SECTION_KEYS, Scope, load_edit, state_sections
from bcfleet.reconcile.load import load_fleetconfig
from bcfleet.reconcile.render import NO_CHANGES, render_text
from bcfleet.tui.declare import SECTIONS, declaration, section_yaml
from bcfleet.tui.screens.acting import error_text
from bcfleet.tui.screens.plan import PlanConfirm
from bcfleet.tui.source import LocalSource

if TYPE_CHECKING:
    from bcfleet.reconcile.model import DesiredFleet
    from bcfleet.tui.screens.base import ViewScreen

FALLBACK_EDITOR = "vi"
MARK = "#|"
"""The first characters of the lines the console writes atop the file (removed on save)."""
NOT_OVER_HTTP = (
    "{what} is not available over HTTP: the server has no plan or apply endpoint. Run "
    "`fleet plan -f FILE` and `fleet apply -f FILE` where the database is."
)
NO_TERMINAL = "$EDITOR is not set and this console has no terminal to lend vi: nothing changed."
CREATABLE = ("flavor", "pool", "quota", "tenant")
"""Kinds `n` makes from a FleetConfig template."""


def editor_argv() -> tuple[list[str], str | None]:
    """$EDITOR as a command line, or vi and a notice saying so."""
    command = os.environ.get("EDITOR", "").strip()
    if command:
        return shlex.split(command), None
    return [FALLBACK_EDITOR], f"$EDITOR is not set: editing with {FALLBACK_EDITOR}."


def without_header(text: str) -> str:
    """The file as the operator wrote it: the console's leading `#|` lines removed."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith(MARK):
        lines.pop(0)
    return "".join(lines)


def is_empty(text: str) -> bool:
    """Nothing but blank lines and comments: an empty edit, which cancels."""
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines())


def header(lines: Sequence[str]) -> str:
    return "".join(f"{MARK} {line}\n" for line in lines)


def problem_lines(error: InvalidInputError, path: Path, shift: int) -> list[str]:
    """Each problem at file:line:column of the file as it is reopened (`shift` header lines)."""
    found = error.details.get("errors") or []
    if not found:
        return [line for line in error.message.splitlines() if line]
    return [
        f"{path}:{int(d['line']) + shift}:{d['column']}: {d['message']} [{d['path']}]"
        for d in found
    ]


@dataclass(frozen=True)
class Planned:
    """A document planned: what apply is given, the plan and its text."""

    desired: DesiredFleet
    plan: Plan
    scope: Scope | None = None


class EditSession:
    """One edit from the first editor run to the apply (or the cancel)."""

    def __init__(self, view: ViewScreen, source: LocalSource, label: str, text: str) -> None:
        self.view, self.source, self.label = view, source, label
        self.folder = Path(tempfile.mkdtemp(prefix="bcfleet-edit-"))
        self.path = self.folder / f"{label.replace('/', '-').replace(' ', '-')}.yaml"
        self.written = text
        """The document as last opened, without its header: saved unchanged, it cancels."""

    @property
    def app(self) -> Any:
        return self.view.app

    def open(self, notes: Sequence[str] = ()) -> None:
        """Write the document with `notes` atop, run the editor, and go on with what was saved."""
        argv, notice = editor_argv()
        self.path.write_text(header(notes) + self.written, encoding="utf-8")
        try:
            code = self._run([*argv, str(self.path)], scripted=notice is None)
        except OSError as exc:
            self.end(f"Cannot run the editor {argv[0]!r}: {exc.strerror or exc}.", error=True)
            return
        if code is None:
            self.end(NO_TERMINAL, error=True)
            return
        if notice:
            self.app.notify(notice, severity="warning")
        if code != 0:
            self.end(f"The editor exited with status {code}: nothing changed.", error=True)
            return
        saved = without_header(self.path.read_text(encoding="utf-8"))
        if is_empty(saved):
            self.end("Empty file: edit cancelled, nothing changed.")
        elif saved.strip() == self.written.strip():
            self.end("No change saved: edit cancelled.")
        else:
            self.written = saved
            self.saved(saved)

    def saved(self, text: str) -> None:
        """A changed document was saved: validate and plan it in a worker."""
        self.app.run_worker(lambda: self._plan(text), thread=True, group="edit")

    def _run(self, command: list[str], *, scripted: bool) -> int | None:
        """The editor's exit status; None when there is no terminal to lend it and $EDITOR is
        unset (a headless console never starts an interactive vi)."""
        try:
            with self.app.suspend():
                return subprocess.call(command)
        except SuspendNotSupported:  # headless (tests): only an $EDITOR given runs, without input
            if not scripted:
                return None
            return subprocess.call(command, stdin=subprocess.DEVNULL)

    def _plan(self, text: str) -> None:
        """In a worker: validate the document merged into the state, and plan it, scoped."""
        fleet, credential = self.source.fleet, self.source.credential
        try:
            observed = observe_state(fleet, credential)
            edit = load_edit(
                text, observed, file=str(self.path), host_reserve=fleet.settings.host_reserve
            )
            result = make_plan(fleet, credential, edit.desired, scope=edit.scope, observed=observed)
        except InvalidInputError as error:
            self.app.call_from_thread(self.reopen, error)
            return
        except Exception as error:  # noqa: BLE001 - said to the operator; nothing changed
            self.app.call_from_thread(self.end, error_text(error), error=True)
            return
        self.app.call_from_thread(self._planned, Planned(edit.desired, result, edit.scope))

    def reopen(self, error: InvalidInputError) -> None:
        """Open the editor again with each problem at file:line:col atop the file."""
        count = len(error.details.get("errors") or []) or 1
        intro = [
            f"This edit was not applied: {count} problem(s). Fix, save and quit to try again;",
            "an unchanged save or an empty file cancels. These #| lines are removed on save.",
        ]
        shift = len(intro) + len(problem_lines(error, self.path, 0))
        self.open([*intro, *problem_lines(error, self.path, shift)])

    def _planned(self, planned: Planned) -> None:
        result = planned.plan
        if result.errors:
            lines = [f"{e.code}: {e.message}" for e in result.errors]
            self.open(["The plan of this edit has errors; nothing was applied:", *lines])
            return
        if not result.has_changes:
            self.end(NO_CHANGES)
            return
        ask_to_apply(self.view, self.source, planned, f"console edit {self.label}", self.end)

    def end(self, message: str, *, error: bool = False) -> None:
        """Done: the file is removed, and the message (if any) said."""
        shutil.rmtree(self.folder, ignore_errors=True)
        if message:
            self.app.notify(message, severity="error" if error else "information", timeout=10)


def ask_to_apply(
    view: ViewScreen,
    source: LocalSource,
    planned: Planned,
    operation: str,
    done: Callable[..., None],
) -> None:
    """Show the plan and ask; applied (in a worker) only on a yes typed after it appeared."""
    summary = planned.plan.summary
    question = f"Apply this plan? ({summary.total} change(s), under the apply lock)"
    applies = not view.fleet_app.read_only
    if not applies:
        question = "Read-only: this plan is shown, never applied (--read-only)."

    def answer(yes: bool | None) -> None:
        if not yes:
            done("Plan not applied: nothing changed.")
            return
        approved = Approved(planned.desired, plan_json(planned.plan), scope=planned.scope)
        view.app.run_worker(lambda: _apply(view, source, approved, operation, done), thread=True)

    view.app.push_screen(PlanConfirm(render_text(planned.plan), question, applies=applies), answer)


def _apply(
    view: ViewScreen,
    source: LocalSource,
    approved: Approved,
    operation: str,
    done: Callable[..., None],
) -> None:
    try:
        result = apply(source.fleet, source.credential, approved, operation=operation)
    except Exception as error:  # noqa: BLE001 - STALE_PLAN, LOCKED …: said; nothing applied
        again = " In the console: e or :plan again shows the new plan." if _stale(error) else ""
        view.app.call_from_thread(done, error_text(error) + again, error=True)
    else:
        view.app.call_from_thread(done, result.message)
    view.app.call_from_thread(view.request_refresh, force=True)


def _stale(error: Exception) -> bool:
    return isinstance(error, StalePlanError)


def local_source(view: ViewScreen, what: str) -> LocalSource | None:
    """The view's source when it is the database itself; over HTTP, say so and None."""
    source = view.source
    if isinstance(source, LocalSource):
        return source
    view.notify(NOT_OVER_HTTP.format(what=what), severity="warning", timeout=10)
    return None


def edit_row(view: ViewScreen, kind: str | None, item: Mapping[str, Any] | None) -> None:
    """`e`: the row's FleetConfig YAML in the editor (the object's kind says which section)."""
    if item is None:
        view.notify("No row to edit.", severity="warning")
        return
    if kind not in SECTIONS:
        view.notify(declaration(kind, item), severity="warning")
        return
    source = local_source(view, "Editing")
    if source is None:
        return

    def read() -> None:
        try:
            accounts = (
                {a["id"]: a["name"] for a in source.provider_accounts()}
                if item.get("providerAccountId")
                else {}
            )
            text = declaration(kind, item, accounts)
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(view.notify, error_text(error), severity="error")
            return
        label = f"{kind}-{item.get('name') or item.get('id') or 'object'}"
        view.app.call_from_thread(_start, view, source, label, text)

    view.app.run_worker(read, thread=True, group="edit")


def edit_compute(view: ViewScreen, tenant: str) -> None:
    """The Compute tab's tenant's compute settings as FleetConfig YAML in the editor (the
    state's settings, or the defaults when none are stored)."""
    source = local_source(view, "Editing")
    if source is None:
        return

    def read() -> None:
        try:
            observed = observe_state(source.fleet, source.credential)
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(view.notify, error_text(error), severity="error")
            return
        stored = [i for i in state_sections(observed)["compute"] if i.get("tenant") == tenant]
        text = section_yaml("compute", stored[0] if stored else {"tenant": tenant})
        view.app.call_from_thread(_start, view, source, f"compute-{tenant}", text)

    view.app.run_worker(read, thread=True, group="edit")


def _start(view: ViewScreen, source: LocalSource, label: str, text: str) -> None:
    if not text.startswith(tuple(f"{section}:" for section in SECTION_KEYS)):
        view.notify(text, severity="warning", timeout=10)  # not declarable as it stands
        return
    EditSession(view, source, label, text.rstrip() + "\n").open()


def create(view: ViewScreen, kind: str | None, row: Mapping[str, Any] | None = None) -> None:
    """`n`: a FleetConfig template of the view's kind in the editor (naming the pool and
    tenant of the row under the cursor, when it has them); services, webhooks and tokens
    from the API's own template (tui/creating.py)."""
    from bcfleet.tui.creating import FORMS, MAKERS, fill_in, make_new

    if kind in MAKERS:
        make_new(view, kind, row)
        return
    if kind in FORMS:
        fill_in(view, kind, row)
        return
    if kind not in CREATABLE:
        kinds = ", ".join(f"{k}s" for k in (*CREATABLE, *MAKERS, *FORMS))
        view.notify(f"n makes {kinds}; not {kind or 'these'}.", severity="warning")
        return
    source = local_source(view, "Creating")
    if source is None:
        return

    def read() -> None:
        try:
            text = template(kind, source, row or {})
        except Exception as error:  # noqa: BLE001 - said; nothing changed
            view.app.call_from_thread(view.notify, error_text(error), severity="error")
            return
        view.app.call_from_thread(
            lambda: EditSession(view, source, f"new-{kind}", text).open(
                [f"A new {kind}: fill it in, save and quit to see the plan; unchanged, it cancels."]
            )
        )

    view.app.run_worker(read, thread=True, group="edit")


def template(kind: str, source: LocalSource, row: Mapping[str, Any]) -> str:
    """A FleetConfig template of one new object, naming a pool and a tenant that exist: the
    row's own, else the first ones listed."""
    pools = [p["name"] for p in source.pools()]
    tenants = [t["id"] for t in source.tenants() if t["id"] != ROOT_TENANT] or [ROOT_TENANT]
    pool = str(row.get("pool") or (pools[0] if pools else "POOL"))
    tenant = str(row.get("tenantId") or tenants[0])
    if kind == "flavor":
        body = f"flavors:\n- pool: {pool}\n  name: new-flavor\n  vcpu: 2\n  memoryGiB: 4\n"
        return body + "  diskGiB: 20\n"
    if kind == "pool":
        return "pools:\n- name: new-pool\n  kind: vps-host\n"
    if kind == "quota":
        return f"quotas:\n- tenant: {tenant}\n  pool: {pool}\n  vcpu: 16\n  memoryGiB: 64\n"
    return "tenants:\n- id: new-tenant\n  name: New tenant\n"


def plan_file(view: ViewScreen, name: str) -> None:
    """`:plan FILE`: `fleet plan -f FILE` shown; applied as `fleet apply -f FILE` after a yes."""
    if not name:
        view.notify("Usage: :plan FILE (a FleetConfig to plan and, after a confirm, apply).")
        return
    source = local_source(view, ":plan")
    if source is None:
        return
    path = os.path.expanduser(name)

    def done(message: str, *, error: bool = False) -> None:
        view.notify(message, severity="error" if error else "information", timeout=10)

    def read() -> None:
        fleet, credential = source.fleet, source.credential
        try:
            desired = load_fleetconfig(path, host_reserve=fleet.settings.host_reserve)
            result = make_plan(fleet, credential, desired)
        except Exception as error:  # noqa: BLE001 - INVALID_INPUT at file:line:col, …
            view.app.call_from_thread(done, error_text(error), error=True)
            return
        view.app.call_from_thread(_show_file_plan, view, source, Planned(desired, result), done)

    view.app.run_worker(read, thread=True, group="edit")


def _show_file_plan(
    view: ViewScreen, source: LocalSource, planned: Planned, done: Callable[..., None]
) -> None:
    result = planned.plan
    if result.errors:
        done("\n".join(f"{e.code}: {e.message}" for e in result.errors), error=True)
        return
    if not result.has_changes:
        done(NO_CHANGES)
        return
    ask_to_apply(view, source, planned, "console :plan", done)
