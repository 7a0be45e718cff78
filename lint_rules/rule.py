"""The Rule API: how to write a lint rule, and the types a rule works with.

Writing a rule
==============
One rule is one module in ``lint_rules/rules/``, registered in
``lint_rules/rules/__init__.py`` (``ALL_RULES``). The module is the rule's
documentation and its tests; what it needs to know about code beyond one visitor
(declarations, receivers, whose a name is, how a rename is carried out) lives in
``lint_rules/analysis/`` and ``lint_rules/codemod/``, which it calls. A rule never
imports ``lint_rules.engine`` (a test holds this)::

    class StaleNameRule(Rule):
        '''Flags uses of a name that was renamed.

        ## What it does
        ...
        ## Why is this bad?
        ...
        ## Example
        ...
        ## Use instead
        ...
        ## Fix safety
        ...
        ## Options
        ...
        '''

        CODE = "LR001"
        NAME = "stale-name"
        MESSAGE = "`{old}` was renamed to `{new}`"
        OPTIONS = ("renames",)
        VALID = (Valid("new_name()", options={"renames": {"old_name": "new_name"}}),)
        INVALID = (
            Invalid(
                "old_name()",
                message="`old_name` was renamed to `new_name`",
                line=1, column=1, end_line=1, end_column=9,
                replacement="new_name()",
                options={"renames": {"old_name": "new_name"}},
            ),
        )

        def __init__(self, options: RuleOptions) -> None:
            super().__init__(options)
            self.renames = ...        # validate; raise ConfigError naming the key

        def prefilter(self, text: str) -> bool:
            return any(old in text for old in self.renames)

        def visit_Name(self, node: ast.Name) -> None:
            if node.id in self.renames:
                self.report(node, self.MESSAGE.format(...), fix=self.replace(node, new))

Class attributes
----------------
``CODE``     ``"LR"`` + three digits, unique. ``LR000``, ``LR999`` and ``LR1xx``
             are reserved for the engine and the ``protocols`` command.
``NAME``     kebab-case name shown by ``rules`` and in SARIF.
``MESSAGE``  the sentence a user reads; a ``str.format`` template is fine.
``OPTIONS``  the ``[tool.lint_rules]`` keys (tables or values) this rule owns,
             e.g. ``("renames",)``. Only owned keys are accepted in the config
             besides the engine's own; the rule's ``__init__`` receives the
             values of its keys that are present (``RuleOptions``) and validates
             them, raising ``ConfigError`` with a message that names the key.
             A rule is instantiated once in the main process (to validate the
             configuration before any work) and once per worker process, by
             ``Rule.create``: a rule whose ``__init__`` also takes ``project``
             (``def __init__(self, options, project=None)``) gets the run's
             ``Project``, to read declarations through
             (``project.declarations``); built by hand without one (a test),
             it reads them from the working directory.
``SEVERITY`` ``"error"`` (the default), ``"warning"`` or ``"note"``: the SARIF
             ``level`` of the rule's findings (``--format sarif``).
``READS``    keys owned by another rule that this rule also receives, unvalidated
             (LR002 reads ``renames`` so that a renamed value is allowed: both
             rules then agree within one ``fix``).
``VALID``    code on which the rule reports nothing (examples are dedented).
``INVALID``  code on which the rule reports exactly one finding, with the expected
             message, 1-based range (end exclusive) and the source after ``fix``
             (``replacement=None``: the finding has no fix). Both lists run as
             pytest cases for every registered rule
             (``tests/lint_rules/test_lint_rule_examples.py``), each with its own
             optional ``options``; the fix is applied with ``--unsafe-fixes``.

The docstring
-------------
First line: one-sentence summary. Then the sections ``## What it does``,
``## Why is this bad?``, ``## Example``, ``## Use instead``, ``## Fix safety``
and ``## Options``, in that order (a test enforces it). "Fix safety" starts with
``Safe``, ``Unsafe`` or ``None`` (shown by ``rules``). ``explain CODE``
prints it, ``rules --format markdown`` builds ``docs/rules.md`` from it.

Detection
---------
The engine parses a file once with the stdlib ``ast`` and walks it once,
iteratively, for all selected rules. A rule declares interest in a node type by
defining ``visit_<ClassName>(self, node)`` for a concrete ``ast`` class (e.g.
``visit_Name``, ``visit_ImportFrom``; not ``visit_expr``); there is no
``generic_visit``, children are always visited, and the order of visits is
unspecified (findings are sorted). The context and operator singletons
(``ast.Load``, ``ast.Add``, ``ast.Eq``...) are not visited: look at the parent.
The dispatch table is built once per worker.
Whole-file work goes in ``check_file(self)``, called after the walk
(rules that need a concrete syntax tree use ``self.file.cst_module`` or
``self.file.cst_wrapper`` there; they are parsed lazily, once per file, only
when asked for).

``prefilter(text)`` is a cheap text test (default: admit every file). A file
that no selected rule admits is never parsed (so its syntax errors are not
reported: ruff reports those); a rule that does not admit a file does not run
on it. It must never reject a file on which the rule would report.

``begin_batch(paths)`` is called once per worker batch with the paths the
worker is about to check (after cache hits are removed), before any of them;
a rule that shells out (e.g. to ``typos``) starts its tool once per batch here
and reads the result when the first file needs it (so that the tool runs while
the engine reads files), for ``prefilter`` and ``check_file``. Import what only
some files need (libcst, say) where it is used, not at the top of the module:
every run imports every selected rule's module. Code read from stdin (``-``) has no
file on disk and gets no ``begin_batch`` call: ``check_file`` must then work
from ``self.file.text`` alone. Default: nothing.
``begin_texts(items)`` is called by ``fix`` with every ``(path, text)`` one fix
pass of a batch changed, before they are checked again: such a rule starts its
tool once for them all there. Default: nothing.

``dependencies()`` lists the files besides the checked ones whose content
decides the rule's findings (e.g. a module it reads declarations from); the
result cache is keyed by their size and modification time too, so editing one
re-checks every file. Default: none.

Reporting
---------
``self.file`` is the ``FileContext`` of the file being checked: ``path``,
``project`` (the run's ``Project``: ``index`` of what the project defines,
``names`` of what it binds, ``declarations``; see ``analysis/project.py``),
``root`` (the project root, ``None`` outside a project), ``text`` (decoded,
BOM dropped, line endings kept), ``lines``, ``line_starts``, ``ast_tree``,
``cst_module``, ``cst_wrapper``, ``offset(line, byte_column)`` (an ``ast``
position, whose columns are UTF-8 bytes, to a character offset in ``text``),
``node_range(node)``, ``position(offset)``, ``string_body(constant)`` (the
range between the quotes of a plainly spelt string literal, for fixes that
rewrite its value) and ``definition_name(node)`` (the range of the name of a
``def`` or ``class``).

``self.report(where, message, fix=None)`` records a finding. ``where`` is an
``ast`` node with a position or a ``(start, end)`` pair of character offsets.
A ``Fix`` is a tuple of non-overlapping ``Edit(start, end, replacement)`` on
character offsets, plus ``safe``: a safe fix keeps behaviour and is applied by
``fix``; an unsafe one only with ``--unsafe-fixes``. ``self.replace(where,
text, safe=True)`` builds the common one-edit fix. The engine applies fixes,
repeats to a fixed point, refuses results that do not parse, and handles
``# noqa: CODE`` suppression (on the finding's first line) and
``per-file-ignores``, so rules do none of that. Findings are collected in
``self.findings``, which the engine resets for every file.

Rules never print, never write files and never import the code they check.
An exception raised by a rule becomes an ``LR999`` finding for that file; the
other rules' findings are kept. A rule that cannot run at all (a tool it needs
is missing or fails) raises ``ConfigError`` from ``begin_batch`` or
``check_file`` instead: the run stops with exit code 2 and the message.

Caching
-------
Findings are cached by file content and configuration. A rule whose findings
also depend on something outside both (a tool's version, the tool's own config
file) returns a description of it from ``cache_fingerprint(directory)``, called
once per run for each directory of checked files; a cached result is used only
while that description is unchanged. Default: ``""``. Such a rule also names the files
that description is made of in ``cache_inputs(directory)``: a whole ``check`` run is
replayed from its record (``quick.py``) only while they hold. Findings that read other files
of the project (``self.file.project.index`` or ``.names``: the ``Project`` notes each
such read, ``note_read``) are cached with a stamp of the project's files, and checked
again once any of them changes.
"""

