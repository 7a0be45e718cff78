"""LR001's qualified renames judged by the reference engine, end to end: issue 21's shapes
on small real projects, through ``python -m lint_rules check|fix`` on the real
``ty server``; each renamed project's own code is run afterwards, or the rename is shown
withheld with every unresolved site reported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from lint_rules.codemod.references import ENGINE_VARIABLE, EngineMissing, ty_command


@pytest.fixture(autouse=True)
def _engine() -> None:
    try:
        ty_command()
    except EngineMissing as error:
        pytest.skip(str(error))


@dataclass
class Run:
    code: int
    out: str
    err: str


def _project(root: Path, renames: dict[str, str], files: dict[str, str]) -> Path:
    entries = "".join(f'"{old}" = "{new}"\n' for old, new in renames.items())
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0"\n\n'
        f'[tool.lint_rules]\nselect = ["LR001"]\n\n[tool.lint_rules.renames]\n{entries}',
        encoding="utf-8",
    )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def _lint(root: Path, *arguments: str, env: dict[str, str] | None = None) -> Run:
    done = subprocess.run(
        [sys.executable, "-m", "lint_rules", *arguments, "--no-cache"]
        if arguments[0] == "check"
        else [sys.executable, "-m", "lint_rules", *arguments],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _python(root: Path, code: str) -> str:
    """What the project's own code prints (or the last line of its traceback)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def _texts(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*.py"))
    }


_FIELDS = """
    class Field:
        def __init__(self, *, missing=None):
            self.value = missing


    class String(Field):
        pass


    class Number(Field):
        def __init__(self, *, strict=False, **kwargs):
            self.strict = strict
            super().__init__(**kwargs)


    class Integer(Number):
        pass


    def other(missing=None):
        return missing
    """
_SCHEMA = """
    import random

    from pkg import fields
    from pkg.fields import Field, Integer

    FieldClass = fields.String if random.random() > 2 else Field
    VALUES = [
        Field(missing=1).value,
        fields.String(missing=2).value,
        Integer(missing=3, strict=True).value,
        FieldClass(missing=4).value,
        fields.other(missing=5),
    ]
    """
_VALUES = "import pkg.schema; print(pkg.schema.VALUES)"


@pytest.mark.parametrize("spelling", ["Field.__init__(missing)", "Field(missing)"])
def test_a_constructor_keyword_is_renamed_whole_whichever_spelling(
    tmp_path: Path, spelling: str
) -> None:
    root = _project(
        tmp_path,
        {f"pkg.fields:{spelling}": "load_default"},
        {"pkg/__init__.py": "", "pkg/fields.py": _FIELDS, "pkg/schema.py": _SCHEMA},
    )
    assert _python(root, _VALUES) == "[1, 2, 3, 4, 5]"

    fixed = _lint(root, "fix")

    assert fixed.code == 0, fixed.out
    assert "0 remaining" in fixed.out
    texts = _texts(root)
    # The parameter, its use, and every call: the class, a subclass, a subclass whose
    # `__init__` forwards `**kwargs`, a class held in a variable; `other` is left alone.
    assert texts["pkg/fields.py"].count("load_default") == 2
    assert "def other(missing=None):\n    return missing" in texts["pkg/fields.py"]
    assert texts["pkg/schema.py"].count("load_default=") == 4
    assert "fields.other(missing=5)" in texts["pkg/schema.py"]
    assert _python(root, _VALUES) == "[1, 2, 3, 4, 5]"  # the behaviour is unchanged
    after = _lint(root, "check")
    assert (after.code, after.out) == (0, "All checks passed!\n")


_READS_KWARGS = """
    class Field:
        def __init__(self, *, missing=None):
            self.value = missing


    class Integer(Field):
        def __init__(self, **kwargs):
            self.options = dict(kwargs)
            super().__init__(**kwargs)
    """
_READS_SCHEMA = """
    from pkg.fields import Field, Integer

    VALUES = [Field(missing=1).value, Integer(missing=2).value]
    """


