"""Every occurrence of a rename target's spelling is the target's, another thing's, or
unknown with a reason: issue 21's shapes, on the real ``ty server`` (no mocks)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lint_rules.codemod.references import (
    OTHER,
    TARGET,
    UNKNOWN,
    EngineMissing,
    LanguageServer,
    Location,
    Plan,
    RenameTarget,
    classify,
    definition_site,
    plan,
    rename_edits,
    ty_command,
)


@pytest.fixture(scope="module")
def command() -> list[str]:
    try:
        return ty_command()
    except EngineMissing as error:
        pytest.skip(str(error))


def _verdicts(
    command: list[str],
    root: Path,
    files: dict[str, str],
    module: str,
    owner: str,
    old: str,
    *,
    keyword: bool = False,
    member: bool = False,
) -> dict[tuple[str, int, str], tuple[str, str]]:
    """(file, line, kind) -> (verdict, reason) of every occurrence of ``old``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    module_path = (root / module).resolve()
    start = definition_site(module_path, owner, old, keyword)
    assert start is not None, "the target's definition is found in its module"
    with LanguageServer(command, root) as server:
        found = classify(
            server,
            sorted(root.rglob("*.py")),
            old,
            Location(module_path, start, start),
            member,
            module_attribute=not owner and not keyword,
            keyword=keyword,
        )
    resolved = root.resolve()
    verdicts: dict[tuple[str, int, str], tuple[str, str]] = {}
    for o in sorted(found):  # several on one line: verdicts in column order, comma-separated
        key = (o.path.relative_to(resolved).as_posix(), o.start.line, o.kind)
        before = verdicts.get(key)
        verdicts[key] = (
            (o.verdict, o.reason) if before is None else (f"{before[0]},{o.verdict}", before[1])
        )
    return verdicts


def _only(
    verdicts: dict[tuple[str, int, str], tuple[str, str]],
) -> dict[tuple[str, int, str], str]:
    return {site: verdict for site, (verdict, _) in verdicts.items()}


def test_a_constructor_keyword_handed_on_by_a_kwargs_subclass_is_the_targets(
    command: list[str], tmp_path: Path
) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/fields.py": """
                class Field:
                    def __init__(self, *, missing=None):
                        self.value = missing


                class Integer(Field):
                    def __init__(self, *, strict=False, **kwargs):
                        super().__init__(**kwargs)


                class String(Field):
                    pass


                def other(missing=None):
                    return missing
                """,
            "pkg/schema.py": """
                import random

                from pkg.fields import Field, Integer, String, other

                a = Field(missing=1)
                b = Integer(missing=2)
                c = String(missing="x")
                FieldClass = Integer if random.random() > 0.5 else Field
                d = FieldClass(missing=None)
                e = other(missing=3)
                """,
        },
        "pkg/fields.py",
        "Field",
        "missing",
        keyword=True,
    )
    assert _only(verdicts) == {
        ("pkg/fields.py", 2, "parameter"): TARGET,
        ("pkg/fields.py", 3, "name"): TARGET,
        ("pkg/fields.py", 15, "parameter"): OTHER,
        ("pkg/fields.py", 16, "name"): OTHER,
        ("pkg/schema.py", 5, "keyword"): TARGET,
        ("pkg/schema.py", 6, "keyword"): TARGET,  # `Integer.__init__` hands it to `super()`
        ("pkg/schema.py", 7, "keyword"): TARGET,
        ("pkg/schema.py", 9, "keyword"): TARGET,
        ("pkg/schema.py", 10, "keyword"): OTHER,
    }


def test_a_class_attribute_assigned_in_a_subclass_is_the_target(
    command: list[str], tmp_path: Path
) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
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
                    missing = 0
                """,
            "pkg/use.py": """
                from pkg.fields import Constant, Field, Other


                def default_of(field: Field, other: Other):
                    return field.missing, other.missing, getattr(field, "missing")
                """,
        },
        "pkg/fields.py",
        "Field",
        "missing",
        member=True,
    )
    assert _only(verdicts) == {
        ("pkg/fields.py", 2, "name"): TARGET,
        ("pkg/fields.py", 5, "attribute"): TARGET,
        ("pkg/fields.py", 10, "attribute"): TARGET,
        ("pkg/fields.py", 14, "name"): OTHER,
        ("pkg/use.py", 5, "attribute"): f"{TARGET},{OTHER}",
        ("pkg/use.py", 5, "getattr"): UNKNOWN,
    }


