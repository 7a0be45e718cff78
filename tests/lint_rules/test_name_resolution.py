"""``resolution.resolutions`` (stdlib ``ast``), which ``fix`` verifies every changed file
with, against libcst's scope analysis, which it replaced: every name libcst resolves
resolves the same way (the constants ``None``, ``True``, ``False`` are not names in
``ast``), on shapes of Python's scoping and on files of this repository."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pytest

from lint_rules.engine.fixes import verify
from lint_rules.engine.resolution import Resolution, resolutions

REPOSITORY = Path(__file__).resolve().parents[2]

SHAPES = {
    "imports": "import os\nimport a.b as c\nfrom x.y import z as w\nfrom . import q\n"
    "from ..m import r\nimport p.s\nos, c, w, q, r, p\n",
    "an import rebound": "import x\nx = 1\nx\n",
    "a local import": "def f():\n    import x\n    x = 2\n    return x\n",
    "class scope": "class C:\n    y = 1\n    z = [y for _ in range(3)]\n"
    "    def m(self):\n        return y, len\n",
    "defaults and annotations": "def f(a=b, *args: T, **kw):\n    return a, args, kw, undefined\n",
    "comprehensions": "x = [i for i in range(3) if i]\nprint(i)\n"
    "d = {k: v for k, v in pairs}\ng = (n for n in x for m in n)\n",
    "global": "def f():\n    global g\n    g = 1\n    return g\n",
    "nonlocal": "def f():\n    v = 1\n    def g():\n        nonlocal v\n        v = 2\n"
    "        return v\n    return g\n",
    "except": "try:\n    pass\nexcept E as e:\n    e\n",
    "walrus and lambda": "(y := 3)\ny\nlambda q, r=q: q + r\n",
    "decorators and bases": "@dec\nclass K(Base, metaclass=M):\n    pass\nK\n",
    "del, for, with": "del z\nfor i, j in pairs: i\nwith open(f) as (h, k): h\n",
    "annotated": "x: int\ny: str = 's'\nx, y\n",
    "augmented": "def f():\n    x += 1\n    return x\n",
    "dunders": "__name__, __file__, __doc__\nclass C:\n    def m(self):\n"
    "        return __class__, super()\n",
    "shadowed import": "import os\ndef f():\n    os = 1\n    return os\ndef g():\n    return os\n",
    "non-ASCII columns": "é = 1\nprint('ü', é, len)\n",
    "f-strings": "name = 1\nprint(f'{name!r} {len(name)}')\n",
    "async": "async def f(x):\n    async with g() as h:\n        await h\n"
    "    async for i in x:\n        yield i\n",
}


def _libcst(text: str) -> dict[tuple[int, int], Resolution]:
    """How libcst's scope analysis resolves each name read in ``text`` (what ``verify``
    used before ``resolution.py``)."""
    import libcst
    from libcst.metadata import (
        Assignment,
        BuiltinAssignment,
        CodeRange,
        MetadataWrapper,
        PositionProvider,
        Scope,
        ScopeProvider,
    )

    wrapper = MetadataWrapper(libcst.parse_module(text), unsafe_skip_copy=True)
    resolved = wrapper.resolve_many([ScopeProvider, PositionProvider])
    scopes = cast("Mapping[libcst.CSTNode, Scope | None]", resolved[ScopeProvider])
    positions = cast("Mapping[libcst.CSTNode, CodeRange]", resolved[PositionProvider])
    found: dict[tuple[int, int], Resolution] = {}
    for scope in {id(scope): scope for scope in scopes.values() if scope is not None}.values():
        for access in scope.accesses:
            node = access.node
            if not isinstance(node, libcst.Name) or node.value in ("None", "True", "False"):
                continue
            where = positions[node].start
            referents = access.referents
            resolution: Resolution
            if not referents:
                resolution = ("unresolved", "")
            elif all(isinstance(referent, BuiltinAssignment) for referent in referents):
                resolution = ("builtin", node.value)
            elif any(
                isinstance(referent, Assignment)
                and isinstance(referent.node, (libcst.Import, libcst.ImportFrom))
                for referent in referents
            ):
                names = sorted(name.name for name in scope.get_qualified_names_for(node))
                resolution = ("import", ", ".join(names))
            else:
                resolution = ("bound", "")
            found[(where.line, where.column)] = resolution
    return found


def _disagreements(text: str, *, both_ways: bool = False) -> list[str]:
    """Where libcst resolves a name otherwise; with ``both_ways``, also names libcst leaves
    unresolved that ``resolutions`` resolves (libcst misses some: annotations naming a
    class defined further down, a later generator's target in a comprehension)."""
    ours = resolutions(text)
    theirs = _libcst(text)
    unresolved = ("unresolved", "")
    lines = text.splitlines()
    return [
        f"{line}:{column} {lines[line - 1].strip()!r}: libcst {theirs.get((line, column))},"
        f" ast {ours.get((line, column))}"
        for line, column in sorted(theirs.keys() | (ours.keys() if both_ways else set()))
        if (theirs.get((line, column), unresolved) != unresolved or both_ways)
        and ours.get((line, column), unresolved) != theirs.get((line, column), unresolved)
    ]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_name_resolves_as_libcst_resolves_it(shape: str) -> None:
    assert _disagreements(SHAPES[shape], both_ways=True) == []


@pytest.mark.parametrize(
    "path", ["lint_rules/engine/run.py", "lint_rules/codemod/references.py", "lint_rules/cli.py"]
)
def test_files_of_this_repository_resolve_as_libcst_resolves_them(path: str) -> None:
    assert _disagreements((REPOSITORY / path).read_text(encoding="utf-8")) == []


def test_python_scoping_where_libcst_leaves_names_unresolved() -> None:
    found = resolutions(
        "pairs = {}\n"
        "kept = [j for j in pairs for o in j if o]\n"  # a later generator's target
        "match pairs:\n"
        "    case {'k': value, **rest}:\n"
        "        print(value, rest)\n"
        "[w := 1 for _ in pairs]\n"  # an assignment expression binds outside
        "print(w)\n"
    )
    assert found[(2, 39)] == ("bound", "")
    assert found[(5, 14)] == found[(5, 21)] == ("bound", "")
    assert found[(7, 6)] == ("bound", "")


def test_verify_withholds_a_rename_that_turns_a_builtin_or_an_import_into_a_local() -> None:
    before = "import os\n\n\ndef f(value):\n    return len(value), os.sep\n"
    assert verify(before, before.replace("value", "len")) == (
        "`len` on line 5 would no longer be the builtin"
    )
    assert verify(before, before.replace("value", "os")) == (
        "`os` on line 5 would no longer be the import of `os`"
    )
    assert verify(before, before.replace("value", "item")) is None