def test_an_unknown_site_withholds_the_rename_and_is_reported_with_its_reason(
    tmp_path: Path,
) -> None:
    root = _project(
        tmp_path,
        {"pkg.fields:Field.__init__(missing)": "load_default"},
        {"pkg/__init__.py": "", "pkg/fields.py": _READS_KWARGS, "pkg/schema.py": _READS_SCHEMA},
    )
    before = _texts(root)

    fixed = _lint(root, "fix")

    assert fixed.code == 1
    assert _texts(root) == before  # nothing renamed: not the parameter, not one call
    assert (
        "pkg/schema.py:3:43: LR001 `pkg.fields:Field.__init__(missing)` was renamed to "
        "`load_default`; not renamed: forwarded through `**kwargs` of `Integer.__init__`, "
        "which may read, change or drop it; rename withheld: 1 occurrence not known to "
        "be the target's (1 file)\n"
    ) in fixed.out
    assert "Fixed 0 findings, 4 errors remaining.\n" in fixed.out
    assert "3 unsafe fixes available" in fixed.out
    assert (
        "1 rename withheld (not every occurrence is known to be the target's): "
        "`pkg.fields:Field.__init__(missing)`.\n"
    ) in fixed.out
    assert _python(root, _VALUES) == "[1, 2]"

    unsafe = _lint(root, "fix", "--unsafe-fixes")

    assert unsafe.code == 1
    assert "Fixed 3 findings, 1 error remaining." in unsafe.out
    texts = _texts(root)
    assert "def __init__(self, *, load_default=None):" in texts["pkg/fields.py"]
    assert "Field(load_default=1).value, Integer(missing=2).value" in texts["pkg/schema.py"]
    after = _lint(root, "check")
    assert after.code == 1
    (line,) = [line for line in after.out.splitlines() if "LR001" in line]
    assert line.startswith("pkg/schema.py:3:48: LR001 ")  # exactly what was not renamed
    assert "Found 1 error." in after.out


def test_a_class_attribute_set_in_a_subclass_is_renamed_with_every_read(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"pkg.fields:Field.missing": "load_default"},
        {
            "pkg/__init__.py": "",
            "pkg/fields.py": """
                class Field:
                    missing = None

                    def load(self, value):
                        return self.missing if value is None else value


                class Constant(Field):
                    def __init__(self, constant):
                        self.missing = constant


                class Other:
                    missing = "other"
                """,
            "pkg/use.py": """
                from pkg.fields import Constant, Field, Other

                VALUES = [Field().load(None), Constant(3).load(None), Other.missing]
                """,
        },
    )
    code = "import pkg.use; print(pkg.use.VALUES)"
    assert _python(root, code) == "[None, 3, 'other']"

    fixed = _lint(root, "fix")

    assert (fixed.code, fixed.out) == (0, "Fixed 3 findings, 0 remaining.\n")
    assert "self.load_default = constant" in _texts(root)["pkg/fields.py"]
    assert 'missing = "other"' in _texts(root)["pkg/fields.py"]
    assert _python(root, code) == "[None, 3, 'other']"


def test_an_attribute_read_in_a_format_template_withholds_the_rename(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"pkg.fields:Field.missing": "load_default"},
        {
            "pkg/__init__.py": "",
            "pkg/fields.py": """
                class Field:
                    missing = None

                    def __repr__(self):
                        return "<Field(missing={self.missing!r})>".format(self=self)
                """,
        },
    )
    before = _texts(root)

    fixed = _lint(root, "fix")

    assert fixed.code == 1
    assert _texts(root) == before
    assert "pkg/fields.py:5:38: LR001 " in fixed.out
    assert "a format string's replacement field" in fixed.out
    assert _python(root, "import pkg.fields; print(repr(pkg.fields.Field()))") == (
        "<Field(missing=None)>"
    )


