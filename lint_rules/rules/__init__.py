"""Every rule of the suite, in code order. A new rule is added here."""

from __future__ import annotations

from lint_rules.rule import Rule
from lint_rules.rules.protocol_conformance import ProtocolConformanceRule
from lint_rules.rules.stale_name import StaleNameRule
from lint_rules.rules.typo import TypoRule
from lint_rules.rules.unknown_literal import UnknownLiteralRule

ALL_RULES: tuple[type[Rule], ...] = (
    StaleNameRule,
    UnknownLiteralRule,
    ProtocolConformanceRule,
    TypoRule,
)
"""LR001 stale-name: uses of a name that was renamed (``[tool.lint_rules.renames]``).
LR002 unknown-literal: strings a ``Literal`` field cannot equal (``[tool.lint_rules.literals]``).
LR003 protocol-conformance: implementations of ``[tool.lint_rules.protocols]``.
LR004 typo: typos' findings, fixed only where no public API changes."""
