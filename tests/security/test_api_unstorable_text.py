"""The Python API refuses text no database can store (a NUL, a lone surrogate) in any argument,
naming the parameter, on both engines, before it reads or writes anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor, host, hosted_pool, inventory

NUL = "a\x00b"
SURROGATE = "a\ud800b"  # what Python makes of bytes that are not UTF-8


def _calls(fleet: Fleet, pool_id: str, text: str) -> dict[str, tuple[str, Callable[[], Any]]]:
    """Calls that look text up or store it: (the parameter named, the call)."""
    api = fleet.api
    return {
        "hosts.list pool": ("pool", lambda: api.hosts.list(OP, pool=text)),
        "host_reads.list tenant": ("tenant_id", lambda: api.host_reads.list(OP, tenant_id=text)),
        "hosts.show": ("host", lambda: api.hosts.show(OP, host=text)),
        "instances.create tenant": (
            "tenant_id",
            lambda: api.instances.create(
                LOCAL_OPERATOR, tenant_id=text, pool_id=pool_id, flavor="g1.small"
            ),
        ),
        "instances.create name": (
            "name",
            lambda: api.instances.create(
                LOCAL_OPERATOR, tenant_id="acme", pool_id=pool_id, flavor="g1.small", name=text
            ),
        ),
        "instances.show, by position": ("instance_id", lambda: api.instances.show(OP, text)),
        "events.list types, an item": ("types[1]", lambda: api.events.list(OP, types=["x", text])),
    }


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "lone-surrogate"])
def test_unstorable_text_in_an_argument_is_invalid_input_and_changes_nothing(
    any_fleet: Fleet, text: str
) -> None:
    pool = hosted_pool(any_fleet, offered_to=("acme",))
    flavor(any_fleet, pool["id"], "g1.small")
    host(any_fleet, pool["id"], "h1", inventory())
    before = any_fleet.api.events.list(OP, limit=500)
    for label, (parameter, call) in _calls(any_fleet, pool["id"], text).items():
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert refused.value.details == {"path": parameter}, label
        assert refused.value.message.startswith(f"{parameter}: "), label
    assert any_fleet.api.events.list(OP, limit=500) == before
    assert any_fleet.api.instances.list(OP, tenant_id="acme")["items"] == []