def _send_files(root: Path, forward: str) -> Path:
    return _project(
        root,
        {"pkg.helpers:send_file(cache_timeout)": "max_age"},
        {
            "pkg/__init__.py": "from pkg.helpers import send_file, send_from_directory\n",
            "pkg/helpers.py": f"""
                def send_file(path, *, cache_timeout=None, conditional=False):
                    return path, cache_timeout, conditional


                def send_from_directory(directory, path, **options):
                    {forward}
                    return send_file(f"{{directory}}/{{path}}", **options)
                """,
            "app.py": """
                import pkg
                from pkg import send_file as download

                VALUES = [
                    pkg.send_file("a", cache_timeout=1),
                    download("b", cache_timeout=2),
                    pkg.send_from_directory("static", "d", cache_timeout=3),
                ]
                """,
        },
    )


def test_a_keyword_through_a_re_export_and_a_function_forwarding_options(
    tmp_path: Path,
) -> None:
    root = _send_files(tmp_path, 'options.setdefault("conditional", True)')
    code = "import app; print(app.VALUES)"
    before = _python(root, code)
    assert before == "[('a', 1, False), ('b', 2, False), ('static/d', 3, True)]"

    fixed = _lint(root, "fix")

    assert (fixed.code, fixed.out) == (0, "Fixed 5 findings, 0 remaining.\n")
    assert _texts(root)["app.py"].count("max_age=") == 3  # through the re-export and the forwarder
    assert _python(root, code) == before


def test_a_forwarder_that_reads_the_key_withholds_the_rename(tmp_path: Path) -> None:
    root = _send_files(tmp_path, 'options.setdefault("cache_timeout", 60)')
    code = "import app; print(app.VALUES)"
    before = _python(root, code)

    fixed = _lint(root, "fix")

    assert fixed.code == 1
    assert "app.py:7:44: LR001 " in fixed.out
    assert "pkg/helpers.py:6:25: LR001 " in fixed.out  # the key the forwarder reads
    assert "not renamed: read from a `**kwargs` dictionary" in fixed.out
    assert "1 rename withheld" in fixed.out
    assert _python(root, code) == before  # withheld: nothing renamed, nothing broken
    assert "cache_timeout=1" in _texts(root)["app.py"]


def test_a_key_read_from_forwarded_options_is_reported(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"pkg.api:format(keyword_case)": "keyword_style"},
        {
            "pkg/__init__.py": "from pkg.api import format\n",
            "pkg/api.py": """
                def validate(options):
                    return options.get("keyword_case", "lower")


                def format(sql, keyword_case=None, **options):
                    options["keyword_case"] = keyword_case or validate(options)
                    return getattr(sql, options["keyword_case"])()
                """,
            "use.py": """
                import pkg

                print(pkg.format("Select", keyword_case="upper"))
                """,
        },
    )
    before = _texts(root)

    checked = _lint(root, "check")
    fixed = _lint(root, "fix")

    assert checked.code == fixed.code == 1
    assert _texts(root) == before
    unknown = [line for line in fixed.out.splitlines() if "not renamed" in line]
    assert [line.split(": LR001")[0] for line in unknown] == [
        "pkg/api.py:2:25",
        "pkg/api.py:6:14",
        "pkg/api.py:7:34",
    ]
    assert all("read from a `**kwargs` dictionary" in line for line in unknown)
    assert _python(root, "import use") == "SELECT"


