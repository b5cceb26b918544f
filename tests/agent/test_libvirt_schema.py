"""bcfleet's libvirt domain XML, judged by libvirt's own RelaxNG schema (domain.rng, with lxml)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import flavor, host, hosted_pool, inventory
from tests.support.capacity import PLACEMENT, create
from tests.support.fleet import IN_CI, run_cli

etree = pytest.importorskip("lxml.etree")
SCHEMAS = Path(__file__).resolve().parents[2] / ".cache" / "libvirt-schemas"


@pytest.fixture(scope="module")
def domain_schema() -> Any:
    rng = Path(os.environ.get("BCFLEET_LIBVIRT_SCHEMAS", SCHEMAS)) / "domain.rng"
    if not rng.is_file():
        if IN_CI:
            pytest.fail(
                f"libvirt's schemas are required in CI: run scripts/libvirt-schemas ({rng})"
            )
        pytest.skip("libvirt's schemas are not unpacked: run scripts/libvirt-schemas")
    return etree.RelaxNG(etree.parse(str(rng)))


@pytest.mark.parametrize(
    "placement",
    [
        pytest.param(None, id="floating"),
        pytest.param({"numaAffine": True}, id="numa-affine"),
        pytest.param({"numaAffine": True, "pinned": True}, id="pinned"),
        pytest.param(
            {"numaAffine": True, "pinned": True, "hugepageSizeBytes": 1073741824},
            id="pinned-huge-pages",
        ),
    ],
)
@pytest.mark.parametrize("gpus", [0, 1], ids=["cpu", "gpu"])
def test_the_domain_xml_validates_against_libvirts_schema(
    domain_schema: Any, fleet: Fleet, sqlite_url: str, placement: dict[str, Any] | None, gpus: int
) -> None:
    pool = hosted_pool(fleet, overcommit={"memoryGiB": 1.5})
    hardware = inventory(cpus=32, numa_nodes=2, memory_gib=256, gpus=2, hugepages_1g=32)
    host(fleet, pool["id"], "h1", hardware, labels=PLACEMENT)
    run_vps_hosts(fleet, fleet.now())
    shape: dict[str, Any] = {"vcpu": 4, "memory_gib": 8, "disk_gib": 40, "gpus": gpus}
    if placement:
        shape["placement"] = placement
    flavor(fleet, pool["id"], "shape", **shape)
    made = create(fleet, pool, "shape")
    assert made["state"] == "running", made
    result = run_cli(
        "--json", "instances", "spec", made["id"], "--format", "libvirt", db=sqlite_url
    )
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)  # --json is always JSON: the XML is a field of it
    xml = etree.fromstring(document["domainXml"].encode())
    assert domain_schema.validate(xml), domain_schema.error_log


def test_the_schemas_list_exactly_the_huge_page_sizes_the_code_accepts() -> None:
    from bcfleet.domain.bounds import HUGEPAGE_SIZES
    from bcfleet.domain.flavor_rules import placement_problems
    from bcfleet.http.app import openapi_document

    root = Path(__file__).resolve().parents[2]
    fleetconfig = json.loads((root / "schemas" / "fleetconfig.schema.json").read_text())
    declared = fleetconfig["$defs"]["placement"]["properties"]["hugepageSizeBytes"]["enum"]
    assert declared == list(HUGEPAGE_SIZES)
    create = openapi_document()["components"]["schemas"]["FlavorCreate"]["properties"]
    placement = create["placement"]["anyOf"][0]["properties"]
    over_http = placement["hugepageSizeBytes"]["anyOf"]
    assert {"type": "integer", "enum": list(HUGEPAGE_SIZES)} in over_http
    for size in (4096, 2097152, 1073741824, 1 << 40):
        assert placement_problems({"hugepageSizeBytes": size}) == {}
    for size in (3000, 4095, 6144, 1 << 41):
        assert "placement.hugepageSizeBytes" in placement_problems({"hugepageSizeBytes": size})


def test_the_agents_host_options_keep_the_domain_xml_valid(domain_schema: Any) -> None:
    from bcfleet.domain.instance_spec import HostDomain, instance_spec, render_libvirt_domain
    from bcfleet.domain.numa import HostPlacement
    from bcfleet.domain.shapes import Shape

    spec = instance_spec(
        instance_id="ins_01",
        name="vm",
        state="running",
        shape=Shape(vcpu=2, memory_gib=1, disk_gib=10),
        placement=HostPlacement(cpus=(2, 3), cpuset=(2, 3), mems=(0,), hugepage_size_bytes=2097152),
    )
    host = HostDomain(
        domain_type="qemu",
        console_dir="/var/log/bcfleet",
        kernel="/boot/vmlinuz",
        initrd="/boot/initrd.img",
        cmdline="console=ttyS0",
    )
    xml = etree.fromstring(render_libvirt_domain(spec, host).encode())
    assert domain_schema.validate(xml), domain_schema.error_log
    assert xml.find("cpu").get("mode") == "maximum"