def test_keywords_through_a_re_export_and_a_forwarding_function(
    command: list[str], tmp_path: Path
) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.helpers import send_file, send_from_directory\n",
            "pkg/helpers.py": """
                def send_file(path, *, cache_timeout=None):
                    return path, cache_timeout


                def send_from_directory(directory, path, **options):
                    return send_file(f"{directory}/{path}", **options)
                """,
            "app.py": """
                import pkg
                from pkg import send_file as download

                pkg.send_file("a", cache_timeout=1)
                download("b", cache_timeout=2)
                pkg.send_from_directory("static", "d", cache_timeout=3)
                """,
        },
        "pkg/helpers.py",
        "send_file",
        "cache_timeout",
        keyword=True,
    )
    assert _only(verdicts) == {
        ("pkg/helpers.py", 1, "parameter"): TARGET,
        ("pkg/helpers.py", 2, "name"): TARGET,
        ("app.py", 4, "keyword"): TARGET,
        ("app.py", 5, "keyword"): TARGET,
        ("app.py", 6, "keyword"): TARGET,  # `send_from_directory` passes `**options` on
    }


def test_keys_read_from_a_kwargs_dictionary_are_unknown(command: list[str], tmp_path: Path) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/formatter.py": """
                def validate_options(options):
                    return options.get("keyword_case")


                def format(sql, keyword_case=None, **options):
                    if options["keyword_case"] or validate_options(options):
                        return sql
                    return {"keyword_case": keyword_case}
                """,
        },
        "pkg/formatter.py",
        "format",
        "keyword_case",
        keyword=True,
    )
    assert _only(verdicts) == {
        ("pkg/formatter.py", 2, "options"): UNKNOWN,
        ("pkg/formatter.py", 5, "parameter"): TARGET,
        ("pkg/formatter.py", 6, "options"): UNKNOWN,
        ("pkg/formatter.py", 8, "name"): TARGET,  # the dict key is a value: no occurrence
    }
    assert "`**kwargs`" in verdicts["pkg/formatter.py", 2, "options"][1]


def test_an_all_entry_follows_its_modules_binding(command: list[str], tmp_path: Path) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/version.py": """
                __all__ = ["Version", "parse"]


                class Version:
                    pass


                def parse(text):
                    return Version()
                """,
            "pkg/other.py": """
                __all__ = ["parse"]


                def parse():
                    return 0
                """,
            "use.py": """
                from pkg.version import *

                print(parse("1.0"))
                """,
        },
        "pkg/version.py",
        "",
        "parse",
    )
    assert _only(verdicts) == {
        ("pkg/version.py", 1, "__all__"): TARGET,
        ("pkg/version.py", 8, "definition"): TARGET,
        ("pkg/other.py", 1, "__all__"): OTHER,
        ("pkg/other.py", 4, "definition"): OTHER,
        ("use.py", 3, "name"): TARGET,
    }


def test_a_function_named_like_a_str_method_leaves_the_method_alone(
    command: list[str], tmp_path: Path
) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/lexer.py": """
                import re

                SPLIT_REGEX = re.compile(r";")


                def split(sql):
                    return [part for part in SPLIT_REGEX.split(sql) if part]


                def tokens(sql):
                    return str(sql).split(" ")


                def fields(line):
                    return line.split(",")  # an untyped receiver, but not a module
                """,
            "use.py": """
                from pkg import lexer
                from pkg.lexer import split

                print(split("a;b"), lexer.split("c;d"), "x y".split())
                """,
        },
        "pkg/lexer.py",
        "",
        "split",
    )
    assert _only(verdicts) == {
        ("pkg/lexer.py", 6, "definition"): TARGET,
        ("pkg/lexer.py", 7, "attribute"): OTHER,
        ("pkg/lexer.py", 11, "attribute"): OTHER,
        ("pkg/lexer.py", 15, "attribute"): OTHER,
        ("use.py", 2, "import"): TARGET,
        ("use.py", 4, "name"): TARGET,
        ("use.py", 4, "attribute"): f"{TARGET},{OTHER}",
    }


def test_a_field_that_is_also_a_wire_key_renames_no_string(
    command: list[str], tmp_path: Path
) -> None:
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/types.py": """
                from dataclasses import dataclass


                @dataclass
                class CallToolResult:
                    isError: bool = False

                    def to_wire(self):
                        return {"isError": self.isError}

                    @classmethod
                    def from_wire(cls, data):
                        return cls(isError=data.get("isError", False))
                """,
        },
        "pkg/types.py",
        "CallToolResult",
        "isError",
        member=True,
    )
    assert _only(verdicts) == {
        ("pkg/types.py", 6, "name"): TARGET,
        ("pkg/types.py", 9, "attribute"): TARGET,
        ("pkg/types.py", 13, "keyword"): TARGET,
    }


def test_occurrences_skip_files_without_the_spelling(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def (:\n", encoding="utf-8")  # never parsed
    verdicts = _verdicts(
        command,
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": "def emit():\n    return 1\n"},
        "pkg/a.py",
        "",
        "emit",
    )
    assert _only(verdicts) == {("pkg/a.py", 1, "definition"): TARGET}


def test_a_plan_without_any_spelling_in_the_files_never_starts_the_engine(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text("def emit():\n    return 1\n", encoding="utf-8")
    target = RenameTarget(tmp_path / "a.py", "", "publish")
    never = [str(tmp_path / "no-such-engine")]  # starting it would raise EngineMissing
    result = plan(tmp_path, [tmp_path / "a.py"], [target], command=never)
    assert result.occurrences == {}
    assert result.withheld == set()


def test_a_plan_answers_every_target_and_withholds_the_incomplete_ones(
    command: list[str], tmp_path: Path
) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/api.py": """
            def send(path, *, cache_timeout=None, **options):
                return path, cache_timeout, options.get("attachment_filename")


            def parse(text):
                return text
            """,
        "app.py": """
            from pkg.api import parse, send

            send("a", cache_timeout=1, attachment_filename="a")
            print(parse("1"), "a b".split())
            """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    api = tmp_path / "pkg/api.py"
    timeout = RenameTarget(api, "send", "cache_timeout", keyword=True)
    attachment = RenameTarget(api, "send", "attachment_filename", keyword=True)
    parse = RenameTarget(api, "", "parse")
    split = RenameTarget(api, "", "split")  # not defined there: `str.split` is something else
    result = plan(
        tmp_path, sorted(tmp_path.rglob("*.py")), [timeout, attachment, parse, split], command
    )
    assert [o.verdict for o in result.occurrences[timeout]] == [TARGET, TARGET, TARGET]
    assert [o.verdict for o in result.occurrences[parse]] == [TARGET, TARGET, TARGET]
    assert {o.verdict for o in result.occurrences[attachment]} == {UNKNOWN}
    assert {o.kind for o in result.unknown(attachment)} == {"options", "keyword"}
    assert [o.verdict for o in result.occurrences[split]] == [OTHER]
    assert result.missing == {attachment, split}  # `send` has no such parameter
    assert result.withheld == {attachment}


_FIELDS = """
    class Field:
        def __init__(self, *, missing=None):
            self.value = missing


    class String(Field):
        pass
    """
_SCHEMA = """
    from pkg import fields

    FieldClass = fields.String
    VALUES = [fields.Field(missing=1).value, FieldClass(missing=2).value]
    """


def _project(root: Path, files: dict[str, str]) -> list[Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return sorted(root.rglob("*.py"))


def _values(root: Path) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import pkg.schema; print(pkg.schema.VALUES)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def test_a_complete_keyword_rename_renames_the_parameter_and_every_call(
    command: list[str], tmp_path: Path
) -> None:
    files = _project(
        tmp_path, {"pkg/__init__.py": "", "pkg/fields.py": _FIELDS, "pkg/schema.py": _SCHEMA}
    )
    target = RenameTarget(tmp_path / "pkg/fields.py", "Field", "missing", keyword=True)
    result = plan(tmp_path, files, [target], command)
    assert result.withheld == set()
    changed = rename_edits(result, target, "load_default")
    assert sorted(path.name for path in changed) == ["fields.py", "schema.py"]
    for path, text in changed.items():
        path.write_text(text, encoding="utf-8")
    assert _values(tmp_path) == "[1, 2]"  # the behaviour is unchanged
    assert "missing" not in (tmp_path / "pkg/schema.py").read_text(encoding="utf-8")


def test_an_incomplete_rename_is_withheld_and_unsafe_renames_only_the_known_part(
    command: list[str], tmp_path: Path
) -> None:
    fields = textwrap.dedent(_FIELDS) + (
        "\n\nclass Integer(Field):\n"
        "    def __init__(self, **kwargs):\n"
        "        self.options = dict(kwargs)\n"
        "        super().__init__(**kwargs)\n"
    )
    schema = textwrap.dedent(_SCHEMA) + "VALUES.append(fields.Integer(missing=3).value)\n"
    files = _project(
        tmp_path, {"pkg/__init__.py": "", "pkg/fields.py": fields, "pkg/schema.py": schema}
    )
    target = RenameTarget(tmp_path / "pkg/fields.py", "Field", "missing", keyword=True)
    result = plan(tmp_path, files, [target], command)
    assert result.withheld == {target}
    (unknown,) = result.unknown(target)
    assert (unknown.path.name, unknown.start.line, unknown.kind) == ("schema.py", 5, "keyword")
    assert rename_edits(result, target, "load_default") == {}
    partial = rename_edits(result, target, "load_default", unsafe=True)
    assert "fields.Integer(missing=3)" in partial[(tmp_path / "pkg/schema.py").resolve()]


def test_keys_read_in_another_module_from_a_forwarded_kwargs_dictionary_are_unknown(
    command: list[str], tmp_path: Path
) -> None:
    """sqlparse's shape: ``format(sql, **options)`` hands ``options`` to functions of
    another module, which read ``options.get("keyword_case")``; those reads are reported
    (no engine follows them), so the rename of the keyword is withheld."""
    files = _project(
        tmp_path,
        {
            "pkg/__init__.py": """
                from pkg import formatter


                def format(sql, **options):
                    options = formatter.validate_options(options)
                    return formatter.build(sql, options)
                """,
            "pkg/formatter.py": """
                def validate_options(options):
                    case = options.get("keyword_case")
                    if case not in (None, "upper"):
                        raise ValueError(case)
                    return options


                def build(sql, options):
                    if options["keyword_case"] == "upper" or "keyword_case" in options:
                        return sql.upper()
                    return sql


                def unrelated(settings):
                    return settings.get("keyword_case")
                """,
            "app.py": """
                import pkg

                print(pkg.format("select 1", keyword_case="upper"))
                """,
        },
    )
    target = RenameTarget(tmp_path / "pkg/__init__.py", "format", "keyword_case", keyword=True)
    result = plan(tmp_path, files, [target], command)
    assert result.withheld == {target}
    unknown = {(o.path.name, o.start.line, o.kind): o.reason for o in result.unknown(target)}
    assert set(unknown) == {
        ("app.py", 3, "keyword"),
        ("formatter.py", 2, "forwarded"),
        ("formatter.py", 9, "forwarded"),
    }
    assert "`**options` of `format`" in unknown["formatter.py", 2, "forwarded"]
    # `unrelated` is handed no `**kwargs` dictionary: its read is a value, not an occurrence
    assert not any(o.start.line == 16 for o in result.occurrences[target])


def test_a_class_attribute_that_nothing_reads_by_name_is_unknown(
    command: list[str], tmp_path: Path
) -> None:
    """pydantic 1's shape: every model writes its settings in a nested ``class Config:``
    that subclasses nothing; the model's metaclass merges it into ``BaseConfig``, and the
    settings are read as ``cls.__config__.orm_mode``. ``orm_mode = True`` there is not
    ``BaseConfig.orm_mode`` by its types, yet renaming only the latter changes behaviour:
    an attribute of an unrelated class that nothing reads by name is unknown. One that is
    read by name (``Other.orm_mode``) is another class's."""
    verdicts = _verdicts(
        command,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/config.py": """
                class BaseConfig:
                    orm_mode: bool = False


                def inherit(own, parent):
                    return type("Config", (own, parent), {})
                """,
            "pkg/main.py": """
                from pkg.config import BaseConfig, inherit


                class Model:
                    __config__ = BaseConfig

                    def __init_subclass__(cls):
                        own = cls.__dict__.get("Config")
                        if own is not None:
                            cls.__config__ = inherit(own, cls.__config__)

                    @classmethod
                    def from_orm(cls):
                        return cls.__config__.orm_mode
                """,
            "app.py": """
                from pkg.main import Model


                class User(Model):
                    class Config:
                        orm_mode = True


                class Other:
                    orm_mode = 1


                print(User.from_orm(), Other.orm_mode)
                """,
        },
        "pkg/config.py",
        "BaseConfig",
        "orm_mode",
        member=True,
    )
    assert _only(verdicts) == {
        ("pkg/config.py", 2, "name"): TARGET,
        ("pkg/main.py", 14, "attribute"): TARGET,
        ("app.py", 6, "name"): UNKNOWN,
        ("app.py", 10, "name"): OTHER,
        ("app.py", 13, "attribute"): OTHER,
    }
    assert "nothing reads it by name" in verdicts["app.py", 6, "name"][1]


_RETRY = """
    class Retry:
        def __init__(self, total=3, method_whitelist=None):
            self.total = total
            self.method_whitelist = method_whitelist
"""


def _retry_plan(
    command: list[str], root: Path, files: dict[str, str], methods: str = ""
) -> tuple[Plan, RenameTarget]:
    """The plan of ``Retry.__init__(method_whitelist)``'s rename in a package ``pkg`` of
    ``files``, where ``pkg/retry.py`` declares ``Retry`` (with ``methods`` after its
    ``__init__``)."""
    retry = textwrap.dedent(_RETRY) + textwrap.indent(textwrap.dedent(methods), "    ")
    paths = _project(root, {"pkg/__init__.py": "", "pkg/retry.py": retry, **files})
    target = RenameTarget(root / "pkg/retry.py", "Retry", "method_whitelist", keyword=True)
    return plan(root, paths, [target], command), target


def test_a_keyword_of_dict_that_may_be_unpacked_into_the_target_is_unknown(
    command: list[str], tmp_path: Path
) -> None:
    """urllib3's shape: ``Retry.new`` copies its settings with
    ``params = dict(total=..., method_whitelist=...)`` and calls ``type(self)(**params)``.
    The keyword of ``dict`` is ``dict``'s by its types, but it becomes the constructor's
    keyword: renaming the parameter without it breaks ``new``. It is unknown."""
    result, target = _retry_plan(
        command,
        tmp_path,
        {
            "pkg/schema.py": """
                from pkg.retry import Retry

                VALUES = [Retry(method_whitelist={"GET"}).new(total=1).method_whitelist]
                """,
        },
        methods="""
            def new(self, **kw):
                params = dict(total=self.total, method_whitelist=self.method_whitelist)
                params.update(kw)
                return type(self)(**params)
        """,
    )
    assert result.withheld == {target}
    (unknown,) = result.unknown(target)
    assert (unknown.path.name, unknown.start.line, unknown.kind) == ("retry.py", 7, "keyword")
    assert "`dict(...)`" in unknown.reason
    assert rename_edits(result, target, "allowed_methods") == {}
    edits = rename_edits(result, target, "allowed_methods", unsafe=True)
    assert "allowed_methods={" in edits[(tmp_path / "pkg/schema.py").resolve()]


def test_a_key_of_a_dictionary_unpacked_into_a_call_is_unknown(
    command: list[str], tmp_path: Path
) -> None:
    """A keyword target spelt as a key of a dictionary display that reaches a call through
    ``**``: unpacked where it is written, through a local name, or returned by a helper
    (of another module) whose call is unpacked. Renaming the parameter without the key
    makes that call fail, so each such key is unknown; a dictionary that is never
    unpacked (data, ``json.dumps``) is not the target's concern."""
    result, target = _retry_plan(
        command,
        tmp_path,
        {
            "pkg/defaults.py": """
                import json

                from pkg.retry import Retry


                def retry_options():
                    return {"total": 2, "method_whitelist": {"GET"}}


                def local_retry():
                    params = {"method_whitelist": {"PUT"}}
                    return Retry(**params)


                def report():
                    return json.dumps({"method_whitelist": ["GET"]})
                """,
            "pkg/use.py": """
                from pkg.defaults import retry_options
                from pkg.retry import Retry

                RETRY = Retry(**retry_options())
                DIRECT = Retry(**{"method_whitelist": {"HEAD"}})
                """,
        },
    )

    assert result.withheld == {target}
    unknown = {(o.path.name, o.start.line): o.reason for o in result.unknown(target)}
    assert sorted(unknown) == [("defaults.py", 7), ("defaults.py", 11), ("use.py", 5)]
    assert "`retry_options()`" in unknown["defaults.py", 7]
    assert "`**params`" in unknown["defaults.py", 11]
    assert all("unpacked with `**`" in reason for reason in unknown.values())
    edits = rename_edits(result, target, "allowed_methods", unsafe=True)
    assert "allowed_methods=None" in edits[(tmp_path / "pkg/retry.py").resolve()]