def test_a_module_level_name_is_renamed_in_all_and_star_imports_keep_working(
    tmp_path: Path,
) -> None:
    root = _project(
        tmp_path,
        {"pkg.version:parse": "parse_version"},
        {
            "pkg/__init__.py": "from pkg.version import parse\n",
            "pkg/version.py": """
                __all__ = ["Version", "parse"]


                class Version:
                    def __init__(self, text):
                        self.parts = tuple(int(part) for part in text.split("."))


                def parse(text):
                    return Version(text)
                """,
            "pkg/other.py": """
                __all__ = ["parse"]


                def parse():
                    return "other"
                """,
            "use.py": """
                import pkg
                from pkg.other import *  # noqa: F403
                from pkg.version import *  # noqa: F403

                print(parse("1.2").parts, pkg.parse("3.4").parts)
                """,
        },
    )
    assert _python(root, "import use") == "(1, 2) (3, 4)"

    fixed = _lint(root, "fix")

    assert fixed.code == 0, fixed.out
    texts = _texts(root)
    assert '__all__ = ["Version", "parse_version"]' in texts["pkg/version.py"]
    assert texts["pkg/other.py"].startswith('__all__ = ["parse"]')  # another module's
    assert _python(root, "import use") == "(1, 2) (3, 4)"


def test_check_never_starts_the_engine_without_a_target_spelling(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"pkg.fields:Field.__init__(missing)": "load_default"},
        {"pkg/__init__.py": "", "pkg/fields.py": "class Field:\n    pass\n"},
    )
    absent = {ENGINE_VARIABLE: str(tmp_path / "no-such-engine")}  # starting it would fail

    clean = _lint(root, "check", env=absent)

    assert (clean.code, clean.out) == (0, "All checks passed!\n")

    (root / "pkg/schema.py").write_text("from pkg.fields import Field\nField(missing=1)\n")
    present = _lint(root, "check", env=absent)

    assert present.code == 1  # the same variable, honoured: the engine was asked for
    assert "not renamed: the reference engine could not run" in present.out


