"""print_json writes a document larger than its block exactly as json.dumps renders it, once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bcfleet.cli.common import JSON_BLOCK, print_json


def test_a_document_of_many_blocks_is_written_as_one_indented_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = {
        "items": [
            {"name": f"host-{i:05d}", "labels": {"é": "ü"}, "at": datetime(2026, 1, 1, tzinfo=UTC)}
            for i in range(3000)
        ]
    }
    print_json(document)
    written = capsys.readouterr().out
    assert len(written) > 3 * JSON_BLOCK
    assert written == json.dumps(document, indent=2, default=str) + "\n"


def test_a_small_document_is_one_line_and_a_newline(capsys: pytest.CaptureFixture[str]) -> None:
    print_json([])
    assert capsys.readouterr().out == "[]\n"
