"""`fleet agent inventory|run|simulate`: the host agent, real or simulated."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path

import click

from bcfleet.agent.inventory import read_inventory
from bcfleet.cli.common import Seconds, Whole, fleet_command, output, print_json, state
from bcfleet.domain.converge import SHUTDOWN_GRACE_SECONDS
from bcfleet.domain.instance_spec import HostDomain
from bcfleet.domain.inventory_age import AGENT_ROUND_SECONDS
from bcfleet.errors import InvalidInputError, UnauthenticatedError
from bcfleet.schemas.inventory import validate_inventory
from bcfleet.settings import load_fleet_settings


@click.group("agent")
def group() -> None:
    """The host agent: this machine's inventory, the agent loop, the simulated agents."""


@fleet_command(group, "inventory")
@click.option(
    "--root", default="/", show_default=True, hidden=True, help="Read sysfs/procfs below."
)
def inventory(root: str) -> None:
    """Print this machine's inventory (schemas/inventory.schema.json) as JSON."""
    document = read_inventory(root)
    validate_inventory(document)
    print_json(document)


def _inventory_file(path: Path | None) -> dict[str, object] | None:
    if path is None:
        return None
    try:
        document: dict[str, object] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: {exc}", {"file": str(path)}) from exc
    return document


@fleet_command(group, "run")
@click.option("--server", required=True, help="The fleet's HTTP API, e.g. http://127.0.0.1:8080.")
@click.option("--host", default=socket.gethostname, help="This host's name in the fleet.")
@click.option("--simulate", is_flag=True, help="Act out boots and stops instead of a hypervisor.")
@click.option("--hypervisor", metavar="URI",
              help="Run the guests on this libvirt URI (qemu:///system, test:///default, …).")  # fmt: skip
@click.option("--domain-type", type=click.Choice(["kvm", "qemu"]), default="kvm", show_default=True,
              help="With --hypervisor: qemu where only TCG runs.")  # fmt: skip
@click.option("--storage-pool", default="bcfleet", show_default=True,
              help="With --hypervisor: the libvirt storage pool of the guests' disks.")  # fmt: skip
@click.option("--no-disk", is_flag=True,
              help="With --hypervisor and --kernel: guests without a disk, for a URI without "
              "storage pools (qemu:///embed).")  # fmt: skip
@click.option("--console-dir", type=click.Path(file_okay=False, resolve_path=True),
              help="With --hypervisor: log each guest's serial console to DIR/<id>.log.")  # fmt: skip
@click.option(
    "--ready-line", help="With --console-dir: a guest is ready once its console logs this."
)
@click.option("--kernel", help="With --hypervisor: boot this kernel directly.")
@click.option("--initrd", help="With --hypervisor and --kernel: its initramfs.")
@click.option("--cmdline", help="With --hypervisor and --kernel: its command line.")
@click.option("--shutdown-grace", type=Seconds(), default=SHUTDOWN_GRACE_SECONDS, show_default=True,
              help="With --hypervisor: seconds from ACPI shutdown to destroy.")  # fmt: skip
@click.option("--host-root", type=click.Path(file_okay=False), default="/", show_default=True,
              help="With --hypervisor: read /proc and /sys (host memory and free huge pages) "
              "below DIR.")  # fmt: skip
@click.option("--once", is_flag=True, help="One round, then exit.")
@click.option("--rounds", type=Whole(1), help="Stop after this many rounds.")
@click.option("--interval", type=Seconds(0.01), default=AGENT_ROUND_SECONDS, show_default=True)
@click.option("--boot-seconds", type=Seconds(), help="Simulated boot delay.")
@click.option("--inventory-file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--domains", type=click.Path(file_okay=False, path_type=Path),
              help="Write each spec's libvirt domain XML here (without --simulate).")  # fmt: skip
def run(
    server: str,
    host: str,
    simulate: bool,
    hypervisor: str | None,
    domain_type: str,
    storage_pool: str,
    no_disk: bool,
    console_dir: str | None,
    ready_line: str | None,
    kernel: str | None,
    initrd: str | None,
    cmdline: str | None,
    shutdown_grace: float,
    host_root: str,
    once: bool,
    rounds: int | None,
    interval: float,
    boot_seconds: float | None,
    inventory_file: Path | None,
    domains: Path | None,
) -> None:
    """Report the inventory, pull the host's InstanceSpecs and report instance states."""
    from bcfleet.agent.remote import AgentConnection
    from bcfleet.agent.runner import Agent, AgentOptions

    token = state().token
    if not token:
        raise UnauthenticatedError("fleet agent run needs --token (or BCFLEET_TOKEN)")
    if simulate and hypervisor:
        raise InvalidInputError("--simulate and --hypervisor exclude each other", {})
    if no_disk and not kernel:
        raise InvalidInputError("--no-disk needs --kernel: the guest boots nothing else", {})
    if ready_line and not console_dir:
        raise InvalidInputError("--ready-line needs --console-dir", {"readyLine": ready_line})
    settings = load_fleet_settings()
    boot = settings.spare_boot_seconds if boot_seconds is None else boot_seconds
    options = AgentOptions(
        host=host,
        simulate=simulate,
        boot_seconds=boot,
        interval=interval,
        rounds=1 if once else rounds,
        domains_dir=domains,
        inventory=_inventory_file(inventory_file),
        hypervisor_uri=hypervisor,
        host_domain=HostDomain(
            domain_type, None if no_disk else storage_pool, console_dir, kernel, initrd, cmdline
        ),
        shutdown_grace=shutdown_grace,
        ready_line=ready_line,
        host_root=host_root,
        balloon_floor_percent=settings.balloon_floor_percent,
    )
    if hypervisor:
        _log_to_stderr()
    connection = AgentConnection(server, token)
    try:
        agent = Agent(connection, options, warn=_refused)
        try:
            report = agent.run()
        finally:
            if agent.hypervisor is not None:
                agent.hypervisor.close()
    finally:
        connection.close()
    output(report.to_json(), lambda d: f"{d['rounds']} rounds, {len(d['states'])} states reported")


def _log_to_stderr() -> None:
    """The driver's log (conditions, balloon targets) on stderr as it happens."""
    logger = logging.getLogger("bcfleet.agent")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("agent: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def _refused(reason: str) -> None:
    """A spec the agent skipped (runner.spec_id_problem), said on stderr as it happens."""
    click.echo(f"error: {InvalidInputError.code}: {reason}", err=True)


@fleet_command(group, "simulate")
@click.option("--once", is_flag=True, help="One round, then exit.")
@click.option("--rounds", type=Whole(1), help="Stop after this many rounds.")
@click.option("--interval", type=Seconds(0.01), default=1.0, show_default=True)
@click.option("--boot-seconds", type=Seconds(), help="Boot delay (default: settings).")
def simulate(once: bool, rounds: int | None, interval: float, boot_seconds: float | None) -> None:
    """The simulated agent of every host in the database, in process."""
    from bcfleet.agent.local import simulate_round

    s = state()
    limit = 1 if once else rounds
    done = 0
    result: dict[str, object] = {}
    while limit is None or done < limit:
        result = simulate_round(s.fleet, s.fleet.now(), s.credential, boot_seconds=boot_seconds)
        done += 1
        if limit is None or done < limit:
            time.sleep(interval)
    output({"rounds": done, **result}, lambda d: f"{d['rounds']} rounds over {d['hosts']} hosts")