def test_a_bare_rename_leaves_methods_of_other_types_alone(tmp_path: Path) -> None:
    root = tmp_path
    (root / "pyproject.toml").write_text(
        '[tool.lint_rules]\nselect = ["LR001"]\n\n'
        '[tool.lint_rules.renames]\nsplit = "split_statements"\n',
        encoding="utf-8",
    )
    for name, text in {
        "pkg/__init__.py": "from pkg.lexer import split\n",
        "pkg/lexer.py": """
            import re

            SPLIT_REGEX = re.compile(r";")


            def split(sql):
                return [part for part in SPLIT_REGEX.split(sql) if part]


            def words(sql):
                return str(sql).split(" ")


            def fields(line):
                return line.split(",")
            """,
        "use.py": """
            import pkg
            from pkg import lexer

            print(pkg.split("a;b"), lexer.split("c;d"), lexer.words("e f"), lexer.fields("g,h"))
            """,
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    before = _python(root, "import use")

    fixed = _lint(root, "fix")

    texts = _texts(root)
    assert "SPLIT_REGEX.split(sql)" in texts["pkg/lexer.py"]  # `re.Pattern.split`
    assert 'str(sql).split(" ")' in texts["pkg/lexer.py"]  # `str.split`
    assert "def split_statements(sql):" in texts["pkg/lexer.py"]
    assert 'pkg.split_statements("a;b"), lexer.split_statements("c;d")' in texts["use.py"]
    # `line` has no type: its `.split` is reported, never renamed as safe.
    assert fixed.code == 1
    assert (
        "pkg/lexer.py:15:17: LR001 `split` was renamed to `split_statements`; not fixed: "
        "the receiver's type is not known\n"
    ) in fixed.out
    assert _python(root, "import use") == before
    # Once renamed, the project defines the new name: `str.split` is still left alone,
    # `check` reports exactly what was not renamed, and a second `fix` changes nothing.
    after = _lint(root, "check")
    assert [line for line in after.out.splitlines() if "LR001" in line] == [
        "pkg/lexer.py:15:17: LR001 `split` was renamed to `split_statements`; not fixed: "
        "the receiver's type is not known"
    ]
    again = _lint(root, "fix")
    assert again.code == 1
    assert _texts(root) == texts


def test_worker_processes_share_one_engine_run(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/fields.py": _FIELDS, "pkg/schema.py": _SCHEMA}
    files.update({f"pkg/use_{n}.py": "from pkg.fields import Field\n" for n in range(20)})
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", {"pkg.fields:Field(missing)": "load_default"}, files)
    log = tmp_path / "starts.log"
    wrapper = tmp_path / "engine.sh"
    binary = ty_command()[0]
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{binary}" "$@"\n')
    wrapper.chmod(0o755)

    parallel = _lint(root, "check", "--jobs", "2", env={ENGINE_VARIABLE: f"{wrapper} server"})

    assert parallel.code == 1
    assert "[*] 6 fixable" in parallel.out  # 2 in fields.py, 4 in schema.py
    assert log.read_text().splitlines() == ["start"]  # built before the workers, once


def test_check_counts_a_withheld_rename_as_not_fixable_as_fix_does(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"pkg.fields:Field.__init__(missing)": "load_default"},
        {"pkg/__init__.py": "", "pkg/fields.py": _READS_KWARGS, "pkg/schema.py": _READS_SCHEMA},
    )

    checked = _lint(root, "check")
    fixed = _lint(root, "fix")

    # No finding of a withheld rename is fixable by `fix`; its known part waits for
    # --unsafe-fixes; both commands say so and count alike.
    assert "[*]" not in checked.out
    assert checked.out.endswith(
        "Found 4 errors.\n3 unsafe fixes available with `lint-rules fix --unsafe-fixes`.\n"
        "1 rename withheld (not every occurrence is known to be the target's): "
        "`pkg.fields:Field.__init__(missing)`.\n"
    )
    assert "Fixed 0 findings, 4 errors remaining.\n" in fixed.out
    assert "3 unsafe fixes available" in fixed.out


def test_a_bare_rename_of_a_pydantic_field_is_withheld_everywhere(tmp_path: Path) -> None:
    """mcp's shape (issue 21): ``isError`` is a field of a pydantic model, so its name is
    the protocol's JSON key; renaming it in Python style changes what is sent and parsed
    (a peer's ``{"isError": true}`` lands in the model's extras). No site is renamed as
    safe, each says why; a field with an alias keeps its key and is renamed."""
    root = _project(
        tmp_path,
        {"isError": "is_error", "mimeType": "mime_type"},
        {
            "pkg/__init__.py": "",
            "pkg/types.py": """
                from pydantic import BaseModel, ConfigDict, Field


                class Result(BaseModel):
                    model_config = ConfigDict(extra="allow")


                class CallToolResult(Result):
                    isError: bool = False
                    mimeType: str = Field("text/plain", alias="mimeType")
                """,
            "pkg/server.py": """
                from pkg.types import CallToolResult


                def fail():
                    result = CallToolResult(isError=True)
                    return result.isError, result.mimeType
                """,
        },
    )
    before = _texts(root)

    check = _lint(root, "check")

    lines = [line for line in check.out.splitlines() if "LR001 `isError`" in line]
    assert len(lines) == 3, check.out
    assert all("not fixed: rename withheld: `CallToolResult.isError`" in line for line in lines)
    assert "[*]" not in "".join(lines)
    fix = _lint(root, "fix")
    after = _texts(root)
    assert "isError" in after["pkg/types.py"], fix.out
    assert "isError" in after["pkg/server.py"], fix.out
    assert after["pkg/types.py"].count("mime_type") == 1  # the aliased field is renamed
    assert "result.mime_type" in after["pkg/server.py"]
    assert before["pkg/types.py"].count('alias="mimeType"') == 1
    assert 'alias="mimeType"' in after["pkg/types.py"]


def test_a_bare_rename_leaves_a_module_of_that_name_from_outside_alone(tmp_path: Path) -> None:
    """pydantic's shape: ``copy = "model_copy"`` (``BaseModel.copy``) must not rename the
    stdlib's ``import copy``, ``copy.deepcopy(...)`` or ``from copy import deepcopy``."""
    root = _project(
        tmp_path,
        {"copy": "model_copy"},
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """
                import copy
                from copy import deepcopy


                class Model:
                    def __init__(self, values):
                        self.values = values

                    def copy(self):
                        return Model(copy.copy(self.values))

                    def clone(self):
                        return Model(deepcopy(self.values)).copy()
                """,
        },
    )

    _lint(root, "fix")

    after = _texts(root)["pkg/model.py"]
    assert after.startswith("import copy\nfrom copy import deepcopy\n"), after
    assert "def model_copy(self):" in after
    assert "Model(copy.copy(self.values))" in after
    assert ".model_copy()" in after
    code = "from pkg.model import Model; print(Model([1]).clone().values)"
    assert _python(root, code) == "[1]"


