"""Output formats for findings: text, json, github and sarif.

Fix markers follow ruff: in text output and ``--statistics``, ``[*]`` marks a finding
whose fix ``fix`` applies as it is run (a safe fix, or any fix with ``--unsafe-fixes``);
``[~]`` marks one whose fix only ``fix --unsafe-fixes`` applies (ruff prints nothing
there; a marker of its own says the fix exists); in ``--statistics``, ``[-]`` marks a code
only some of whose findings ``fix`` applies (ruff's marker). The summary counts the
findings by severity (``Found 2 errors and 1 warning.``) and the fixes, in ruff's words:
``[*] 2 fixable with `lint-rules fix` (1 unsafe fix available with `lint-rules fix
--unsafe-fixes`).``
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lint_rules.analysis.renames import WITHHELD
from lint_rules.rule import ConfigError, Finding, Rule

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_ROOT = "%SRCROOT%"
"""The ``uriBaseId`` of every artifact under the project root (``originalUriBaseIds``)."""
SEVERITIES = ("error", "warning", "note")
"""The SARIF levels a rule's ``SEVERITY`` may be; codes without a rule class are errors."""
SAFE_MARKER, UNSAFE_MARKER = "[*]", "[~]"
PARTLY_MARKER = "[-]"
"""``--statistics``: ``fix`` repairs some of a code's findings, not all (ruff's marker)."""
FIX_COMMAND = "`lint-rules fix`"
UNSAFE_COMMAND = "`lint-rules fix --unsafe-fixes`"


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
    *,
    unsafe_fixes: bool = False,
    root: Path | None = None,
    rules: Sequence[type[Rule]] = (),
) -> str:
    """The findings in ``output_format``, sorted by path, line, column and code.

    ``unsafe_fixes``: the run applies unsafe fixes too (``[*]`` for them as well).
    ``root``: the project root, the base of SARIF's relative URIs (default: the working
    directory). ``rules``: the rule classes, for SARIF's levels and rule descriptions.
    """
    ordered = sorted(located, key=lambda item: item.sort_key)
    if output_format == "json":
        import json  # only here and for sarif: text output does not need it

        if statistics:
            counted = _statistics_objects(ordered, rule_names, unsafe_fixes)
            return json.dumps(counted, indent=2) + "\n"
        levels = severity_map(rules)
        objects = [_json_object(item, rule_names, levels) for item in ordered]
        return json.dumps(objects, indent=2) + "\n"
    if output_format == "github":
        classes = {rule.CODE: rule for rule in rules}
        return "".join(
            _github_line(item, _severity(classes.get(item.finding.code))) for item in ordered
        )
    if output_format == "sarif":
        import json

        document = _sarif(ordered, rule_names, rules, root if root is not None else Path.cwd())
        return json.dumps(document, indent=2) + "\n"
    if statistics:
        return _statistics(ordered, rule_names, unsafe_fixes)
    return "".join(_text_line(item, unsafe_fixes) for item in ordered)


def summary(
    findings: Sequence[Finding],
    fixed: int = 0,
    fix_mode: bool = False,
    diff: bool = False,
    unsafe_fixes: bool = False,
    severities: Mapping[str, str] | None = None,
) -> str:
    """The last lines of text output: the count by severity, then what ``fix`` would repair.

    In ruff's words, with each rule's severity (``severities``: code -> level; a code not
    in it is an error): ``Found 3 errors and 1 warning.``, then ``[*] 2 fixable with
    `lint-rules fix` (1 unsafe fix available with `lint-rules fix --unsafe-fixes`).`` In fix
    mode: ``Fixed 2 findings, 1 error and 1 warning remaining.``, then how many unsafe fixes
    ``--unsafe-fixes`` would add; and which qualified renames are withheld (LR001 reports
    their unknown occurrences; their findings are not counted as fixable).
    """
    applicable = sum(_applicable(finding, unsafe_fixes) for finding in findings)
    hidden = sum(_hidden(finding, unsafe_fixes) for finding in findings)
    hint = f"{_fixes(hidden, 'unsafe fix')} available with {UNSAFE_COMMAND}" if hidden else ""
    withheld = _withheld(findings)
    tally = tally_findings(findings, severities or {})
    if fix_mode:
        verb = "Would fix" if diff else "Fixed"
        head = f"{verb} {_plural(fixed, 'finding')}, {tally or '0'} remaining.\n"
        return head + (f"{hint}.\n" if hint else "") + withheld
    if not findings:
        return "All checks passed!\n"
    head = f"Found {tally}.\n"
    if applicable:
        extra = f" ({hint})" if hint else ""
        return head + f"{SAFE_MARKER} {applicable} fixable with {FIX_COMMAND}{extra}.\n" + withheld
    return head + (f"{hint}.\n" if hint else "") + withheld


