"""Every registered rule's VALID and INVALID examples, its documentation and docs page."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from lint_rules.engine.checker import Checker
from lint_rules.engine.fixes import fix_text
from lint_rules.output.docs import rules_markdown
from lint_rules.rule import DOC_SECTIONS, Invalid, Rule, Valid
from lint_rules.rules import ALL_RULES

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE_PATH = Path("example.py")


def _cases(kind: str) -> list[object]:
    return [
        pytest.param(rule, example, id=f"{rule.CODE}-{kind}-{index}")
        for rule in ALL_RULES
        for index, example in enumerate(getattr(rule, kind))
    ]


def _source(code: str) -> str:
    return textwrap.dedent(code)


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_reports_nothing(rule: type[Rule], example: Valid) -> None:
    findings, _ = Checker([rule(example.options)]).check(EXAMPLE_PATH, _source(example.code))

    assert findings == []


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_reports_its_finding(rule: type[Rule], example: Invalid) -> None:
    findings, _ = Checker([rule(example.options)]).check(EXAMPLE_PATH, _source(example.code))

    assert len(findings) == 1
    finding = findings[0]
    assert finding.code == rule.CODE
    assert finding.message == example.message
    expected_range = (example.line, example.column, example.end_line, example.end_column)
    assert (finding.line, finding.column, finding.end_line, finding.end_column) == expected_range


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_fixes_to_its_replacement(rule: type[Rule], example: Invalid) -> None:
    source = _source(example.code)
    checker = Checker([rule(example.options)])

    outcome = fix_text(checker, EXAMPLE_PATH, source, unsafe_fixes=True)

    if example.replacement is None:
        assert outcome.text == source
    else:
        assert outcome.text == _source(example.replacement)
        assert outcome.findings == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.CODE)
def test_rule_documents_every_section_in_order(rule: type[Rule]) -> None:
    headings = re.findall(r"^## (.+)$", rule.documentation(), flags=re.MULTILINE)

    assert tuple(headings) == DOC_SECTIONS


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.CODE)
def test_rule_has_examples_of_both_kinds(rule: type[Rule]) -> None:
    assert rule.VALID
    assert rule.INVALID


def test_rule_codes_are_unique_and_well_formed() -> None:
    codes = [rule.CODE for rule in ALL_RULES]

    assert len(set(codes)) == len(codes)
    assert all(re.fullmatch(r"LR00[1-9]|LR0[1-9]\d", code) for code in codes)


def test_rules_page_is_current() -> None:
    page = (REPOSITORY / "docs" / "rules.md").read_text(encoding="utf-8")

    assert page == rules_markdown(ALL_RULES), (
        "docs/rules.md is stale: run `python -m lint_rules rules --format markdown > docs/rules.md`"
    )


def _declaring_modules(options: object) -> list[str]:
    """The modules a rule's example options read declarations from (``module:Name`` in
    ``literals`` and ``protocols``; LR001's qualified renames name code, they read none)."""
    modules = []
    tables = (
        [options.get(key) for key in ("literals", "protocols")] if isinstance(options, dict) else []
    )
    for table in tables:
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            for target in (key, value.get("values") if isinstance(value, dict) else value):
                if isinstance(target, str) and ":" in target:
                    modules.append(target.split(":", 1)[0])
    return modules


@pytest.mark.parametrize(("rule", "example"), [*_cases("VALID"), *_cases("INVALID")])
def test_examples_read_declarations_this_repository_owns(
    rule: type[Rule], example: Valid | Invalid
) -> None:
    # A new release of an installed package (the Agents SDK) must not break our examples.
    for module in _declaring_modules(example.options):
        top = module.split(".")[0]
        assert (REPOSITORY / "src" / top).is_dir() or (REPOSITORY / top).is_dir(), (
            f"{rule.CODE} example reads {module!r}, which this repository does not own"
        )
