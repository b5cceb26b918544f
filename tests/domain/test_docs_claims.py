"""What docs/design.md says of the tests' layout holds: the folders it names as keeping their
own conftest.py are exactly the folders that have one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_folders_with_their_own_conftest_are_the_ones_design_names() -> None:
    text = " ".join((ROOT / "docs" / "design.md").read_text(encoding="utf-8").split())
    said = re.search(
        r"keep fixtures only their files share in their own `conftest.py` \(([^)]*)\)", text
    )
    assert said is not None, "docs/design.md names the folders with a conftest.py"
    named = {name.strip() for name in re.split(r",|\band\b", said.group(1)) if name.strip()}
    present = {path.parent.name for path in (ROOT / "tests").glob("*/conftest.py")}
    assert named == present
