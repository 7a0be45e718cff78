"""``fix`` never breaks code: scope-aware renames, collisions, verification, consistency.

Each shape here was seen on real projects (issue 11): the fix compiled to
something else, or did not compile at all, and ``fix`` said "Fixed".
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.rule import Rule
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint


def _project(root: Path, renames: str, files: dict[str, str], extra: str = "") -> None:
    (root / "pyproject.toml").write_text(f"{extra}[tool.lint_rules.renames]\n{renames}\n")
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


# -- collisions: reported with the reason, no fix ------------------------------------------


def test_a_parameter_renamed_onto_another_parameter_is_reported_not_fixed(
    project: Path, lint: Lint
) -> None:
    source = "def f(new=1, old=None):\n    return old\n"
    _project(project, 'old = "new"', {"m.py": source})

    outcome = lint("fix")

    assert (project / "m.py").read_text() == source
    assert outcome.code == 1
    assert "m.py:1:14: LR001 `old` was renamed to `new`; not fixed: `new` is already" in outcome.out
    assert "a parameter of `f`" in outcome.out
    assert "Fixed 0 findings" in outcome.out


def test_a_keyword_renamed_onto_a_keyword_already_in_the_call_is_reported_not_fixed(
    project: Path, lint: Lint
) -> None:
    source = "emit(new=1, old=2)\n"
    _project(project, 'old = "new"', {"m.py": source})

    outcome = lint("fix")

    assert (project / "m.py").read_text() == source
    assert "not fixed: the call already passes `new`" in outcome.out


def test_a_local_renamed_onto_a_name_bound_in_its_scope_is_reported_not_fixed(
    project: Path, lint: Lint
) -> None:
    source = """\
        def f(items):
            new = len(items)
            old = new + 1
            return old
        """
    _project(project, 'old = "new"', {"m.py": source})

    outcome = lint("fix")

    assert (project / "m.py").read_text() == textwrap.dedent(source)
    assert "not fixed: `new` is already a local of `f`" in outcome.out


def test_a_rename_that_would_shadow_a_name_used_in_the_same_scope_is_not_fixed(
    project: Path, lint: Lint
) -> None:
    source = """\
        from helpers import new

        def f():
            old = 1
            return new(old)
        """
    _project(project, 'old = "new"', {"m.py": source})

    outcome = lint("fix")

    assert (project / "m.py").read_text() == textwrap.dedent(source)
    assert "not fixed: `new` already names an import here" in outcome.out


def test_a_compatibility_alias_does_not_block_renaming_its_uses(project: Path, lint: Lint) -> None:
    source = """\
        def new():
            pass

        old = new  # noqa: LR001

        old()
        """
    _project(project, 'old = "new"', {"m.py": source})

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "m.py").read_text().endswith("\nnew()\n")


# -- scope: a name that resolves elsewhere is not the renamed one ---------------------------


def test_a_builtin_with_the_old_spelling_is_left_alone(project: Path, lint: Lint) -> None:
    source = """\
        def digest(value):
            return hash(value)
        """
    _project(project, 'hash = "unsafe_hash"', {"m.py": source})

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "m.py").read_text() == textwrap.dedent(source)


def test_a_local_that_shadows_the_builtin_is_still_renamed(project: Path, lint: Lint) -> None:
    source = """\
        def f(hash):
            return hash
        """
    _project(project, 'hash = "unsafe_hash"', {"m.py": source})

    lint("fix")

    assert (project / "m.py").read_text() == "def f(unsafe_hash):\n    return unsafe_hash\n"


# -- qualified targets ----------------------------------------------------------------------


def test_a_keyword_target_renames_that_keyword_of_that_function_only(
    project: Path, lint: Lint
) -> None:
    source = """\
        import attr
        from attr import s as attrs

        @attr.s(hash=True)
        class A:
            pass

        @attrs(hash=False, frozen=True)
        class B:
            pass

        def key(value, hash=None):
            return hash or other(hash=1) or hash(value)
        """
    _project(project, '"attr:s(hash)" = "unsafe_hash"', {"m.py": source})

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    fixed = (project / "m.py").read_text()
    assert "@attr.s(unsafe_hash=True)" in fixed
    assert "@attrs(unsafe_hash=False, frozen=True)" in fixed
    assert "def key(value, hash=None):\n    return hash or other(hash=1) or hash(value)" in fixed


def test_a_module_attribute_target_renames_its_imports_and_uses_only(
    project: Path, lint: Lint
) -> None:
    source = """\
        import json
        import pkg.events
        from pkg.events import emit, emit as send
        from pkg import events as ev

        def emit_all(emit):
            return emit

        pkg.events.emit()
        ev.emit()
        json.emit()
        send()
        emit()
        """
    _project(project, '"pkg.events:emit" = "publish"', {"m.py": source})

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "m.py").read_text() == textwrap.dedent("""\
        import json
        import pkg.events
        from pkg.events import publish, publish as send
        from pkg import events as ev

        def emit_all(emit):
            return emit

        pkg.events.publish()
        ev.publish()
        json.emit()
        send()
        publish()
        """)


def test_a_module_attribute_target_renames_the_definition_in_its_module(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        '"pkg.events:emit" = "publish"',
        {
            "pkg/__init__.py": "",
            "pkg/events.py": "def emit():\n    pass\n\ndef other(emit):\n    return emit\n",
        },
    )

    lint("fix")

    assert (project / "pkg" / "events.py").read_text() == (
        "def publish():\n    pass\n\ndef other(emit):\n    return emit\n"
    )


def test_a_class_attribute_target_renames_the_member_and_uses_through_self(
    project: Path, lint: Lint
) -> None:
    source = """\
        class Store:
            retries = 3

            def run(self):
                return self.retries

        class Other:
            retries = 1

        def f(store: Store, other: Other):
            return store.retries, other.retries, Store.retries
        """
    _project(project, '"m:Store.retries" = "max_retries"', {"m.py": source})

    outcome = lint("fix")

    fixed = (project / "m.py").read_text()
    assert "    max_retries = 3\n" in fixed
    assert "return self.max_retries" in fixed
    assert "    retries = 1\n" in fixed
    # The reference engine knows `store` is a `Store` (its annotation), `other` is not.
    assert "return store.max_retries, other.retries, Store.max_retries" in fixed
    assert (outcome.code, outcome.out) == (0, "Fixed 4 findings, 0 remaining.\n")


def test_bad_qualified_targets_are_configuration_errors_naming_the_key(
    project: Path, lint: Lint
) -> None:
    for key in ('"attr:s(hash" = "x"', '"a:b:c" = "x"', '"m:C.x" = "a.b"', '"f()" = "x"'):
        (project / "pyproject.toml").write_text(f"[tool.lint_rules.renames]\n{key}\n")

        outcome = lint("check")

        assert outcome.code == 2
        assert "'renames'" in outcome.err


# -- verification: a fix that would change meaning is withheld ---------------------------


class _ParameterOntoParameterRule(Rule):
    """Renames a parameter `second` to `first`, blind to the other parameters."""

    CODE = "LR981"
    NAME = "parameter-onto-parameter"
    MESSAGE = "second"

    def visit_arg(self, node: ast.arg) -> None:
        if node.arg == "second":
            start, _ = self.file.node_range(node)
            self.report((start, start + 6), self.MESSAGE, self.replace((start, start + 6), "first"))


class _HelperToLenRule(Rule):
    """Renames every name `helper` to `len`, blind to the builtin."""

    CODE = "LR982"
    NAME = "helper-to-len"
    MESSAGE = "helper"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "helper":
            self.report(node, self.MESSAGE, self.replace(node, "len"))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        name = self.file.definition_name(node)
        if node.name == "helper" and name is not None:
            self.report(name, self.MESSAGE, self.replace(name, "len"))


class _RenameValueToPathRule(Rule):
    """Renames a local `value` to `path`, blind to an imported `path`."""

    CODE = "LR983"
    NAME = "value-to-path"
    MESSAGE = "value"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "value":
            self.report(node, self.MESSAGE, self.replace(node, "path"))


def test_a_result_that_parses_but_does_not_compile_is_withheld_byte_for_byte(
    project: Path, lint: Lint
) -> None:
    source = b"def f(first, second):\r\n    return second\r\n"
    (project / "m.py").write_bytes(source)

    outcome = lint("fix", rules=[*ALL_RULES, _ParameterOntoParameterRule])

    assert (project / "m.py").read_bytes() == source
    assert outcome.code == 1
    assert (
        "LR981 second (fix withheld: the result would not compile: line 1: duplicate argument"
        in (outcome.out)
    )
    assert "Fixed 0 findings, 1 error remaining." in outcome.out


def test_a_fix_that_turns_a_builtin_into_a_local_name_is_withheld(
    project: Path, lint: Lint
) -> None:
    source = "def helper():\n    return 1\n\nprint(helper(), len([]))\n"
    (project / "m.py").write_text(source)

    outcome = lint("fix", rules=[*ALL_RULES, _HelperToLenRule])

    assert (project / "m.py").read_text() == source
    assert "fix withheld: `len` on line 4 would no longer be the builtin" in outcome.out


def test_a_fix_that_shadows_an_import_is_withheld(project: Path, lint: Lint) -> None:
    source = "from os import path\n\ndef f():\n    value = 1\n    return path.join(str(value))\n"
    (project / "m.py").write_text(source)

    outcome = lint("fix", rules=[*ALL_RULES, _RenameValueToPathRule])

    assert (project / "m.py").read_text() == source
    assert (
        "fix withheld: `path` on line 5 would no longer be the import of `os.path`" in outcome.out
    )


def test_fixed_counts_only_what_was_written(project: Path, lint: Lint) -> None:
    (project / "bad.py").write_text("def helper():\n    return 1\n\nprint(helper(), len([]))\n")
    (project / "good.py").write_text("helper()\n")

    outcome = lint("fix", "--select", "LR982", rules=[*ALL_RULES, _HelperToLenRule])

    assert (project / "good.py").read_text() == "len()\n"
    assert "Fixed 1 finding, 2 errors remaining." in outcome.out


def test_diff_shows_no_withheld_fix(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("def helper():\n    return 1\n\nprint(helper(), len([]))\n")

    outcome = lint("fix", "--diff", rules=[*ALL_RULES, _HelperToLenRule])

    assert "+++" not in outcome.out
    assert "Would fix 0 findings" in outcome.out


# -- cross-module consistency -----------------------------------------------------------------


def test_a_renamed_definition_is_renamed_in_every_importer_in_the_same_run(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        'old = "new"',
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def old():\n    pass\n",
            "pkg/b.py": "from pkg.a import old\n\nold()\n",
            "pkg/c.py": "from . import a\n\na.old()\n",
        },
    )

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "pkg" / "a.py").read_text() == "def new():\n    pass\n"
    assert (project / "pkg" / "b.py").read_text() == "from pkg.a import new\n\nnew()\n"
    assert (project / "pkg" / "c.py").read_text() == "from . import a\n\na.new()\n"


def test_a_definition_is_not_renamed_when_an_importer_keeps_the_old_name(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        'old = "new"',
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def old():\n    pass\n\nold()\n",
            "pkg/b.py": "from pkg.a import old  # noqa: LR001\n\nold()\n",
        },
    )

    outcome = lint("fix")

    assert (project / "pkg" / "a.py").read_text() == "def old():\n    pass\n\nold()\n"
    assert "fix withheld: `old` is imported by pkg/b.py, which keeps that name" in outcome.out


def test_fixing_one_file_does_not_rename_what_an_unchecked_file_imports(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        'old = "new"',
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def old():\n    pass\n",
            "pkg/b.py": "from pkg.a import old\n",
        },
    )

    outcome = lint("fix", "pkg/a.py")

    assert (project / "pkg" / "a.py").read_text() == "def old():\n    pass\n"
    assert "`old` is imported by pkg/b.py, which keeps that name" in outcome.out


# -- LR001 with LR002: one invocation reaches the fixed point -----------------------------


def test_renames_and_literals_reach_their_fixed_point_in_one_run(project: Path, lint: Lint) -> None:
    _project(
        project,
        'handoff_occured = "handoff_occurred"',  # noqa: LR001
        {
            "events.py": (
                "from typing import Literal\n\n"
                'EventName = Literal["handoff_occured", "tool_called"]\n'  # noqa: LR001
            ),
            "app.py": (
                "from model import Event\n\n"
                'first = Event(name="handoff_occured")\n'  # noqa: LR001
                'if first.name == "handoff_occured":\n'  # noqa: LR001
                "    pass\n"
            ),
        },
        extra='[tool.lint_rules.literals]\n"Event.name" = "events:EventName"\n',
    )

    first = lint("fix", "--unsafe-fixes", "--select", "LR001,LR002")

    assert first.code == 0, first.out
    assert "handoff_occured" not in (project / "events.py").read_text()  # noqa: LR001
    assert "handoff_occured" not in (project / "app.py").read_text()  # noqa: LR001
    second = lint("fix", "--unsafe-fixes", "--diff", "--select", "LR001,LR002")
    assert second.code == 0, second.out


def test_an_attribute_of_an_outside_module_is_left_when_the_project_defines_the_name(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        'OptionParser = "_OptionParser"',
        {
            "pkg/__init__.py": "",
            "pkg/parser.py": "class OptionParser:\n    pass\n",
            "pkg/cli.py": (
                "import optparse\n\nfrom pkg import parser\n\n"
                "old = optparse.OptionParser()\nnew = parser.OptionParser()\n"
            ),
        },
    )

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "pkg" / "parser.py").read_text() == "class _OptionParser:\n    pass\n"
    assert (
        (project / "pkg" / "cli.py")
        .read_text()
        .endswith("old = optparse.OptionParser()\nnew = parser._OptionParser()\n")
    )


def test_an_attribute_of_a_library_module_is_renamed_when_the_project_does_not_define_it(
    project: Path, lint: Lint
) -> None:
    _project(
        project,
        'get_distribution = "get_dist"',
        {"m.py": "import pkg_resources\n\npkg_resources.get_distribution('x')\n"},
    )

    lint("fix")

    assert (project / "m.py").read_text().endswith("pkg_resources.get_dist('x')\n")


def test_scopes_of_defaults_lambdas_and_comprehensions_are_told_apart(
    project: Path, lint: Lint
) -> None:
    source = """\
        def f(x=hash, key=lambda v: hash(v)):
            return [hash(y) for y in x]

        def g(hash):
            return [hash for _ in range(2)], (lambda: hash)()
        """
    _project(project, 'hash = "unsafe_hash"', {"m.py": source})

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert (project / "m.py").read_text() == textwrap.dedent("""\
        def f(x=hash, key=lambda v: hash(v)):
            return [hash(y) for y in x]

        def g(unsafe_hash):
            return [unsafe_hash for _ in range(2)], (lambda: unsafe_hash)()
        """)