def test_keys_read_in_another_module_from_forwarded_options_are_findings(tmp_path: Path) -> None:
    """sqlparse's shape: after ``check``, the reads in ``formatter.py`` (which names the
    key only as strings) are findings too, so the summary's count is what is printed."""
    root = _project(
        tmp_path,
        {"pkg:format(keyword_case)": "keyword_style"},
        {
            "pkg/__init__.py": """
                from pkg import formatter


                def format(sql, **options):
                    options = formatter.validate(options)
                    return formatter.build(sql, options)
                """,
            "pkg/formatter.py": """
                def validate(options):
                    return options if options.get("keyword_case") != "bad" else {}


                def build(sql, options):
                    return sql.upper() if options.get("keyword_case") == "upper" else sql
                """,
            "app.py": """
                import pkg

                print(pkg.format("select 1", keyword_case="upper"))
                """,
        },
    )

    check = _lint(root, "check")

    found = sorted(line.split(": LR001")[0] for line in check.out.splitlines() if ": LR001" in line)
    assert found == ["app.py:3:30", "pkg/formatter.py:2:36", "pkg/formatter.py:6:40"], check.out
    assert "read from `**options` of `format`" in check.out
    assert "3 occurrences not known to be the target's" in check.out


_HELD_MODULE = '''
    import textwrap
    import types

    from pkg import validate_arguments


    def create_module(source):
        module = types.ModuleType("held")
        exec(textwrap.dedent(source), module.__dict__)
        return module


    HELD = create_module(
        """
        from pkg import validate_arguments

        @validate_arguments
        def foo(a):
            return a * 2
        """
    )
    NAMES = ["validate_arguments", "use validate_arguments here"]
    print(HELD.foo(2), validate_arguments(len)("ab"))
    '''


def test_python_source_held_in_a_string_withholds_the_rename(tmp_path: Path) -> None:
    """pydantic 1.10's shape (issue 21): its tests build modules from strings of Python
    source (``create_module('from pydantic import validate_arguments ...')``), which no
    reference engine reads. Renaming the function and not the string breaks them, so the
    string's spellings are unknown sites: the safe rename is withheld, each is reported,
    and after ``--unsafe-fixes`` (the code renamed) they still are, never left stale in
    silence. A string that is only the name, or prose, is left alone."""
    root = _project(
        tmp_path,
        {"pkg.decorator:validate_arguments": "validate_call"},
        {
            "pkg/__init__.py": """
                from pkg.decorator import validate_arguments

                __all__ = ["validate_arguments"]
                """,
            "pkg/decorator.py": """
                def validate_arguments(function):
                    return function
                """,
            "use.py": _HELD_MODULE,
        },
    )
    before = _texts(root)
    assert _python(root, "import use") == "4 2"

    fixed = _lint(root, "fix")

    assert fixed.code == 1, fixed.out
    assert _texts(root) == before  # withheld: not one site renamed
    reason = "Python source in a string names the target"
    held = [line for line in fixed.out.splitlines() if reason in line]
    assert [line.split(": LR001")[0] for line in held] == ["use.py:15:21", "use.py:17:6"]
    assert "1 rename withheld" in fixed.out
    assert _python(root, "import use") == "4 2"

    unsafe = _lint(root, "fix", "--unsafe-fixes")

    assert unsafe.code == 1, unsafe.out
    texts = _texts(root)
    assert "def validate_call(function):" in texts["pkg/decorator.py"]
    assert "from pkg import validate_call\n" in texts["use.py"]
    assert '"validate_arguments", "use validate_arguments here"' in texts["use.py"]
    after = _lint(root, "check")
    assert [line.split(": LR001")[0] for line in after.out.splitlines() if "LR001" in line] == [
        "use.py:15:21",
        "use.py:17:6",
    ]
    assert reason in after.out


