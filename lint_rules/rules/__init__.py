"""Every rule of the suite, in code order. A new rule is added here."""

from __future__ import annotations

from lint_rules.rule import Rule
from lint_rules.rules.stale_name import StaleNameRule
from lint_rules.rules.typo import TypoRule

ALL_RULES: tuple[type[Rule], ...] = (StaleNameRule, TypoRule)
