"""Output formats for findings: text, json, github and sarif."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lint_rules.rule import Finding

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class Located:
    """A finding with the path it is reported under."""

    path: str
    finding: Finding

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return self.path, self.finding.line, self.finding.column, self.finding.code


def render(
    located: Sequence[Located],
    output_format: str,
    rule_names: Mapping[str, str],
    statistics: bool = False,
) -> str:
    """The findings in ``output_format``, sorted by path, line, column and code."""
    ordered = sorted(located, key=lambda item: item.sort_key)
    if output_format == "json":
        import json  # only here and for sarif: text output does not need it

        return json.dumps([_json_object(item, rule_names) for item in ordered], indent=2) + "\n"
    if output_format == "github":
        return "".join(_github_line(item) for item in ordered)
    if output_format == "sarif":
        import json

        return json.dumps(_sarif(ordered, rule_names), indent=2) + "\n"
    if statistics:
        return _statistics(ordered, rule_names)
    return "".join(_text_line(item) for item in ordered)


def summary(
    findings: Sequence[Finding], fixed: int = 0, fix_mode: bool = False, diff: bool = False
) -> str:
    """The last line of text output."""
    fixable = sum(finding.fix is not None for finding in findings)
    if fix_mode:
        verb = "Would fix" if diff else "Fixed"
        return f"{verb} {_count(fixed)}, {len(findings)} remaining.\n"
    if not findings:
        return "All checks passed!\n"
    hint = f" ({fixable} fixable with `lint-rules fix`)" if fixable else ""
    return f"Found {_count(len(findings))}{hint}.\n"


def _count(number: int) -> str:
    return f"{number} error" + ("" if number == 1 else "s")


def _text_line(item: Located) -> str:
    finding = item.finding
    marker = " [*]" if finding.fix is not None else ""
    return (
        f"{item.path}:{finding.line}:{finding.column}: {finding.code}{marker} {finding.message}\n"
    )


def _statistics(ordered: Sequence[Located], rule_names: Mapping[str, str]) -> str:
    counts = Counter(item.finding.code for item in ordered)
    fixable = {item.finding.code for item in ordered if item.finding.fix is not None}
    lines = []
    for code, count in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])):
        marker = "[*]" if code in fixable else "   "
        lines.append(f"{count:>6}  {code}  {marker}  {rule_names.get(code, '')}\n")
    return "".join(lines)


def _json_object(item: Located, rule_names: Mapping[str, str]) -> dict[str, object]:
    finding = item.finding
    fix = None
    if finding.fix is not None:
        fix = {
            "safe": finding.fix.safe,
            "edits": [
                {"start": edit.start, "end": edit.end, "content": edit.replacement}
                for edit in finding.fix.edits
            ],
        }
    return {
        "path": item.path,
        "line": finding.line,
        "column": finding.column,
        "end_line": finding.end_line,
        "end_column": finding.end_column,
        "code": finding.code,
        "name": rule_names.get(finding.code, ""),
        "message": finding.message,
        "fix": fix,
    }


def _github_line(item: Located) -> str:
    finding = item.finding
    properties = {
        "file": item.path,
        "line": finding.line,
        "col": finding.column,
        "endLine": finding.end_line,
        "endColumn": finding.end_column,
        "title": finding.code,
    }
    rendered = ",".join(
        f"{key}={_escape_property(str(value))}" for key, value in properties.items()
    )
    return f"::error {rendered}::{_escape_data(finding.message)}\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _sarif(ordered: Sequence[Located], rule_names: Mapping[str, str]) -> dict[str, object]:
    codes = sorted(rule_names)
    index = {code: position for position, code in enumerate(codes)}
    results = [
        {
            "ruleId": item.finding.code,
            "ruleIndex": index[item.finding.code],
            "level": "error",
            "message": {"text": item.finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": item.path},
                        "region": {
                            "startLine": item.finding.line,
                            "startColumn": item.finding.column,
                            "endLine": item.finding.end_line,
                            "endColumn": item.finding.end_column,
                        },
                    }
                }
            ],
        }
        for item in ordered
    ]
    driver = {
        "name": "lint_rules",
        "rules": [
            {"id": code, "name": rule_names[code], "shortDescription": {"text": rule_names[code]}}
            for code in codes
        ],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
