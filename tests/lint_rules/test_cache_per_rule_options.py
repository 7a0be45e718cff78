"""The result cache never outlives a rule's options.

For each configurable rule, with only that rule selected: a cold run fills the cache, a warm
run with the same configuration reports the same, and a warm run after changing only that
rule's options reports what the new options say. A cache key that left the configuration
out would print the stale findings here (LR004 fingerprints its typos configuration on its
own, so its test guards that fingerprint).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint, needs_typos
else:
    from rule_fixtures import Lint, needs_typos


def _findings(lint: Lint, code: str) -> list[str]:
    outcome = lint("check", "--select", code, "--exit-zero")
    assert outcome.err == "", outcome.err
    return [line for line in outcome.out.splitlines() if f": {code} " in line]


def _cold_warm_changed(
    project: Path, lint: Lint, code: str, before: str, after: str
) -> tuple[list[str], list[str], list[str]]:
    """Findings of a cold run and a warm run with ``before`` as the project's configuration,
    then of a warm run once only the rule's options changed to ``after``."""
    (project / "pyproject.toml").write_text(textwrap.dedent(before))
    cold = _findings(lint, code)
    assert (project / ".lint_rules_cache").is_dir(), "the cold run wrote no cache"
    warm = _findings(lint, code)
    (project / "pyproject.toml").write_text(textwrap.dedent(after))
    return cold, warm, _findings(lint, code)


def test_lr001_renames_change_the_findings_of_a_warm_run(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("x = old_name\ny = other_name\n")

    cold, warm, changed = _cold_warm_changed(
        project,
        lint,
        "LR001",
        '[tool.lint_rules.renames]\nold_name = "new_name"\n',
        '[tool.lint_rules.renames]\nother_name = "name"\n',
    )

    assert cold == warm == ["m.py:1:5: LR001 [*] `old_name` was renamed to `new_name`"]
    assert changed == ["m.py:2:5: LR001 [*] `other_name` was renamed to `name`"]


def test_lr002_literals_change_the_findings_of_a_warm_run(project: Path, lint: Lint) -> None:
    (project / "paints.py").write_text(
        "from typing import Literal\n\n"
        'Color = Literal["red", "blue"]\n'
        'Hue = Literal["teal", "tan"]\n'
    )
    (project / "m.py").write_text(
        'def check(paint):\n    return paint.color == "rde" or paint.color == "tael"\n'
    )

    cold, warm, changed = _cold_warm_changed(
        project,
        lint,
        "LR002",
        '[tool.lint_rules.literals]\n"color" = "paints:Color"\n',
        '[tool.lint_rules.literals]\n"color" = "paints:Hue"\n',
    )

    assert cold == warm
    assert [line.split(" LR002")[0] for line in cold] == ["m.py:2:27:"]
    assert "red" in cold[0]
    assert [line.split(" LR002")[0] for line in changed] == ["m.py:2:51:"]
    assert "teal" in changed[0]


def test_lr003_protocols_change_the_findings_of_a_warm_run(project: Path, lint: Lint) -> None:
    (project / "shapes.py").write_text(
        "from typing import Protocol\n\n\n"
        "class Shape(Protocol):\n"
        "    def area(self) -> float: ...\n"
        "    def perimeter(self) -> float: ...\n"
    )
    for name in ("a", "b"):
        (project / name).mkdir()
        (project / name / "square.py").write_text(
            "import shapes\n\n\n"
            "class Square(shapes.Shape):\n"
            "    def area(self) -> float:\n"
            "        return 1.0\n"
        )

    cold, warm, changed = _cold_warm_changed(
        project,
        lint,
        "LR003",
        '[tool.lint_rules.protocols]\n"shapes:Shape" = ["a/"]\n',
        '[tool.lint_rules.protocols]\n"shapes:Shape" = ["b/"]\n',
    )

    assert cold == warm
    assert [line.split(":")[0] for line in cold] == ["a/square.py"]
    assert [line.split(":")[0] for line in changed] == ["b/square.py"]


@needs_typos
def test_lr004_typos_configuration_changes_the_findings_of_a_warm_run(
    project: Path, lint: Lint
) -> None:
    misspelt = "recie" + "ve"  # built from parts: this repository's own typos run passes
    (project / "m.py").write_text(f"# we {misspelt} it\n")

    cold, warm, changed = _cold_warm_changed(
        project,
        lint,
        "LR004",
        "[tool.typos]\n",
        f'[tool.typos.default.extend-words]\n{misspelt} = "{misspelt}"\n',
    )

    assert cold == warm
    assert [line.split(" LR004")[0] for line in cold] == ["m.py:1:6:"]
    assert changed == []


@needs_typos
@pytest.mark.parametrize(
    ("name", "accepting"),
    [
        ("typos.toml", '[default.extend-words]\n{word} = "{word}"\n'),
        ("_typos.toml", '[default.extend-words]\n{word} = "{word}"\n'),
        (".typos.toml", '[default.extend-words]\n{word} = "{word}"\n'),
        ("pyproject.toml", '[tool.typos.default.extend-words]\n{word} = "{word}"\n'),
    ],
)
def test_lr004_typos_configuration_nested_below_the_root_is_part_of_the_cache_key(
    project: Path, lint: Lint, name: str, accepting: str
) -> None:
    misspelt = "recie" + "ve"  # built from parts: this repository's own typos run passes
    (project / "top.py").write_text(f"# we {misspelt} it\n")
    nested = project / "pkg" / "deep"
    nested.mkdir(parents=True)
    (nested / "m.py").write_text(f"# we {misspelt} it\n")
    everywhere = ["pkg/deep/m.py:1:6:", "top.py:1:6:"]

    def positions() -> list[str]:
        return [line.split(" LR004")[0] for line in _findings(lint, "LR004")]

    assert positions() == everywhere  # cold
    assert positions() == everywhere  # warm
    config = project / "pkg" / name
    config.write_text(accepting.format(word=misspelt))  # created: pkg/ now has its own
    assert positions() == ["top.py:1:6:"]
    config.write_text(accepting.format(word="other"))  # edited
    assert positions() == everywhere
    config.write_text(accepting.format(word=misspelt))
    assert positions() == ["top.py:1:6:"]
    config.unlink()  # removed: the root's (none) governs again
    assert positions() == everywhere


def test_warm_run_does_not_rewrite_the_cache(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("x = old_name\n")
    lint("check")
    (cache_file,) = (project / ".lint_rules_cache").glob("*.json")
    os.utime(cache_file, ns=(10**9, 10**9))  # a time no write would leave

    assert lint("check").code == 1
    assert cache_file.stat().st_mtime_ns == 10**9
    (project / "m.py").write_text("x = new_name\n")
    assert lint("check").code == 0
    assert cache_file.stat().st_mtime_ns != 10**9
    assert lint("check").code == 0
