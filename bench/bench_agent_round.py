"""Benchmark of one host agent round with the libvirt driver on libvirt's test driver (in process).

    python bench/bench_agent_round.py [--domains 1000] [--foreign 50] [--rounds 5]

Times the first round (define and start every domain), then steady rounds (full resync of
the owned domains, nothing to do), a round after every floating guest's CPU set changed
(redefine and re-pin live), and the round that deletes them all (ACPI shutdown). Foreign
domains sit beside them, as on a real host. Needs libvirt-python (pip install
'bcfleet[libvirt]'). Prints what it measures and, last, one JSON line:
{"domains": …, "firstRoundSeconds": …, "steadyRound": {p50Ms, …}, "steadyRoundCpuMs": …, …}
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import libvirt  # noqa: E402

from bcfleet.agent.libvirt_driver import LibvirtDriver  # noqa: E402
from bcfleet.agent.libvirt_events import start_event_loop  # noqa: E402
from bcfleet.domain.instance_spec import InstanceSpecJson, instance_spec  # noqa: E402
from bcfleet.domain.numa import HostPlacement  # noqa: E402
from bcfleet.domain.shapes import Shape  # noqa: E402
from bench.common import emit, peak_rss_mb, summary, timed_with_cpu  # noqa: E402

FOREIGN = """<domain type="test"><name>foreign-{n}</name><memory unit="KiB">65536</memory>
<os><type>hvm</type></os></domain>"""


def specs(count: int, cpuset: tuple[int, ...]) -> list[InstanceSpecJson]:
    shape = Shape(vcpu=2, memory_gib=1, disk_gib=10)
    placement = HostPlacement(cpus=None, cpuset=cpuset, balloon=True)
    return [
        instance_spec(
            instance_id=f"ins_{n:05d}",
            name=f"vm{n}",
            state="running",
            shape=shape,
            placement=placement,
        )  # fmt: skip
        for n in range(count)
    ]


def once(call: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", type=int, default=1000)
    parser.add_argument("--foreign", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start_event_loop()
    with tempfile.TemporaryDirectory() as folder:
        node = Path(folder) / "node.xml"
        node.write_text("<node/>")
        conn = libvirt.open(f"test://{node}")
        for n in range(args.foreign):
            conn.defineXML(FOREIGN.format(n=n)).create()
        driver = LibvirtDriver.on(conn)
        wanted = specs(args.domains, (2, 3))
        first, first_cpu = once(lambda: driver.converge(wanted, 0.0))
        print(f"first round (define + start {args.domains}): {first:.2f} s, CPU {first_cpu:.2f} s")
        samples, cpu = timed_with_cpu(lambda: driver.converge(wanted, 1.0), args.rounds)
        steady = summary(samples)
        print(f"steady round: p50 {steady['p50Ms']} ms, CPU {cpu['clientCpuMs']} ms")
        moved = specs(args.domains, (4, 5, 6))
        repin, repin_cpu = once(lambda: driver.converge(moved, 2.0))
        print(f"re-pin round: {repin:.2f} s, CPU {repin_cpu:.2f} s")
        delete, delete_cpu = once(lambda: driver.converge([], 3.0))
        print(f"delete round: {delete:.2f} s, CPU {delete_cpu:.2f} s")
        assert not driver.problems(), driver.problems()
        assert len(conn.listAllDomains()) == args.domains + args.foreign  # shut off, not yet gone
        driver.close()
        conn.close()
    emit(
        {
            "domains": args.domains,
            "foreignDomains": args.foreign,
            "firstRoundSeconds": round(first, 3),
            "firstRoundCpuSeconds": round(first_cpu, 3),
            "steadyRound": steady,
            "steadyRoundCpuMs": cpu["clientCpuMs"],
            "repinRoundSeconds": round(repin, 3),
            "repinRoundCpuSeconds": round(repin_cpu, 3),
            "deleteRoundSeconds": round(delete, 3),
            "deleteRoundCpuSeconds": round(delete_cpu, 3),
            "peakRssMb": peak_rss_mb(),
        }
    )


if __name__ == "__main__":
    main()