def tally_findings(findings: Sequence[Finding], severities: Mapping[str, str]) -> str:
    """``3 errors and 1 warning``: the findings counted by severity (``severities``: code ->
    level, ``error`` when missing), most severe first, levels with none left out; ``""``
    when there are no findings."""
    counts = Counter(severities.get(finding.code, "error") for finding in findings)
    parts = [_plural(counts[level], level) for level in SEVERITIES if counts[level]]
    if len(parts) <= 1:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


def severity_map(rules: Sequence[type[Rule]]) -> dict[str, str]:
    """Each rule's code and severity (``SEVERITY``, checked); engine codes are errors."""
    return {rule.CODE: _severity(rule) for rule in rules}


def _withheld(findings: Sequence[Finding]) -> str:
    """The line naming the renames withheld (LR001: an occurrence of the target's old
    spelling is not known to be the target's), or ``""``."""
    keys = sorted(
        {
            match["key"]
            for finding in findings
            if finding.code == "LR001" and (match := WITHHELD.match(finding.message))
        }
    )
    if not keys:
        return ""
    shown = ", ".join(f"`{key}`" for key in keys)
    noun = "rename" if len(keys) == 1 else "renames"
    why = "not every occurrence is known to be the target's"
    return f"{len(keys)} {noun} withheld ({why}): {shown}.\n"


def _applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether ``fix`` (with ``--unsafe-fixes`` when given) applies the finding's fix."""
    return finding.fix is not None and (finding.fix.safe or unsafe_fixes)


def _hidden(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether the finding's fix waits for ``--unsafe-fixes``."""
    return finding.fix is not None and not finding.fix.safe and not unsafe_fixes


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _fixes(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "es")


def _marker(finding: Finding, unsafe_fixes: bool) -> str:
    if _applicable(finding, unsafe_fixes):
        return SAFE_MARKER
    return UNSAFE_MARKER if _hidden(finding, unsafe_fixes) else ""


def _text_line(item: Located, unsafe_fixes: bool = False) -> str:
    finding = item.finding
    marker = _marker(finding, unsafe_fixes)
    marker = f" {marker}" if marker else ""
    return (
        f"{item.path}:{finding.line}:{finding.column}: {finding.code}{marker} {finding.message}\n"
    )


def _statistics(
    ordered: Sequence[Located], rule_names: Mapping[str, str], unsafe_fixes: bool = False
) -> str:
    """One line per code: count, code, marker, name. As ruff marks them: ``[*]`` when
    ``fix`` repairs every one of the code's findings, ``[-]`` when it repairs some of them;
    otherwise ``[~]`` when ``--unsafe-fixes`` would repair some, else nothing."""
    counts = Counter(item.finding.code for item in ordered)
    applicable = Counter(
        item.finding.code for item in ordered if _applicable(item.finding, unsafe_fixes)
    )
    hidden = Counter(item.finding.code for item in ordered if _hidden(item.finding, unsafe_fixes))
    lines = []
    for code, count in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])):
        if applicable[code] == count:
            marker = SAFE_MARKER
        elif applicable[code]:
            marker = PARTLY_MARKER
        else:
            marker = UNSAFE_MARKER if hidden[code] else "   "
        lines.append(f"{count:>6}  {code}  {marker}  {rule_names.get(code, '')}\n")
    return "".join(lines)


def _statistics_objects(
    ordered: Sequence[Located], rule_names: Mapping[str, str], unsafe_fixes: bool = False
) -> list[dict[str, object]]:
    """``--statistics --format json``, as ruff's: per code, most frequent first, its count,
    whether ``fix`` repairs every finding (``fixable``) and how many it repairs."""
    counts = Counter(item.finding.code for item in ordered)
    applicable = Counter(
        item.finding.code for item in ordered if _applicable(item.finding, unsafe_fixes)
    )
    return [
        {
            "code": code,
            "name": rule_names.get(code, ""),
            "count": count,
            "fixable": applicable[code] == count,
            "fixable_count": applicable[code],
        }
        for code, count in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    ]


