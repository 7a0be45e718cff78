"""SARIF 2.1.0 output a code-scanning service reads right: columns, URIs and levels.

No SARIF schema ships offline (``check-jsonschema --builtin-schema`` has none), so
``SCHEMA`` below is the part of the SARIF 2.1.0 schema (OASIS, sarif-schema-2.1.0.json)
that covers every object we emit, with its ``additionalProperties: false``, enums and
minimums, and the real ``check-jsonschema`` validates our output against it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest

from lint_rules.config import ENGINE_CODES
from lint_rules.output.report import SARIF_ROOT, SEVERITIES, Located, render
from lint_rules.rule import Finding, Rule
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

_TEXT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"text": {"type": "string"}, "markdown": {"type": "string"}},
    "required": ["text"],
}
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
_ARTIFACT_LOCATION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "uri": {"type": "string"},
        "uriBaseId": {"type": "string"},
        "index": {"type": "integer", "minimum": -1},
        "description": _TEXT,
    },
}
_POSITIVE = {"type": "integer", "minimum": 1}
SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string"},
        "version": {"enum": ["2.1.0"]},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["tool"],
                "properties": {
                    "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
                    "originalUriBaseIds": {
                        "type": "object",
                        "additionalProperties": _ARTIFACT_LOCATION,
                    },
                    "tool": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "uniqueItems": True,
                                        "items": {
                                            "type": "object",
                                            "additionalProperties": False,
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "name": {"type": "string"},
                                                "shortDescription": _TEXT,
                                                "fullDescription": _TEXT,
                                                "help": _TEXT,
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "additionalProperties": False,
                                                    "properties": {
                                                        "enabled": {"type": "boolean"},
                                                        "level": _LEVEL,
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": _LEVEL,
                                "message": _TEXT,
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "additionalProperties": False,
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "additionalProperties": False,
                                                "properties": {
                                                    "artifactLocation": _ARTIFACT_LOCATION,
                                                    "region": {
                                                        "type": "object",
                                                        "additionalProperties": False,
                                                        "properties": {
                                                            "startLine": _POSITIVE,
                                                            "startColumn": _POSITIVE,
                                                            "endLine": _POSITIVE,
                                                            "endColumn": _POSITIVE,
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}

# RFC 3986: a URI reference is unreserved / reserved characters and %XX escapes only.
_URI_CHARACTERS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-F]{2})*")
NAMES = {rule.CODE: rule.NAME for rule in ALL_RULES} | ENGINE_CODES


def _sarif(lint: Lint, *arguments: str) -> dict[str, Any]:
    outcome = lint("check", "--no-cache", "--format", "sarif", *arguments)
    document: dict[str, Any] = json.loads(outcome.out)
    return document


def _validate(document: dict[str, Any], tmp_path: Path) -> None:
    schema, instance = tmp_path / "sarif-subset.json", tmp_path / "out.sarif"
    schema.write_text(json.dumps(SCHEMA))
    instance.write_text(json.dumps(document))
    checked = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--schemafile", str(schema), str(instance)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _locations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [result["locations"][0]["physicalLocation"] for result in document["runs"][0]["results"]]


def test_the_schema_subset_rejects_what_it_should(tmp_path: Path) -> None:
    """The validation can fail: an unknown property and a wrong columnKind are caught."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "colKind": "x"}]}
    with pytest.raises(AssertionError, match="colKind"):
        _validate(bad, tmp_path)
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "columnKind": "x"}]}
    with pytest.raises(AssertionError):
        _validate(bad, tmp_path)


