"""The driver-level statements run only on the SQLAlchemy versions their seam was written for,
and that is the version the package pins."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import sqlalchemy
from sqlalchemy import Connection
from sqlalchemy.engine import Dialect

from bcfleet.errors import UnsupportedError
from bcfleet.store.engine import make_engine
from bcfleet.store.sqlalchemy_seam import WRITTEN_FOR, check_sqlalchemy

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _pinned() -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = [d for d in dependencies if re.match(r"sqlalchemy\s*==", d, re.IGNORECASE)]
    assert len(pins) == 1, f"sqlalchemy is not pinned exactly (==) in pyproject: {dependencies}"
    return pins[0].split("==", 1)[1].strip()


def test_pyproject_pins_a_version_the_seam_was_written_for() -> None:
    assert _pinned() in WRITTEN_FOR


def test_the_installed_sqlalchemy_is_the_pinned_one() -> None:
    assert sqlalchemy.__version__ == _pinned()
    check_sqlalchemy()  # passes


@pytest.mark.parametrize("version", ["2.1.10", "2.2.0", "2.0.43"], ids=lambda v: f"sqlalchemy-{v}")
def test_an_engine_on_another_sqlalchemy_version_is_refused(
    monkeypatch: pytest.MonkeyPatch, version: str, tmp_path: Path
) -> None:
    monkeypatch.setattr(sqlalchemy, "__version__", version)
    with pytest.raises(UnsupportedError) as refused:
        make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    assert refused.value.code == "UNSUPPORTED"
    assert version in str(refused.value)
    assert f"sqlalchemy=={WRITTEN_FOR[-1]}" in str(refused.value)
    assert not (tmp_path / "fleet.db").exists()


@pytest.mark.parametrize(
    ("owner", "member"),
    [
        (Connection, "_cursor_execute"),
        (Connection, "_handle_dbapi_exception"),
        (Connection, "_begin_impl"),
        (Connection, "_commit_impl"),
        (Dialect, "_has_events"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_the_private_members_the_seam_calls_exist(owner: type, member: str) -> None:
    assert hasattr(owner, member)


def test_a_connection_has_the_echo_flag_the_seam_reads(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    try:
        with engine.connect() as connection:
            assert connection._echo is False
    finally:
        engine.dispose()