def _json_object(
    item: Located, rule_names: Mapping[str, str], severities: Mapping[str, str]
) -> dict[str, object]:
    """One finding of ``--format json`` (the schema: docs/lint.md, "JSON output")."""
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
        "severity": severities.get(finding.code, "error"),
        "message": finding.message,
        "fix": fix,
    }


_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def _github_line(item: Located, severity: str = "error") -> str:
    """A workflow command: ``::error``, ``::warning`` or ``::notice`` by severity."""
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
    return f"::{_GITHUB_COMMANDS[severity]} {rendered}::{_escape_data(finding.message)}\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _sarif(
    ordered: Sequence[Located],
    rule_names: Mapping[str, str],
    rules: Sequence[type[Rule]],
    root: Path,
) -> dict[str, object]:
    """A SARIF 2.1.0 log with one run.

    Columns count characters of the line (``Finding.column``), hence ``columnKind``
    ``unicodeCodePoints`` (SARIF's default is UTF-16 code units). A file under ``root``
    is a percent-encoded relative reference against ``%SRCROOT%``, which
    ``originalUriBaseIds`` binds to ``root``; any other file is an absolute ``file:`` URI.
    Each result's ``level`` is its rule's ``SEVERITY``.
    """
    classes = {rule.CODE: rule for rule in rules}
    codes = sorted(rule_names)
    index = {code: position for position, code in enumerate(codes)}
    base = _directory(root)
    results = [
        {
            "ruleId": item.finding.code,
            "ruleIndex": index[item.finding.code],
            "level": _severity(classes.get(item.finding.code)),
            "message": {"text": item.finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact_location(item.path, base),
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
        **_version(),
        "rules": [_descriptor(code, rule_names[code], classes.get(code)) for code in codes],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {
                    SARIF_ROOT: {
                        "uri": _directory_uri(base),
                        "description": {"text": "The project root."},
                    }
                },
                "results": results,
            }
        ],
    }


def _version() -> dict[str, str]:
    """The driver's ``version``: that of the installed distribution, if any."""
    from importlib import metadata

    try:
        return {"version": metadata.version("agent-sessions")}
    except metadata.PackageNotFoundError:
        return {}


def _severity(rule: type[Rule] | None) -> str:
    """A rule's SARIF level; the engine's codes (LR000, LR999) and LR100 are errors."""
    if rule is None:
        return "error"
    if rule.SEVERITY not in SEVERITIES:
        raise ConfigError(
            f"rule {rule.CODE}: SEVERITY must be one of {', '.join(SEVERITIES)}, "
            f"not {rule.SEVERITY!r}"
        )
    return rule.SEVERITY


def _descriptor(code: str, name: str, rule: type[Rule] | None) -> dict[str, object]:
    descriptor: dict[str, object] = {"id": code, "name": name}
    if rule is not None:
        documentation = rule.documentation()
        descriptor["shortDescription"] = {"text": rule.summary()}
        descriptor["fullDescription"] = {"text": _section(documentation, "What it does")}
        descriptor["help"] = {"text": documentation, "markdown": documentation}
    else:
        descriptor["shortDescription"] = {"text": name}
    descriptor["defaultConfiguration"] = {"level": _severity(rule)}
    return descriptor


def _section(documentation: str, title: str) -> str:
    """The text of a rule docstring's ``## title`` section (the summary if it has none)."""
    _, found, rest = documentation.partition(f"## {title}\n")
    if not found:
        return documentation.partition("\n")[0]
    return rest.partition("\n## ")[0].strip()


def _directory(root: Path) -> Path:
    return Path(os.path.abspath(root))


def _directory_uri(directory: Path) -> str:
    """``originalUriBaseIds`` URIs end with a slash (SARIF 3.14.14)."""
    uri = directory.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _artifact_location(path: str, base: Path) -> dict[str, str]:
    """``path`` (as displayed: relative to the working directory, or absolute) as a
    relative reference under ``base`` (``uriBaseId`` ``%SRCROOT%``), else a ``file:`` URI."""
    absolute = Path(os.path.abspath(path))
    for candidate, directory in ((absolute, base), (absolute.resolve(), base.resolve())):
        try:
            relative = candidate.relative_to(directory)
        except ValueError:
            continue
        return {"uri": quote(relative.as_posix(), safe="/"), "uriBaseId": SARIF_ROOT}
    return {"uri": absolute.as_uri()}
