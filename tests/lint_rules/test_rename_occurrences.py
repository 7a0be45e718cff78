"""Finding the occurrences of rename targets' spellings in one file (stdlib ``ast`` only):
one parse and one walk for every spelling, near the lines that spell one, with the same
answers as one spelling at a time (issue 21 point 5)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_rules.codemod.references import Occurrence, Position, occurrences, occurrences_of

SOURCE = textwrap.dedent(
    """
    import functools
    from pkg import api as split_api, load

    __all__ = ["load", "other"]


    @functools.lru_cache(maxsize=load)
    def cached(value):
        return value


    class Handler(api.Base):
        @property
        def missing(self):
            return "{self.missing!r}".format(self=self)

        def run(self, *, flag=False, **options):
            if options.get("flag"):
                return getattr(self, "load")(flag=flag)
            return options["missing"]


    def words(text):
        return str(text).split(" "), "a b".split(), f"{text}".split(), text.split()
    """
).lstrip("\n")

SPELLINGS = ("load", "missing", "flag", "split", "maxsize", "absent")


def _shapes(found: dict[str, list[Occurrence]]) -> dict[str, list[tuple[object, ...]]]:
    return {
        spelling: [(o.start, o.kind, o.on_import, o.on_string) for o in listed]
        for spelling, listed in found.items()
    }


def test_every_spelling_at_once_answers_as_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    together = occurrences_of(path, SOURCE, SPELLINGS)
    one_by_one = {s: occurrences(path, SOURCE, s) for s in SPELLINGS if s in SOURCE}
    assert _shapes(together) == _shapes(one_by_one)
    kinds = {s: sorted({o.kind for o in listed}) for s, listed in together.items()}
    assert kinds == {
        "load": ["__all__", "getattr", "import", "name"],
        "missing": ["definition", "format", "options"],
        "flag": ["keyword", "name", "options", "parameter"],
        "split": ["attribute"],
        "maxsize": ["keyword"],
    }
    assert "absent" not in together  # not in the text: not looked for


def test_a_spelling_only_in_a_decorator_is_found(tmp_path: Path) -> None:
    text = "import functools\n\n\n@functools.lru_cache(maxsize=128)\ndef f():\n    return 1\n"
    found = occurrences_of(tmp_path / "m.py", text, ["maxsize"])
    assert [(o.start, o.kind) for o in found["maxsize"]] == [(Position(4, 21), "keyword")]


def test_an_attribute_of_a_string_is_marked_unless_str_is_rebound(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    marked = [o.on_string for o in occurrences_of(path, SOURCE, ["split"])["split"]]
    assert marked == [True, True, True, False]  # str(...), "a b", f"...", an untyped name
    for rebinding in (
        "str = bytes\n",
        "from pkg import *\n",
        "from pkg import text as str\n",
        "def words2(str):\n    return str\n",
        "try:\n    pass\nexcept ValueError as str:\n    pass\n",
    ):
        found = occurrences_of(path, rebinding + SOURCE, ["split"])["split"]
        assert [o.on_string for o in found] == [False, True, True, False], rebinding


def test_a_non_ascii_or_cr_text_is_walked_whole_with_the_same_answers(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    plain = _shapes(occurrences_of(path, SOURCE, SPELLINGS))
    accented = occurrences_of(path, SOURCE.replace("return value", "return value  # é"), SPELLINGS)
    assert _shapes(accented) == plain
    crlf = occurrences_of(path, SOURCE.replace("\n", "\r\n"), SPELLINGS)
    assert _shapes(crlf) == plain


HELD_SOURCE = textwrap.dedent(
    '''
    import pytest

    MODULE = """
    from pkg import validate_arguments

    @validate_arguments
    def foo(a):
        return a
    """
    CALLED = "validate_arguments(foo)(1)"
    PATCHED = "pkg.decorator.validate_arguments"
    NAME = "validate_arguments"
    PROSE = "use validate_arguments here"
    TEMPLATE = "{self.validate_arguments}"


    @pytest.mark.parametrize("validate_arguments, other", [(1, 2)])
    def test(validate_arguments, other):
        return validate_arguments
    '''
).lstrip("\n")


def test_python_source_in_a_string_that_names_the_spelling_is_an_occurrence(
    tmp_path: Path,
) -> None:
    """pydantic's tests hold modules in strings (``create_module('from pydantic import
    validate_arguments ...')``): no engine reads them, so each spelling there is a
    ``source`` occurrence (an import, a call, an attribute, a decorator); a string that
    is only the name, prose, a format template or a list of names (pytest's
    ``parametrize``) names nothing."""
    found = occurrences_of(tmp_path / "t.py", HELD_SOURCE, ["validate_arguments"])
    sources = [o.start for o in found["validate_arguments"] if o.kind == "source"]
    assert sources == [
        Position(4, 16),  # the import in MODULE
        Position(6, 1),  # its decorator
        Position(10, 10),  # CALLED: a call
        Position(11, 25),  # PATCHED: a dotted path
    ]
    kinds = sorted({o.kind for o in found["validate_arguments"]})
    assert kinds == ["format", "name", "parameter", "source"]
