"""`fleet validate` reads a FleetConfig as editors do: YAML 1.2's core schema, judged by the `yaml`
package that yaml-language-server reads documents with, and the shipped JSON Schema applied by
jsonschema to what that reader made of each generated document."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from bcfleet.errors import InvalidInputError
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.reconcile.yamldoc import YamlProblems, parse_yaml
from tests.support.fleet import IN_CI

ROOT = Path(__file__).resolve().parents[2]
JUDGE = ROOT / ".cache" / "yaml-judge" / "node_modules"
SCHEMA = Draft202012Validator(
    json.loads((ROOT / "schemas" / "fleetconfig.schema.json").read_text())
)
EXAMPLE = (ROOT / "fleet.example.yaml").read_text()

SPELLINGS = [
    "yes", "no", "on", "off", "y", "n", "Yes", "OFF", "true", "True", "TRUE", "false", "FALSE",
    "1e1", "1E3", "2.5e-1", "0o17", "010", "0x1F", "0b101", "1_000", "12:30", "2024-01-01",
    "2024-01-01T10:00:00Z", ".nan", ".NaN", ".inf", "-.Inf", "~", "null", "Null", "''", '""',
    "1.0", "1.5", "-0", "+1", ".5", "5.", "64", "0", "acme", "L40S",
]  # fmt: skip
# Where each spelling is written: (old text in the example, new text with {} for the spelling).
PLACES = [
    ("offeredTo: [acme]\n    gpuModel", "offeredTo: [{}]\n    gpuModel"),
    ("gpuModel: L40S", "gpuModel: {}"),
    ("name: g1.small, vcpu: 2,", "name: g1.small, vcpu: {},"),
    ("tenantControlled: false", "tenantControlled: {}"),
    ("overcommit: { vcpu: 2,", "overcommit: { vcpu: {},"),
    ("numaAffine: true", "numaAffine: {}"),
]


def documents() -> list[str]:
    """Every spelling in every place, and mixes of several at once (seeded)."""
    made = []
    for (old, new), spelling in itertools.product(PLACES, SPELLINGS):
        assert old in EXAMPLE, old
        made.append(EXAMPLE.replace(old, new.replace("{}", spelling), 1))
    rng = random.Random(12)
    for _ in range(200):
        text = EXAMPLE
        for old, new in rng.sample(PLACES, 3):
            text = text.replace(old, new.replace("{}", rng.choice(SPELLINGS)), 1)
        made.append(text)
    return made


def editor_reads(texts: list[str]) -> list[dict[str, Any]]:
    if not (JUDGE / "yaml").is_dir() or shutil.which("node") is None:
        if IN_CI:
            pytest.fail("the yaml judge is required in CI: run scripts/yaml-judge")
        pytest.skip("the yaml judge is not installed: run scripts/yaml-judge")
    done = subprocess.run(
        ["node", str(ROOT / "tests" / "support" / "yaml_judge.js")],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": str(JUDGE)},
        timeout=120,
        check=True,
    )
    answers: list[dict[str, Any]] = json.loads(done.stdout, object_hook=_floats)
    return answers


def _floats(item: dict[str, Any]) -> Any:
    if set(item) == {"$float"}:
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[item["$float"]]
    return item


def same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(same(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(
            same(a, b) for a, b in zip(ours, theirs, strict=True)
        )
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return ours is theirs
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        return (math.isnan(ours) and math.isnan(theirs)) or ours == theirs
    return bool(ours == theirs and type(ours) is type(theirs))


def test_we_read_every_generated_document_as_the_editors_reader_does() -> None:
    texts = documents()
    assert len(texts) > 400
    for text, answer in zip(texts, editor_reads(texts), strict=True):
        assert "value" in answer, answer  # every generated document is well-formed YAML
        ours = parse_yaml(text).data
        assert same(ours, answer["value"]), (ours, answer["value"])


def test_what_the_schema_refuses_in_an_editor_fleet_validate_refuses() -> None:
    texts = documents()
    refused_by_editor = 0
    for text, answer in zip(texts, editor_reads(texts), strict=True):
        if SCHEMA.is_valid(answer["value"]):
            continue
        refused_by_editor += 1
        with pytest.raises((InvalidInputError, YamlProblems)):
            load_fleetconfig_text(text, file="fleet.yaml")
    assert refused_by_editor > 50


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        pytest.param("tenantControlled: false", "tenantControlled: off", "off", id="off-is-a-string"),
        pytest.param("offeredTo: [acme]\n    gpuModel", "offeredTo: [on]\n    gpuModel", ["on"],
                     id="on-is-a-string"),
        pytest.param("name: g1.small, vcpu: 2,", "name: g1.small, vcpu: 1e1,", 10.0,
                     id="1e1-is-a-number"),
    ],
)  # fmt: skip
def test_the_issues_examples_read_as_yaml_1_2(old: str, new: str, value: Any) -> None:
    text = EXAMPLE.replace(old, new, 1)
    data = parse_yaml(text).data
    flat = json.dumps(data)
    assert json.dumps(value) in flat


def test_a_text_resolves_by_its_style_each_time_it_appears() -> None:
    """Plain scalars' tags are remembered by their text for a document; quoted ones never are."""
    text = (
        "a: [1, '1', 1, \"1\", 1]\n"
        "b: [true, 'true', true, off, 'off', null, '', ~, '~', 0o17, '0o17', 0o17]\n"
        "c: {x: .inf, y: '.inf', z: .inf}\n"
    )
    assert parse_yaml(text).data == {
        "a": [1, "1", 1, "1", 1],
        "b": [True, "true", True, "off", "off", None, "", None, "~", 15, "0o17", 15],
        "c": {"x": float("inf"), "y": ".inf", "z": float("inf")},
    }
