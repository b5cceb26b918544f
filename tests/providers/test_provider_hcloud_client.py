"""The official Hetzner Cloud client (hcloud-python) against the fake provider: the client is the judge.

Every call a client of Hetzner's API makes for servers must parse and succeed,
or fail the way Hetzner documents: the fake is what tests and ``fleet demo``
meet, so it must be the API as Hetzner serves it today.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import httpx
import pytest
from hcloud import Client
from hcloud._exceptions import APIException
from hcloud.actions import ActionFailedException
from hcloud.images import Image
from hcloud.locations import Location
from hcloud.server_types import ServerType

from bcfleet.providers.fake_server import FakeHetzner

TOKEN = "hc-client-test-token"
BOOT_SECONDS = 0.2
CATALOGUE_TYPES = {"cx22", "cx32", "cx23", "cx33", "cx43", "cax11", "cpx22", "cpx32", "ccx13"}


@pytest.fixture
def fake() -> Iterator[FakeHetzner]:
    with FakeHetzner(token=TOKEN, boot_seconds=BOOT_SECONDS) as server:
        yield server


@pytest.fixture
def client(fake: FakeHetzner) -> Client:
    return Client(token=TOKEN, api_endpoint=fake.url, poll_interval=0.05, timeout=5)


def _create(client: Client, name: str, labels: dict[str, str] | None = None) -> int:
    made = client.servers.create(
        name,
        server_type=ServerType(name="cx23"),
        image=Image(name="ubuntu-24.04"),
        location=Location(name="fsn1"),
        labels=labels or {},
    )
    made.action.wait_until_finished()
    server_id = made.server.id
    assert isinstance(server_id, int)
    return server_id


# ----- catalogue ---------------------------------------------------------------------------


def test_server_types_parse_with_per_location_availability(
    client: Client, fake: FakeHetzner
) -> None:
    fake.sell_out("cx33", "nbg1")
    types = {t.name: t for t in client.server_types.get_all()}
    assert set(types) == CATALOGUE_TYPES
    cx33 = {entry.location.name: entry for entry in types["cx33"].locations}
    assert (cx33["fsn1"].available, cx33["fsn1"].recommended) == (True, True)
    assert (cx33["nbg1"].available, cx33["nbg1"].recommended) == (False, False)
    cx22_fsn1 = next(e for e in types["cx22"].locations if e.location.name == "fsn1")
    assert cx22_fsn1.deprecation is not None
    assert cx22_fsn1.deprecation.unavailable_after.year == 2027
    assert cx22_fsn1.recommended is False
    prices = {p["location"]: p for p in types["cpx22"].prices}
    assert set(prices) == {"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}


def test_a_server_type_location_loads_its_location_on_demand(client: Client) -> None:
    cx23 = client.server_types.get_by_id(114)
    first = cx23.locations[0]
    assert first.location.name == "fsn1"
    assert first.location.city == "Falkenstein", "an incomplete location reloads by id"


def test_locations_are_listed_and_fetched_by_id_and_name(client: Client) -> None:
    listed = client.locations.get_all()
    assert [loc.name for loc in listed] == ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"]
    helsinki = client.locations.get_by_id(3)
    assert (helsinki.name, helsinki.country, helsinki.network_zone) == ("hel1", "FI", "eu-central")
    by_name = client.locations.get_by_name("ash")
    assert by_name is not None and by_name.city.startswith("Ashburn")


def test_images_are_listed_and_filtered(client: Client) -> None:
    names = {image.name for image in client.images.get_all()}
    assert {"ubuntu-24.04", "debian-12"} <= names
    image = client.images.get_by_name_and_architecture("ubuntu-24.04", "x86")
    assert image is not None and (image.type, image.os_flavor) == ("system", "ubuntu")


def test_the_removed_datacenters_endpoint_answers_gone(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        datacenters = client.datacenters
    with pytest.raises(APIException) as caught:
        datacenters.get_all()
    assert caught.value.code == "deprecated_api_endpoint"


# ----- servers and actions -----------------------------------------------------------------


def test_a_server_is_created_waited_for_read_powered_off_and_deleted(client: Client) -> None:
    made = client.servers.create(
        "web-1",
        server_type=ServerType(name="cx23"),
        image=Image(name="ubuntu-24.04"),
        location=Location(name="fsn1"),
        labels={"env": "test"},
    )
    assert made.action.command == "create_server"
    assert [a.command for a in made.next_actions] == ["start_server"]
    made.action.wait_until_finished()
    assert made.action.status == "success"

    server = client.servers.get_by_id(made.server.id)
    assert (server.name, server.status, server.labels) == ("web-1", "running", {"env": "test"})
    assert server.location.name == "fsn1"
    assert server.server_type.name == "cx23"
    assert server.image.name == "ubuntu-24.04"
    assert server.public_net.ipv4.dns_ptr
    assert server.public_net.ipv6.network_mask == "64"
    assert (server.iso, server.rescue_enabled, server.primary_disk_size) == (None, False, 40)
    assert not hasattr(server.data_model, "datacenter")

    off = client.servers.power_off(server)
    off.wait_until_finished()
    assert client.servers.get_by_id(server.id).status == "off"
    listed = server.get_actions_list()
    assert [a.command for a in listed.actions] == ["create_server", "start_server", "stop_server"]
    assert client.servers.get_actions(server)[-1].status == "success"

    deleting = client.servers.delete(server)
    deleting.wait_until_finished()
    assert deleting.status == "success"
    with pytest.raises(APIException) as caught:
        client.servers.get_by_id(server.id)
    assert caught.value.code == "not_found"


def test_an_action_of_a_server_is_fetched_by_id(client: Client) -> None:
    server_id = _create(client, "web-2")
    server = client.servers.get_by_id(server_id)
    [create] = [a for a in server.get_actions_list().actions if a.command == "create_server"]
    again = client.actions.get_by_id(create.id)
    assert (again.id, again.status, again.progress) == (create.id, "success", 100)
    assert again.resources == [{"id": server_id, "type": "server"}]


def test_a_failed_create_action_fails_the_wait_with_its_code(
    client: Client, fake: FakeHetzner
) -> None:
    fake.fail_next_actions("create_server", "placement_error", "no host fits")
    made = client.servers.create(
        "web-3", server_type=ServerType(name="cx23"), image=Image(name="ubuntu-24.04")
    )
    with pytest.raises(ActionFailedException) as caught:
        made.action.wait_until_finished()
    assert caught.value.action.error["code"] == "placement_error"
    assert "no host fits" in str(caught.value)


def test_servers_are_found_by_name_and_label_selector_across_pages(
    client: Client, fake: FakeHetzner
) -> None:
    for number in range(55):
        fake.add_server(f"bulk-{number:02d}", "cx23", "nbg1", {"team": "bulk"})
    fake.add_server("other", "cx23", "nbg1", {"team": "web"})
    bulk = client.servers.get_all(label_selector="team=bulk")
    assert len(bulk) == 55, "hcloud follows meta.pagination over two pages of 50"
    found = client.servers.get_by_name("other")
    assert found is not None and found.labels == {"team": "web"}
    assert client.servers.get_by_name("nobody") is None


def test_a_missing_server_is_not_found(client: Client) -> None:
    with pytest.raises(APIException) as caught:
        client.servers.get_by_id(4_999_999)
    assert caught.value.code == "not_found"
    assert "4999999" in caught.value.message


def test_a_taken_name_is_a_uniqueness_error(client: Client) -> None:
    _create(client, "web-dup")
    with pytest.raises(APIException) as caught:
        client.servers.create(
            "web-dup", server_type=ServerType(name="cx23"), image=Image(name="ubuntu-24.04")
        )
    assert caught.value.code == "uniqueness_error"


def test_a_wrong_token_is_unauthorized(fake: FakeHetzner) -> None:
    stranger = Client(token="not-the-token", api_endpoint=fake.url, timeout=5)
    with pytest.raises(APIException) as caught:
        stranger.server_types.get_all()
    assert caught.value.code == "unauthorized"


# ----- what the headers say ----------------------------------------------------------------


def test_lists_carry_link_headers_with_the_same_query(fake: FakeHetzner) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    response = httpx.get(
        fake.url + "/server_types", params={"per_page": 2, "page": 2}, headers=headers, timeout=5
    )
    links = response.links
    assert set(links) == {"prev", "next", "last"}
    assert "page=3" in links["next"]["url"] and "per_page=2" in links["next"]["url"]
    assert "page=5" in links["last"]["url"]
    assert links["next"]["url"].startswith(fake.url + "/server_types?")


def test_rate_limit_reset_is_the_unix_time_the_budget_is_full(fake: FakeHetzner) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    fake.state.set_rate_limit(3600, remaining=100)
    response = httpx.get(fake.url + "/locations", headers=headers, timeout=5)
    now = fake.state.clock.now().timestamp()
    remaining = int(response.headers["RateLimit-Remaining"])
    reset = int(response.headers["RateLimit-Reset"])
    assert (int(response.headers["RateLimit-Limit"]), remaining) == (3600, 99)
    assert reset == pytest.approx(now + (3600 - remaining), abs=2), "one request a second"
