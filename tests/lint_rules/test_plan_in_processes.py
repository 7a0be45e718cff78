"""The reference engine's plan with its per-file part in worker processes (``Worker.prepare``
hands ``Project.map_files`` a process pool): the files are scanned and the renamed texts
compiled in other processes, and the plan is the one made in one process, to the byte."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from lint_rules.codemod.references import (
    TARGET,
    UNKNOWN,
    EngineMissing,
    Occurrence,
    Plan,
    Position,
    RenameTarget,
    _with,
    plan,
    rename_problems,
    scan_file,
    ty_command,
)
from lint_rules.engine.run import MIN_FILES_PER_PROCESS, _ProcessMap

_FILES: dict[str, str | bytes] = {
    "pkg/__init__.py": "from pkg.api import send_file, split\n",
    "pkg/api.py": """
        class Field:
            def __init__(self, *, missing=None):
                self.missing = missing


        def send_file(path, *, cache_timeout=None, **options):
            return path, cache_timeout, options.get("cache_timeout")


        def split(text):
            return text.split(";")
        """,
    "pkg/checks.py": """
        def validate(options):
            return options.get("cache_timeout")
        """,
    "pkg/forward.py": """
        from pkg.api import send_file
        from pkg.checks import validate


        def send_from_directory(path, **options):
            validate(options)
            return send_file(path, **options)


        def defaults():
            return {"cache_timeout": 1}


        send_file("a", **defaults())
        """,
    "pkg/broken.py": "def f(:\n    cache_timeout = 1\n",
    "pkg/latin.py": b"# -*- coding: latin-1 -*-\nname = '\xe9'  # split\n",
}
_USE = """
    from pkg.api import Field, send_file, split


    class Sub{n}(Field):
        pass


    def use_{n}(text, thing):
        send_file(text, cache_timeout={n})
        return Sub{n}(missing=1), split(text), str(text).split(" "), thing.split(","), thing.missing
    """
_TARGETS = (
    ("pkg/api.py", "Field", "missing", True, False),
    ("pkg/api.py", "send_file", "cache_timeout", True, False),
    ("pkg/api.py", "", "split", False, False),
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {**_FILES}
    files.update({f"pkg/use_{n}.py": _USE.format(n=n) for n in range(3 * MIN_FILES_PER_PROCESS)})
    files.update({f"pkg/other_{n}.py": f"value_{n} = {n}\n" for n in range(MIN_FILES_PER_PROCESS)})
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return tmp_path


def test_a_plan_scanned_in_processes_is_the_plan_made_in_one(project: Path) -> None:
    try:
        ty_command()
    except EngineMissing as error:
        pytest.skip(str(error))
    files = sorted(project.rglob("*.py"))
    targets = [
        RenameTarget(project / module, owner, old, keyword=keyword, member=member)
        for module, owner, old, keyword, member in _TARGETS
    ]
    alone = plan(project, files, targets)
    processes = _ProcessMap(2)
    try:
        shared = plan(project, files, targets, map_files=processes)
        assert processes._pool is not None  # the files were scanned in other processes
    finally:
        processes.close()

    assert shared.occurrences == alone.occurrences
    assert shared.missing == alone.missing
    assert shared.read == alone.read
    assert shared.resolved == alone.resolved
    assert shared.withheld == alone.withheld
    kinds = {o.kind for found in alone.occurrences.values() for o in found}
    assert {"forwarded", "unpacked", "keyword", "attribute", "options"} <= kinds
    assert any(o.verdict == TARGET for found in alone.occurrences.values() for o in found)
    # The file that does not parse, and the one that is not UTF-8, hold no occurrence.
    read = {path.name for path in alone.read}
    assert "broken.py" not in read
    assert "latin.py" not in read
    assert "other_0.py" not in read  # no spelling: not parsed at all


def test_a_file_is_scanned_once_for_every_spelling(project: Path) -> None:
    spellings = frozenset({"missing", "cache_timeout", "split", "absent"})
    scanned = scan_file(project / "pkg/forward.py", spellings)
    assert scanned is not None
    assert scanned.digest is not None
    assert scanned.path == (project / "pkg/forward.py").resolve()
    assert set(scanned.held) == {"cache_timeout"}  # the spellings its text holds
    assert scanned.quoted == {"cache_timeout"}
    broken = scan_file(project / "pkg/broken.py", spellings)
    assert broken is not None
    assert (broken.digest, broken.held) == (None, {})
    assert scan_file(project / "pkg/other_0.py", spellings) is None
    assert scan_file(project / "pkg/latin.py", spellings) is None  # not UTF-8
    assert scan_file(project / "pkg/gone.py", spellings) is None


_CASES = (
    "def f(a=0, c=0):\n    return a, c\n\n\nf(a=1, c=2)\n",
    "def g(**k):\n    return k\n\n\ng(a=1, b=2, c=3)\n",
    "g(a=1, a=2)\ng(c=3)\n",
)
_SITES = (
    {("a", "b"): [(1, 6), (2, 11), (5, 2)], ("c", "d"): [(1, 11), (2, 14), (5, 7)]},
    {("a", "b"): [(5, 2)], ("c", "d"): [(5, 12)]},
    {("a", "e"): [(1, 2)], ("c", "d"): [(2, 2)]},
)


def test_renamed_texts_compiled_in_processes_give_the_same_problems(tmp_path: Path) -> None:
    occurrences: dict[RenameTarget, list[Occurrence]] = {}
    renames: dict[RenameTarget, str] = {}
    for n in range(MIN_FILES_PER_PROCESS):
        for index, (text, sites) in enumerate(zip(_CASES, _SITES, strict=True)):
            path = tmp_path / f"case_{index}_{n}.py"
            path.write_text(text, encoding="utf-8")
            for (old, new), at in sites.items():
                target = RenameTarget(path, "f", old, keyword=True)
                occurrences[target] = [
                    Occurrence(path, Position(line, column), "keyword", TARGET)
                    for line, column in at
                ]
                renames[target] = new
    made = Plan(occurrences, set())
    alone = rename_problems(made, renames)
    processes = _ProcessMap(2)
    try:
        shared = rename_problems(made, renames, processes)
        assert processes._pool is not None
    finally:
        processes.close()
    assert shared == alone
    assert {(t.module.name.split("_")[1], t.old) for t in alone} == {("1", "a"), ("2", "c")}


def test_a_verdict_keeps_every_other_field_of_its_occurrence() -> None:
    """``_with`` spells ``dataclasses.replace`` out (it runs for every occurrence): a field
    added to ``Occurrence`` must be added there too."""
    assert [f.name for f in dataclasses.fields(Occurrence)] == [
        *("path", "start", "kind", "verdict", "reason", "on_import", "on_string")
    ]
    found = Occurrence(Path("a.py"), Position(3, 4), "attribute", UNKNOWN, "why", False, True)
    decided = _with(found, TARGET, "because")
    assert decided == dataclasses.replace(found, verdict=TARGET, reason="because")