from __future__ import annotations

import ast
import bisect
import gc
import inspect
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

if TYPE_CHECKING:
    import libcst
    from libcst.metadata import MetadataWrapper

    from lint_rules.analysis.project import Project

RuleOptions = Mapping[str, object]
"""The values of the ``[tool.lint_rules]`` keys a rule owns (see ``Rule.OPTIONS``)."""

DOC_SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "Options",
)


class ConfigError(Exception):
    """A configuration problem; the message names the offending key or file."""


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` (character offsets) with ``replacement``."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """Edits that together fix one finding; ``safe`` fixes keep behaviour."""

    edits: tuple[Edit, ...]
    safe: bool = True


@dataclass(frozen=True)
class Finding:
    """One problem in one file. Lines and columns are 1-based, ends exclusive."""

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: Fix | None = None


@dataclass(frozen=True)
class Valid:
    """Source on which the rule reports nothing (dedented before use)."""

    code: str
    options: RuleOptions = field(default_factory=dict)


@dataclass(frozen=True)
class Invalid:
    """Source on which the rule reports exactly one finding, as described."""

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    replacement: str | None
    options: RuleOptions = field(default_factory=dict)


_Rule = TypeVar("_Rule", bound="Rule")


class Rule:
    """Base class of every rule; see the module docstring for how to write one."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    SEVERITY: ClassVar[Literal["error", "warning", "note"]] = "error"
    READS: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    file: FileContext

    def __init__(self, options: RuleOptions) -> None:
        self.options = options
        self.findings: list[Finding] = []

    @classmethod
    def create(cls: type[_Rule], options: RuleOptions, project: Project) -> _Rule:
        """The rule as a run builds it: ``cls(options, project=project)`` when its
        constructor takes a ``project`` (to read declarations), else ``cls(options)``."""
        if "project" in inspect.signature(cls).parameters:
            return cls(options, project=project)  # type: ignore[call-arg]
        return cls(options)

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring."""
        return (cls.__doc__ or "").strip().splitlines()[0]

    @classmethod
    def documentation(cls) -> str:
        """The docstring, cleaned of its indentation."""
        return inspect.cleandoc(cls.__doc__ or "")

    def prefilter(self, text: str) -> bool:
        """Whether this file may contain a finding; never wrong when it says no."""
        return True

    def admits(self, file: FileContext) -> bool:
        """Whether the rule runs on ``file``, asked before it is parsed: ``prefilter`` of
        its text, unless the rule knows more from the file's path and project (LR001 knows
        from the reference engine's plan which files hold only other things' names)."""
        return self.prefilter(file.text)

    @classmethod
    def cache_fingerprint(cls, directory: Path) -> str:
        """What, besides the file and ``[tool.lint_rules]``, decides the findings of the
        files in ``directory``."""
        return ""

    @classmethod
    def cache_inputs(cls, directory: Path) -> Sequence[tuple[str, Path]]:
        """The files whose state decides ``cache_fingerprint(directory)``, each with what
        of it does: ``"content"`` or ``"status"`` (mode, size, times: for an executable),
        present or missing. A recorded ``check`` (``quick.py``) is replayed only while they
        hold, without loading the rules: they must cover everything the fingerprint reads."""
        return ()

    def begin_batch(self, paths: Sequence[Path]) -> None:
        """Called with the paths a worker is about to check, before checking them. In a
        parallel run whose worker processes are forked, it is called once, with every path,
        in the process that starts them (before ``prepare_project``): each worker inherits
        the rule in the state it leaves, and checks its share of the paths."""

    def prepare_project(self, paths: Sequence[Path]) -> None:
        """Called once with every path of a run, in the process that starts the worker
        processes, before they start: what the rule builds in ``Project.shared`` here
        (picklable) every worker receives instead of building it again."""

    def begin_text(self, path: Path, text: str) -> None:
        """Called before a text that is not the file's content on disk (standard input, an
        editor's buffer) is parsed and checked as the file ``path``."""

    def begin_texts(self, items: Sequence[tuple[Path, str]]) -> None:
        """Called by ``fix`` with every ``(path, text)`` a fix pass changed, before they are
        checked again (each then as ``path``): a rule that shells out may start its tool
        once for them all here. A failure here is ignored: ``check_file`` must still work
        on each text alone."""

    def dependencies(self) -> Sequence[Path]:
        """Files other than the checked ones whose content decides the findings."""
        return ()

    def check_file(self) -> None:
        """Called once per file after the traversal."""

    def report(
        self,
        where: ast.AST | tuple[int, int],
        message: str,
        fix: Fix | None = None,
    ) -> None:
        """Record a finding at a node or at a ``(start, end)`` character range."""
        start, end = where if isinstance(where, tuple) else self.file.node_range(where)
        line, column = self.file.position(start)
        end_line, end_column = self.file.position(end)
        self.findings.append(Finding(self.CODE, message, line, column, end_line, end_column, fix))

    def replace(self, where: ast.AST | tuple[int, int], replacement: str, safe: bool = True) -> Fix:
        """A fix replacing a node's text (or a character range) with ``replacement``."""
        start, end = where if isinstance(where, tuple) else self.file.node_range(where)
        return Fix((Edit(start, end, replacement),), safe)


_NEWLINE = re.compile(r"\r\n?|\n")


_STRING = re.compile(r"([A-Za-z]{0,2})('''|\"\"\"|'|\")(.*)\2", re.DOTALL)
_DEFINITION = re.compile(r"(?:async\s+)?(?:def|class)\s+")


class FileContext:
    """One file under check: its text and lazily built, cached views of it.

    ``project`` is the run's ``Project`` (without one: a project of its own with no
    root, as for a rule's examples).
    """

    def __init__(self, path: Path, text: str, project: Project | None = None) -> None:
        self.path = path
        self.text = text
        if project is None:
            from lint_rules.analysis.project import Project

            project = Project(None)
        self.project = project
        self.parsed = False

    @property
    def root(self) -> Path | None:
        """The project root (where the configuration lives), ``None`` outside a project."""
        return self.project.root

    @cached_property
    def line_starts(self) -> list[int]:
        """Character offset at which each line starts (index 0 is line 1)."""
        return [0, *(match.end() for match in _NEWLINE.finditer(self.text))]

    @cached_property
    def lines(self) -> list[str]:
        """The lines of the file, line endings kept."""
        starts = self.line_starts
        ends = [*starts[1:], len(self.text)]
        return [self.text[start:end] for start, end in zip(starts, ends, strict=True)]

    @cached_property
    def ast_tree(self) -> ast.Module:
        """The stdlib syntax tree (raises ``SyntaxError`` or ``RecursionError``)."""
        self.parsed = True
        return parse_source(self.text, str(self.path))

    @cached_property
    def cst_module(self) -> libcst.Module:
        """The libcst concrete syntax tree, parsed on first use."""
        import libcst

        return libcst.parse_module(self.text)

    @cached_property
    def cst_wrapper(self) -> MetadataWrapper:
        """A libcst metadata wrapper around ``cst_module`` (no copy)."""
        from libcst.metadata import MetadataWrapper

        return MetadataWrapper(self.cst_module, unsafe_skip_copy=True)

    def offset(self, line: int, byte_column: int) -> int:
        """Character offset of an ``ast`` position (1-based line, UTF-8 byte column)."""
        start = self.line_starts[line - 1]
        line_text = self.lines[line - 1]
        if line_text.isascii():
            return start + byte_column
        return start + len(line_text.encode()[:byte_column].decode(errors="replace"))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and character column of a character offset."""
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def string_body(self, node: ast.Constant) -> tuple[int, int] | None:
        """Where a string literal's value is spelt between its quotes, or ``None``.

        ``None`` unless the literal's source is one plain string (``'x'``,
        ``r"x"``, a triple-quoted string...) whose text between the quotes is
        exactly its value: not a part of an f-string, not bytes, not spelt with
        escapes or implicit concatenation. Rewriting that range rewrites the
        value and nothing else.
        """
        if not isinstance(node.value, str):
            return None
        start, end = self.node_range(node)
        literal = _STRING.fullmatch(self.text, start, end)
        if literal is None or "f" in literal.group(1).lower() or literal.group(3) != node.value:
            return None
        return literal.start(3), literal.end(3)

    def definition_name(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> tuple[int, int] | None:
        """The character range of the name after ``def``/``class``, or ``None`` if not found."""
        keyword = _DEFINITION.match(self.text, self.offset(node.lineno, node.col_offset))
        if keyword is None:
            return None
        start = keyword.end()
        return start, start + len(node.name)

    def node_range(self, node: ast.AST) -> tuple[int, int]:
        """Start and end character offsets of an ``ast`` node with a position."""
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )


def is_private(name: str) -> bool:
    """Whether ``name`` is private by convention (a leading underscore, not a dunder)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def parse_source(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename)`` with the cyclic garbage collector paused, and inside
    ``trees_kept_frozen`` the tree frozen once built (``gc.freeze``).

    Building a tree allocates a node object per node and makes no garbage, but each
    burst of allocations started collections that scanned every object alive, the
    trees held so far included: with the collector on, collections took about 45% of
    an LR002 run's CPU on the openai SDK (2,546 files). Collections resume after; a
    tree left young was still scanned by the next ones (the first allocation after the
    parse starts one), the modules read for the run's declarations and receivers again
    and again as they aged: 0.6-0.9 s of 3.2-3.9 s of CPU in an LR002 run on that SDK
    with 116 configured keys, one process; 0.01 s with the trees frozen."""
    if not gc.isenabled():
        return ast.parse(text, filename=filename)
    gc.disable()
    try:
        return ast.parse(text, filename=filename)
    finally:
        if _frozen_blocks:
            gc.freeze()
        gc.enable()


_frozen_blocks = 0
"""How many ``trees_kept_frozen`` blocks are open (in this process)."""


@contextmanager
def trees_kept_frozen() -> Iterator[None]:
    """A block (a run) in which what is alive when it begins, and each tree
    ``parse_source`` builds, with whatever else is alive then, is frozen
    (``gc.freeze``): the collections later allocations set off do not scan it again.
    A tree holds no cycle: a checked file's is freed when dropped, frozen or not; what
    else is frozen is unfrozen when the outermost block ends (``gc.unfreeze``), and a
    cycle made meanwhile is collected after (a whole LR002 run on the openai SDK, or a
    check of this repository with every rule, leaves about a thousand such objects).
    Nested blocks freeze and unfreeze only at the outermost; a process that freezes
    for good (a worker) calls ``keep_trees_frozen``."""
    global _frozen_blocks
    if _frozen_blocks == 0:
        gc.freeze()
    _frozen_blocks += 1
    try:
        yield
    finally:
        _frozen_blocks -= 1
        if _frozen_blocks == 0:
            gc.unfreeze()


def keep_trees_frozen() -> None:
    """Freeze what is alive and every tree ``parse_source`` builds from now on, for the
    rest of the process (a spawned worker: it exits at the end of the run)."""
    global _frozen_blocks
    gc.freeze()
    _frozen_blocks += 1