def test_sarif_run_declares_code_point_columns_and_the_project_root(
    project: Path, lint: Lint, tmp_path: Path
) -> None:
    (project / "a.py").write_text("old_name()\n")

    document = _sarif(lint)

    _validate(document, tmp_path)
    run = document["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    base = run["originalUriBaseIds"][SARIF_ROOT]["uri"]
    assert base == project.as_uri() + "/"
    assert base.startswith("file:///")
    assert base.endswith("/")
    [location] = _locations(document)
    assert location["artifactLocation"] == {"uri": "a.py", "uriBaseId": SARIF_ROOT}


def test_columns_count_code_points_not_utf16_units_or_bytes(project: Path, lint: Lint) -> None:
    # U+1F600 is two UTF-16 code units and four UTF-8 bytes, and one character.
    line = 'x = "\U0001f600é"; old_name()\n'
    (project / "a.py").write_text(line, encoding="utf-8")
    column = line.index("old_name") + 1

    [location] = _locations(_sarif(lint))
    text = lint("check", "--no-cache").out

    assert location["region"] == {
        "startLine": 1,
        "startColumn": column,
        "endLine": 1,
        "endColumn": column + len("old_name"),
    }
    assert column == 11  # UTF-16 units would say 12, UTF-8 bytes 15
    assert text.startswith(f"a.py:1:{column}: LR001")


@pytest.mark.parametrize(
    ("directory", "name", "uri"),
    [
        ("with space", "a b.py", "with%20space/a%20b.py"),
        ("hash#dir", "c#d.py", "hash%23dir/c%23d.py"),
        ("pct%25", "e%f.py", "pct%2525/e%25f.py"),
        ("día", "ñandú.py", "d%C3%ADa/%C3%B1and%C3%BA.py"),
        ("colon", "x:y.py", "colon/x%3Ay.py"),
    ],
)
def test_artifact_uris_are_percent_encoded_relative_references(
    project: Path, lint: Lint, tmp_path: Path, directory: str, name: str, uri: str
) -> None:
    (project / directory).mkdir()
    (project / directory / name).write_text("old_name()\n")

    document = _sarif(lint)

    _validate(document, tmp_path)
    [location] = _locations(document)
    assert location["artifactLocation"] == {"uri": uri, "uriBaseId": SARIF_ROOT}
    assert _URI_CHARACTERS.fullmatch(uri)
    assert unquote(uri) == f"{directory}/{name}"


def test_uris_are_relative_to_the_project_root_from_a_subdirectory(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "inner.py").write_text("old_name()\n")
    (project / "top.py").write_text("old_name()\n")
    monkeypatch.chdir(project / "sub")

    document = _sarif(lint, str(project))

    assert document["runs"][0]["originalUriBaseIds"][SARIF_ROOT]["uri"] == project.as_uri() + "/"
    assert sorted(location["artifactLocation"]["uri"] for location in _locations(document)) == [
        "sub/inner.py",
        "top.py",
    ]


def test_a_file_outside_the_root_is_an_absolute_file_uri(tmp_path: Path) -> None:
    outside = tmp_path / "else where" / "x.py"
    finding = Finding("LR001", "m", 1, 1, 1, 2)

    document = json.loads(
        render([Located(str(outside), finding)], "sarif", NAMES, root=tmp_path / "project")
    )

    [location] = _locations(document)
    assert location["artifactLocation"] == {"uri": outside.as_uri()}
    assert "%20" in outside.as_uri()


def test_levels_come_from_each_rules_severity(tmp_path: Path) -> None:
    located = [
        Located("a.py", Finding(code, "m", line, 1, line, 2))
        for line, code in enumerate(["LR000", "LR001", "LR002", "LR003", "LR004", "LR999"], 1)
    ]

    document = json.loads(render(located, "sarif", NAMES, root=tmp_path, rules=ALL_RULES))

    _validate(document, tmp_path)
    levels = {result["ruleId"]: result["level"] for result in document["runs"][0]["results"]}
    assert levels == {
        "LR000": "error",
        "LR001": "error",
        "LR002": "error",
        "LR003": "error",
        "LR004": "warning",
        "LR999": "error",
    }
    descriptors = {rule["id"]: rule for rule in document["runs"][0]["tool"]["driver"]["rules"]}
    assert {code: rule["defaultConfiguration"]["level"] for code, rule in descriptors.items()} == (
        levels
    )
    typo = descriptors["LR004"]
    assert "##" not in typo["fullDescription"]["text"]
    assert typo["fullDescription"]["text"] in typo["help"]["markdown"]
    conformance = descriptors["LR003"]["fullDescription"]["text"]
    assert conformance.startswith("Reads each Protocol named in `[tool.lint_rules.protocols]`")
    assert conformance.endswith("(such a base counts as unreadable).")
    assert typo["help"]["markdown"].startswith(typo["shortDescription"]["text"])
    assert "## Fix safety" in typo["help"]["markdown"]
    assert descriptors["LR000"]["shortDescription"] == {"text": "invalid-file"}


def test_every_rule_declares_a_sarif_severity() -> None:
    assert {rule.CODE: rule.SEVERITY for rule in ALL_RULES if rule.SEVERITY not in SEVERITIES} == {}
    assert {rule.CODE for rule in ALL_RULES if rule.SEVERITY == "warning"} == {"LR004"}


def test_github_annotations_follow_the_severity_too() -> None:
    located = [
        Located("a.py", Finding("LR001", "stale", 1, 1, 1, 2)),
        Located("a.py", Finding("LR004", "typo", 2, 1, 2, 2)),
    ]

    lines = render(located, "github", NAMES, rules=ALL_RULES).splitlines()

    assert [line.split(" ")[0] for line in lines] == ["::error", "::warning"]


class _FatalRule(Rule):
    """Claims a severity SARIF does not have."""

    CODE = "LR971"
    NAME = "fatal"
    MESSAGE = "never reported"
    SEVERITY = "fatal"  # type: ignore[assignment]


def test_a_severity_sarif_does_not_know_is_an_error_naming_the_rule(
    project: Path, lint: Lint
) -> None:
    (project / "a.py").write_text("x = 1\n")

    outcome = lint("check", "--no-cache", "--format", "sarif", rules=[*ALL_RULES, _FatalRule])

    assert outcome.code == 2
    assert outcome.err == (
        "lint-rules: error: rule LR971: SEVERITY must be one of error, warning, note, not 'fatal'\n"
    )
