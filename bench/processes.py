"""Processes placing at once, for the scale figures of bcfleet and of the floor, measured alike.

Each process is started the same way (spawned by default: a fresh interpreter that imports its own
modules, as separately started replicas do), warms up, and waits at a barrier; the clock runs from
the barrier's release to the last process done. Each round of several processes is paired with one
process placing as many just before it, and `scaleOverOneProcess` is the median of the pairs'
ratios, so the two figures of a ratio are taken seconds, not a whole benchmark, apart.

The start method matters on a small machine: processes forked from a parent that has already
imported bcfleet share those modules' memory pages: four of them placed 809-855/s on two cores
where four spawned ones placed 700-745/s (docs/speed-history.md). `fork` is kept to show it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.common import summary, timed

START_METHODS = ("spawn", "fork")
WARM_UP = 20  # placements each process makes before the clock starts, as the one-process runs do
WAIT_S = 900  # a process that died is reported instead of waited for forever

Round = Callable[[], tuple[list[float], float]]


def pairs_count(text: str) -> int:
    """--pairs as argparse reads it: a whole number of rounds, at least one."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return count


def run_worker(place: Callable[[], Any], count: int, ready: Any, out: Any) -> None:
    """In a worker process: warm up, wait for every process, then time `count` placements."""
    timed(place, WARM_UP)
    ready.wait(WAIT_S)  # all processes open and warm: the clock starts
    out.put(timed(place, count))


def at_once(
    start_method: str,
    target: Callable[..., None],
    args_each: list[tuple[Any, ...]],
    during: Callable[[threading.Event], None] | None = None,
) -> tuple[list[float], float]:
    """One process per `args_each` running target(*args, ready, out); each placement's seconds, and
    the seconds from all being ready to the last done. `during` runs in a thread meanwhile, until
    the event it is given is set."""
    context: Any = multiprocessing.get_context(start_method)
    queue: Any = context.Queue()
    ready: Any = context.Barrier(len(args_each) + 1)
    workers = [context.Process(target=target, args=(*args, ready, queue)) for args in args_each]
    for worker in workers:
        worker.start()
    ready.wait(WAIT_S)  # BrokenBarrierError when a process died before it
    done = threading.Event()
    watcher = threading.Thread(target=during, args=(done,)) if during else None
    if watcher:
        watcher.start()
    start = time.perf_counter()
    samples: list[float] = []
    try:
        for _ in workers:
            samples.extend(queue.get(timeout=WAIT_S))
        elapsed = time.perf_counter() - start
        for worker in workers:
            worker.join()
    finally:
        done.set()
        if watcher:
            watcher.join()
    return samples, elapsed


def scale_pairs(alone: Round, together: Round, pairs: int) -> dict[str, Any]:
    """`pairs` rounds of one process (alone) then several (together): the rounds of several
    summarized, their median placements/s, and the median of the pairs' ratios."""
    samples: list[float] = []
    rates: list[float] = []
    ratios: list[float] = []
    for _ in range(pairs):
        one, one_seconds = alone()
        many, seconds = together()
        samples.extend(many)
        rates.append(len(many) / seconds)
        ratios.append(rates[-1] / (len(one) / one_seconds))
    result: dict[str, Any] = dict(summary(samples))
    result["perSecond"] = round(statistics.median(rates), 1)
    result["scaleOverOneProcess"] = round(statistics.median(ratios), 2)
    result["scalePerPair"] = [round(r, 2) for r in ratios]
    return result