def test_a_key_unpacked_into_the_target_through_a_helper_withholds_the_rename(
    tmp_path: Path,
) -> None:
    """A helper builds the keywords as a dictionary and returns it; its caller unpacks it
    into the target (``Retry(**retry_options())``). The key is no keyword any engine
    sees: renaming the parameter alone breaks the call, so the key is reported and the
    rename withheld, never skipped in silence."""
    root = _project(
        tmp_path,
        {"pkg.retry:Retry.__init__(method_whitelist)": "allowed_methods"},
        {
            "pkg/__init__.py": "",
            "pkg/retry.py": """
                class Retry:
                    def __init__(self, total=3, method_whitelist=None):
                        self.methods = method_whitelist
                """,
            "pkg/defaults.py": """
                def retry_options():
                    return {"total": 2, "method_whitelist": ["GET"]}
                """,
            "use.py": """
                from pkg.defaults import retry_options
                from pkg.retry import Retry

                print(Retry(**retry_options()).methods, Retry(method_whitelist=["PUT"]).methods)
                """,
        },
    )
    before = _texts(root)
    assert _python(root, "import use") == "['GET'] ['PUT']"

    fixed = _lint(root, "fix")

    assert fixed.code == 1, fixed.out
    assert _texts(root) == before
    (line,) = [line for line in fixed.out.splitlines() if line.startswith("pkg/defaults.py")]
    assert line.startswith("pkg/defaults.py:2:26: LR001 ")
    assert "`retry_options()` returns, unpacked with `**` into a call" in line
    assert "1 rename withheld" in fixed.out
    assert _python(root, "import use") == "['GET'] ['PUT']"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_holding_only_other_things_occurrences_is_not_parsed_for_lr001(
    tmp_path: Path, jobs: int
) -> None:
    """Once the plan has decided every occurrence of a file another thing's (`str.split` for a
    module's `split`), LR001 does not parse that file: the same findings as with every file
    parsed (`use_prefilter=False`), and the result still depends on the project's files
    (`reads_project`), so that an edit elsewhere checks it again."""
    from lint_rules.config import load_config
    from lint_rules.engine.results import RunOptions
    from lint_rules.engine.run import run
    from lint_rules.rules.stale_name import StaleNameRule

    files = {
        "pkg/__init__.py": "",
        "pkg/api.py": "def split(text):\n    return text.split(';')\n",
        "pkg/uses.py": "from pkg.api import split\n\nparts = split('a;b')\n",
    }
    files.update({f"pkg/other{n}.py": f"words{n} = str(1).split(' ')\n" for n in range(16)})
    root = _project(tmp_path, {"pkg.api:split": "split_statements"}, files)
    config = load_config(root, [StaleNameRule])

    quick = run([root], config, [StaleNameRule], RunOptions(use_cache=False, jobs=jobs))
    every = run([root], config, [StaleNameRule], RunOptions(use_cache=False, use_prefilter=False))

    parsed = {r.path.relative_to(root).as_posix(): r.parsed for r in quick.files}
    assert {name for name, was in parsed.items() if not was} == {
        f"pkg/other{n}.py" for n in range(16)
    } | {"pkg/__init__.py"}
    assert [(r.path, r.findings) for r in quick.files] == [
        (r.path, r.findings) for r in every.files
    ]
    assert [r.path.name for r in quick.files if r.findings] == ["api.py", "uses.py"]
    assert all(r.reads_project for r in quick.files if r.path.name.startswith("other"))
