"""Which cases of a generated test run: a seeded sample covering every class, or all of them.

A generated test (the hostile CLI walk) has far more cases than classes: each of its cases is
one command, one option and one hostile value. Every run takes a sample that still has every
class in it (each command, each option, each value class) and picks the rest by a seed: the
seed is fixed, so a run repeats, and changed with BCFLEET_WALK_SEED, so other runs see other
cases. BCFLEET_FULL_SUITE=1 (`scripts/check --full`) runs every case, and the tests marked
`full` (the rest of a generated space that a lighter test covers in every run).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

FULL_ENV = "BCFLEET_FULL_SUITE"
SEED_ENV = "BCFLEET_WALK_SEED"
DEFAULT_SEED = "0"

Case = TypeVar("Case")


def full_suite() -> bool:
    """Every case and every test marked `full` runs (BCFLEET_FULL_SUITE set, and not to 0)."""
    return os.environ.get(FULL_ENV, "") not in ("", "0")


def walk_seed() -> str:
    """The seed of this run's sample: BCFLEET_WALK_SEED, or the fixed default."""
    return os.environ.get(SEED_ENV) or DEFAULT_SEED


def covering_sample(
    cases: Sequence[Case], classes: Callable[[Case], Iterable[Hashable]], seed: str
) -> list[Case]:
    """The cases, in their given order, that a shuffle by `seed` meets while some class of theirs
    is not yet covered: every class of every case is in the sample, and each case in it added
    at least one. A string seed shuffles the same in every process (no hash randomization)."""
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    covered: set[Hashable] = set()
    picked: set[int] = set()
    for index in order:
        new = set(classes(cases[index])) - covered
        if new:
            picked.add(index)
            covered |= new
    return [case for index, case in enumerate(cases) if index in picked]


def summary_line(ran: int) -> str:
    """What the end of a run says about the walk it ran."""
    if full_suite():
        return f"hostile CLI walk: all {ran} cases ({FULL_ENV}=1)"
    seed = walk_seed()
    return (
        f"hostile CLI walk: {ran} cases, the sample of seed {seed!r} "
        f"({SEED_ENV}={seed} repeats it, another seed picks others; {FULL_ENV}=1 runs every case)"
    )
