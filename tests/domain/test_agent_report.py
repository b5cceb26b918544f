"""What the agent makes of its driver's problem messages before it sends them: typed
conditions, one line within the bound, and only the guests whose report changed."""

from __future__ import annotations

import pytest

from bcfleet.domain.agent_report import changed, condition_of, fit, guest_reports, host_health
from bcfleet.domain.bounds import AGENT_MESSAGE_MAX
from bcfleet.domain.converge import Memo, Observed, Power, plan
from bcfleet.domain.hugepage_admission import Shortfall

SPEC = {"id": "gst_a", "state": "running"}


def stopped_outside(word: str) -> str:
    """The converge decider's own condition for a guest that stopped behind bcfleet's back."""
    return plan(SPEC, "d", Observed(Power.CRASHED, "d", reason=word), Memo(), 100.0).condition


@pytest.mark.parametrize(
    ("message", "kind", "reason"),
    [
        pytest.param(Shortfall(2 << 20, (0,), 512, 100).condition()["message"],
                     "StartRefused", "NotEnoughHugepages", id="huge-page-shortfall"),
        pytest.param("refused: XML error: bad mode", "HypervisorRefused", "LibvirtError",
                     id="libvirt-refused-a-define"),
        pytest.param(stopped_outside("crashed"), "StoppedOutside", "Crashed", id="crashed"),
        pytest.param(stopped_outside("destroyed"), "StoppedOutside", "Destroyed", id="destroyed"),
        pytest.param("something new", "AgentProblem", "Reported", id="anything-else"),
    ],
)  # fmt: skip
def test_a_drivers_problem_becomes_a_typed_condition(message: str, kind: str, reason: str) -> None:
    condition = condition_of(message)
    assert (condition["type"], condition["reason"]) == (kind, reason)


def test_libvirts_message_is_kept_without_the_drivers_prefix() -> None:
    assert condition_of("refused: XML error: bad mode")["message"] == "XML error: bad mode"
    assert "backoff" in condition_of(stopped_outside("crashed"))["message"]


@pytest.mark.parametrize(
    ("message", "fitted"),
    [
        pytest.param("a\n  b\tc", "a b c", id="one-line"),
        pytest.param("x" * 5000, "x" * (AGENT_MESSAGE_MAX - 1) + "…", id="cut-to-the-bound"),
        pytest.param("\u202eevil", "\\u202eevil", id="bidi-escaped"),
        pytest.param("", "-", id="never-empty"),
    ],
)
def test_a_message_is_fitted_to_what_the_api_takes(message: str, fitted: str) -> None:
    assert fit(message) == fitted


def test_only_changed_guests_are_sent_and_the_host_is_degraded_while_it_has_a_problem() -> None:
    before = guest_reports(["a", "b"], {"a": "refused: x"}, {"b": 1 << 30})
    assert [g["id"] for g in changed({}, before)] == ["a", "b"]
    after = guest_reports(["a", "b"], {}, {"b": 1 << 30})
    assert changed(before, after) == [{"id": "a", "conditions": [], "balloonBytes": None}]
    assert host_health({"host": "libvirt unreachable"})["state"] == "degraded"
    assert host_health({"a": "refused: x"}) == {"state": "ok", "message": None}
