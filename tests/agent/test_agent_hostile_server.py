"""A hostile server's ids never reach a path: `fleet agent run --domains DIR` writes only inside DIR.

The agent names each guest's domain file after the id the server sends (DIR/<id>.xml). A
server that answered an id of `../escaped-outside` had the agent write outside DIR. Every id
from the server is now checked against the id formats (an instance id, or an opaque guest
id) before it names a file; a spec with any other id is refused with an INVALID_INPUT line
on stderr and skipped, the others are written, and a file that would resolve outside DIR
(a symbolic link) is refused the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bcfleet.agent.runner import write_domains
from bcfleet.domain.guest_view import opaque_guest_id
from bcfleet.errors import InvalidInputError
from tests.support.builders import inventory
from tests.support.fleet import run_cli
from tests.support.security import capturing_server

GOOD = opaque_guest_id("node_01jz3k4m5n6p7q8r9s0t1v2w3x", "ins_01jz3k4m5n6p7q8r9s0t1v2w3y")
INSTANCE = "ins_01jz3k4m5n6p7q8r9s0t1v2w3z"
HOSTILE = [
    pytest.param("../escaped-outside", id="parent"),
    pytest.param("../../escaped-outside", id="grandparent"),
    pytest.param("{tmp}/escaped-outside", id="absolute"),
    pytest.param("gst_../escaped-outside", id="guest-prefix-then-parent"),
    pytest.param("ins_../../escaped-outside12345", id="instance-length-then-parent"),
    pytest.param("gst_" + "A" * 32, id="guest-upper-case"),
    pytest.param("ins_01jz3k4m5n6p7q8r9s0t1v2w3", id="instance-too-short"),
    pytest.param("escaped\x00outside", id="nul"),
    pytest.param("", id="empty"),
    pytest.param(7, id="a-number"),
    pytest.param(None, id="null"),
]


def spec(spec_id: Any) -> dict[str, Any]:
    return {
        "id": spec_id,
        "state": "running",
        "shape": {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "gpus": 0},
        "placement": {"cpus": None, "cpuset": [2, 3], "mems": None, "hugepageSizeBytes": None},
        "balloon": {"enabled": True, "floorPercent": 50},
        "gpus": [],
    }


def _agent_run(url: str, tmp_path: Path, domains: Path) -> Any:
    inventory_file = tmp_path / "inventory.json"
    inventory_file.write_text(json.dumps(inventory()))
    return run_cli("agent", "run", "--server", url, "--token", "bcf_agent", "--host", "fra-01",
                   "--once", "--domains", str(domains), "--inventory-file", str(inventory_file),
                   "--json", db=f"sqlite:///{tmp_path / 'unused.db'}")  # fmt: skip


def _outside(tmp_path: Path, domains: Path) -> list[str]:
    """Every file under tmp_path but DIR's own."""
    known = {"inventory.json", "unused.db", "unused.db-wal", "unused.db-shm"}
    found = [
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and p.parent != domains and p.name not in known
    ]
    return found


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_spec_id_is_refused_and_the_others_are_written(
    tmp_path: Path, hostile: Any
) -> None:
    domains = tmp_path / "a" / "domains"
    if isinstance(hostile, str):
        hostile = hostile.replace("{tmp}", str(tmp_path))
    with capturing_server() as server:
        server.body = {"host": "fra-01", "items": [spec(GOOD), spec(hostile), spec(INSTANCE)]}
        result = _agent_run(server.url, tmp_path, domains)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert sorted(p.name for p in domains.iterdir()) == [f"{GOOD}.xml", f"{INSTANCE}.xml"]
    assert _outside(tmp_path, domains) == []
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "INVALID_INPUT" in line]
    assert "neither an instance id (ins_…) nor a guest id (gst_…)" in line
    assert "skipped" in line
    [refused] = result.json()["refused"]  # type: ignore[index]
    assert refused["reason"] in line


def test_a_domain_file_that_resolves_outside_the_directory_is_not_written(
    tmp_path: Path,
) -> None:
    domains, elsewhere = tmp_path / "domains", tmp_path / "elsewhere"
    domains.mkdir()
    elsewhere.mkdir()
    (domains / f"{GOOD}.xml").symlink_to(elsewhere / "target.xml")
    refused: list[str] = []
    written = write_domains(domains, [spec(GOOD), spec(INSTANCE)], refused)
    assert [p.name for p in written] == [f"{INSTANCE}.xml"]
    assert list(elsewhere.iterdir()) == []
    [reason] = refused
    assert "resolves outside" in reason and GOOD in reason


def test_write_domains_refuses_a_hostile_id_itself(tmp_path: Path) -> None:
    """A caller that does not collect refusals gets the error, and nothing is written."""
    with pytest.raises(InvalidInputError, match="neither an instance id"):
        write_domains(tmp_path / "domains", [spec("../escaped-outside")])
    assert _outside(tmp_path, tmp_path / "domains") == []
