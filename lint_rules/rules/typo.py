"""LR004 typo: typos' findings placed in the syntax tree, fixed only where no API changes."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules import quick, timing
from lint_rules.analysis.renames import parse_renames
from lint_rules.analysis.typos import (
    TYPOS_CONFIG_NAMES,
    Misspelling,
    PendingText,
    PendingTexts,
    PendingTypos,
    find_typos,
    run_typos_on_text,
    start_typos_on_files,
    start_typos_on_text,
    start_typos_on_texts,
    typos_candidates,
    typos_config_candidates,
    typos_root,
)
from lint_rules.rule import ConfigError, Invalid, Rule, RuleOptions, Valid

if TYPE_CHECKING:
    from lint_rules.codemod.misspellings import Placed

# The examples' misspellings (the seed's list) are built from parts so that this
# repository's own typos run does not flag this file.
_SUPPRESSES = "Sup" + "resses"
_DESTINATION = "desit" + "nation"
_EXAMPLES = "exma" + "ples"
_STRUCTURED = "struct" + "ed"
_OCCURRED = "occ" + "ured"


class TypoRule(Rule):
    """Places each misspelling `typos` finds, and fixes it only where no API changes.

    ## What it does
    Runs the `typos` spell checker (`typos --format json`, once per batch of
    files, with the project's `typos.toml`) and places each misspelling in the
    syntax tree: a comment, a docstring, a string constant, or an identifier.
    For an identifier it finds the binding: a local variable, a parameter, a
    module or class member, or a name from elsewhere (an import, an attribute,
    a keyword argument), whether it is private, and whose it is: this
    project's, or another distribution's.

    ## Why is this bad?
    A misspelling makes code harder to search and read, and spreads as the name
    is copied. But `typos -w` fixes blindly: renaming a public function, a
    public parameter, or a string constant such as an event name breaks every
    caller and every stored value that still uses the old spelling; renaming
    another library's attribute breaks the call; correcting a test's
    deliberately misspelt input breaks the test.

    ## Example
    ```python
    # Emits handoff_occured once per handoff.
    EVENT = "handoff_occured"


    def _emit(handoff_occured):
        return handoff_occured


    def handoff_occured(item): ...
    ```

    ## Use instead
    ```python
    # Emits handoff_occurred once per handoff.
    EVENT = "handoff_occured"  # kept: migrate with renames


    def _emit(handoff_occurred):
        return handoff_occurred


    def handoff_occured(item): ...  # kept: migrate with renames
    ```
    and, to migrate the public name and the string constant through LR001
    (which rewrites every use and keeps an alias marked `# noqa: LR001`):
    ```toml
    [tool.lint_rules.renames]
    handoff_occured = "handoff_occurred"
    ```
    Once a name is in `[tool.lint_rules.renames]` it is LR001's: LR004 no
    longer reports it, nor a string or a word that spells it.

    ## Fix safety
    Safe, and offered only where no caller can notice: a word in a comment or a
    docstring (not in a doctest example: its code and expected output are
    code); a private name renamed together with every reference in its scope (a
    local variable; a parameter of a private or nested function, or a
    positional-only one; a module member or class member whose name starts with
    an underscore, with its `self.`/`cls.` uses in that class); and a test
    function pytest collects (`test*` functions and `Test*` classes' `test*`
    methods in `test_*.py`/`*_test.py`), which no caller names, with every
    reference in its file. No fix is offered when typos suggests more than one
    correction, when the corrected name already exists in the file (a local, a
    parameter, a module-level name, a class attribute: the rename would shadow
    it or clash), when it is a builtin (a local is never renamed to `set`), when a
    star import of the file binds it (read from the module's source: its literal
    `__all__`, else its public top-level names) or might (the module's source
    cannot be read, or its `__all__` is computed), when a class member's new
    name is defined by a base class (followed through imports into the project,
    the standard library and installed packages; a base that cannot be read
    counts as defining it) or bound in another file of the project (a subclass
    there may define it), or when the name also appears inside a string (for
    example a string annotation). A word
    in prose that names code stays: one in inline code (` ``emit()`` `,
    `` `emit` ``, a role such as `` :func:`emit` ``) or one that is a name
    defined in the file or a function or class defined in the project. A
    private module member that another module of the project imports is renamed
    only if that module is renamed in the same run (never, today: the fix is
    withheld with the reason). File names are typos' own business (run `typos`
    itself for them).

    What is reported without a fix says why, after `; `, with one of these:

    - `not ours to rename:` a name this project does not define: an attribute
      or keyword whose receiver is imported from a module outside the project,
      a name or module imported from outside it (`import *` included), or an
      attribute or keyword that nothing in the project binds (no `def`,
      `class`, assignment, parameter or `self.name =`). The message gives the exact line that
      accepts it, for the `[default.extend-identifiers]` table of the typos
      configuration.
    - `test data:` a string constant in a test file (`test_*.py`,
      `*_test.py`, `conftest.py`, or under a `tests/` directory): tests
      misspell inputs on purpose. The message gives the typos configuration
      line that accepts it (`[default.extend-words]` for a word,
      `[default.extend-identifiers]` for a longer identifier).
    - `not fixed:` anything else: a public name or a string constant of this
      project (with the `[tool.lint_rules.renames]` line that migrates it
      through LR001), several corrections (with the line that accepts the
      word), a doctest, a rename that would clash.

    ## Options
    None of its own in `[tool.lint_rules]`; it reads `renames` (LR001's). The
    words come from typos and its configuration (`typos.toml`, `_typos.toml`,
    `.typos.toml` or `[tool.typos]` in pyproject.toml), found from each file's
    directory upward. The `typos` executable (PyPI package `typos`) is looked
    for beside the running Python, then on `PATH`; if it is missing or fails,
    the run stops with exit code 2.
    """

    CODE = "LR004"
    NAME = "typo"
    SEVERITY = "warning"
    MESSAGE = "`{typo}` should be {correction} in {place}{note}"
    READS = ("renames",)

    VALID = (
        Valid("# Suppresses warnings about missing annotations\n"),
        Valid("def send(destination):\n    return destination\n"),
        Valid("EVENT = 'handoff_occurred'\n"),
        Valid(
            f"EVENT = 'error_{_OCCURRED}'\n",
            options={"renames": {f"error_{_OCCURRED}": "error_occurred"}},
        ),
    )
    INVALID = (
        Invalid(
            f"# {_SUPPRESSES} warnings about missing annotations\n",
            message=f"`{_SUPPRESSES}` should be `Suppresses` in a comment",
            line=1, column=3, end_line=1, end_column=12,
            replacement="# Suppresses warnings about missing annotations\n",
        ),
        Invalid(
            f'def handoff(source, target):\n    """Includes source and {_DESTINATION} agents."""\n',
            message=f"`{_DESTINATION}` should be `destination` in a docstring",
            line=2, column=28, end_line=2, end_column=39,
            replacement='def handoff(source, target):\n'
            '    """Includes source and destination agents."""\n',
        ),
        Invalid(
            f"PROMPT = ['translate code {_EXAMPLES} as sample code']\n",
            message=f"`{_EXAMPLES}` should be `examples` in a string constant;"
            " not fixed: its value may be relied on",
            line=1, column=27, end_line=1, end_column=35,
            replacement=None,
        ),
        Invalid(
            f"EVENT = 'error_{_OCCURRED}'\n",
            message=f"`{_OCCURRED}` should be `occurred` in a string constant;"
            f" not fixed: its value may be relied on; to migrate it, add"
            f' `error_{_OCCURRED} = "error_occurred"` to [tool.lint_rules.renames]',
            line=1, column=16, end_line=1, end_column=23,
            replacement=None,
        ),
        Invalid(
            f"async def run_{_STRUCTURED}_output(agent):\n    pass\n",
            message=f"`{_STRUCTURED}` should be `structured` in public function"
            f" `run_{_STRUCTURED}_output`; not fixed: renaming it breaks its users; to migrate"
            f' it, add `run_{_STRUCTURED}_output = "run_structured_output"` to'
            " [tool.lint_rules.renames]",
            line=1, column=15, end_line=1, end_column=23,
            replacement=None,
        ),
        Invalid(
            f"import httpx\n\nhttpx.{_DESTINATION}_url\n",
            message=f"`{_DESTINATION}` should be `destination` in attribute"
            f" `{_DESTINATION}_url`; not ours to rename: an attribute of `httpx`, imported from"
            f" `httpx`, outside this project; to accept it, add"
            f' `{_DESTINATION}_url = "{_DESTINATION}_url"` to typos.toml'
            " [default.extend-identifiers]",
            line=3, column=7, end_line=3, end_column=18,
            replacement=None,
        ),
        Invalid(
            f"def run(agent):\n    _{_STRUCTURED} = agent.output\n",
            message=f"`{_STRUCTURED}` should be `structured` in local `_{_STRUCTURED}`",
            line=2, column=6, end_line=2, end_column=14,
            replacement="def run(agent):\n    _structured = agent.output\n",
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        self._batch: dict[Path, tuple[str, list[Misspelling]]] = {}
        self._clean_digests: set[str] = set()
        self._pending: tuple[list[Path], PendingTypos] | None = None
        self._pending_text: tuple[Path, str, PendingText] | None = None
        self._batch_error: ConfigError | None = None
        self._texts: tuple[dict[tuple[Path, str], int], PendingTexts] | None = None
        self.renamed = parse_renames(options.get("renames", {})).old_names
        """The old names of ``[tool.lint_rules.renames]``: LR001's to report, not ours."""

    @classmethod
    def cache_fingerprint(cls, directory: Path) -> str:
        """The typos executable and the typos configuration that governs the files of
        ``directory`` (the nearest at or above it, as typos_runner finds it) decide the
        findings."""
        parts = []
        executable = find_typos()
        if executable is not None:
            status = executable.stat()
            parts.append(f"{executable}:{status.st_size}:{status.st_mtime_ns}")
        governing = typos_root(directory)
        if governing is not None:
            parts.append(str(governing))
            for name in (*TYPOS_CONFIG_NAMES, "pyproject.toml"):
                try:
                    parts.append(quick.digest((governing / name).read_bytes()))
                except OSError:
                    parts.append("-")
        return f"{cls.CODE}:{'|'.join(parts)}"

    @classmethod
    def cache_inputs(cls, directory: Path) -> list[tuple[str, Path]]:
        """What ``cache_fingerprint`` reads: every place the typos executable may be found
        (by status: hashing it would cost more than the run) and every typos configuration
        file at or above ``directory`` (by content)."""
        return [("status", path) for path in typos_candidates()] + [
            ("content", path) for path in typos_config_candidates(directory)
        ]

    def begin_batch(self, paths: Sequence[Path]) -> None:
        """Start typos over the batch; its findings are read when the first file needs them
        (so typos runs while the engine reads the file and the other rules' prefilters run)."""
        if self._pending is not None:
            self._pending[1].cancel()
        self._batch = {}
        self._clean_digests = set()
        self._batch_error = None
        with timing.timed("typos"):
            self._pending = (list(paths), start_typos_on_files(paths))

    def prepare_project(self, paths: Sequence[Path]) -> None:
        """Before worker processes start: wait for the batch's typos run (the engine begins
        one batch for every file of a parallel run), so that the workers, forked from this
        process, read its findings rather than each starting typos on its own files."""
        try:
            self._collect()
        except ConfigError as error:  # as in `prefilter`: check_file reports it
            self._batch_error = error

    def begin_text(self, path: Path, text: str) -> None:
        """Start typos on a text that is not a file on disk (stdin, an editor's buffer), so
        that it runs while the engine parses the text and the other rules run."""
        if self._pending_text is not None:
            self._pending_text[2].cancel()
            self._pending_text = None
        with suppress(ConfigError):  # if typos cannot start, check_file reports it
            self._pending_text = (path, _digest(text), start_typos_on_text(path, text))

    def begin_texts(self, items: Sequence[tuple[Path, str]]) -> None:
        """Start one typos run over every text a fix pass changed, so that re-checking
        them reads their misspellings from it instead of starting typos once per text."""
        if self._texts is not None:
            self._texts[1].cancel()
            self._texts = None
        if not items:
            return
        with suppress(ConfigError):  # if typos cannot start, check_file runs it per text
            pending = start_typos_on_texts(items)
            keys = {
                (items[index][0], _digest(items[index][1])): index
                for index in sorted(pending.included)
            }
            self._texts = (keys, pending)

    def _from_texts(self, path: Path, digest: str) -> list[Misspelling] | None:
        """The misspellings of ``path``'s text from ``begin_texts``' run, if it checked it
        and did not fail (a failure is reported by the per-text run that follows)."""
        if self._texts is None:
            return None
        index = self._texts[0].get((path, digest))
        if index is None:
            return None
        try:
            with timing.timed("typos"):
                return self._texts[1].result().get(index)
        except ConfigError:
            self._texts = None
            return None

    def _collect(self) -> None:
        """Wait for the batch's typos run; keep each file's misspellings by content."""
        if self._pending is None:
            return
        paths, pending = self._pending
        self._pending = None
        with timing.timed("typos"):
            found = pending.result()
        flagged: set[str] = set()
        for path in paths:
            try:
                data = path.read_bytes()
            except OSError:
                continue  # the engine reports the unreadable file
            if data.startswith(b"\xef\xbb\xbf"):
                continue  # typos' byte offsets and ours may differ: checked from text later
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # typos may skip it as binary: checked from text later
            digest = _digest(text)
            misspellings = found.get(path, [])
            self._batch[path] = (digest, misspellings)
            (flagged if misspellings else self._clean_digests).add(digest)
        self._clean_digests -= flagged

    def prefilter(self, text: str) -> bool:
        try:
            self._collect()
        except ConfigError as error:  # typos failed: check_file raises it, which ends the run
            self._batch_error = error
            return True
        return _digest(text) not in self._clean_digests

    def check_file(self) -> None:
        if self._batch_error is not None:
            raise self._batch_error
        self._collect()
        text = self.file.text
        known = self._batch.get(self.file.path)
        started, self._pending_text = self._pending_text, None
        if started is not None and started[:2] != (self.file.path, _digest(text)):
            started[2].cancel()
            started = None
        digest = _digest(text)
        batched = None
        if known is not None and known[0] == digest:
            misspellings = known[1]
        elif started is not None:
            misspellings = started[2].result()
        elif (batched := self._from_texts(self.file.path, digest)) is not None:
            misspellings = batched  # a file changed by a fix pass
        else:  # stdin, a file changed by a fix pass outside a batch, or not plain UTF-8
            misspellings = run_typos_on_text(self.file.path, text)
        if misspellings:
            # Placing a misspelling reads the tree and the project: only when there is one.
            from lint_rules.codemod.misspellings import Placer

            placer = Placer(self.file, self.renamed)
            for misspelling in misspellings:
                placed = placer.place(misspelling)
                if placed is not None:
                    self._report(placed)

    def _report(self, placed: Placed) -> None:
        correction = " or ".join(f"`{word}`" for word in placed.corrections) or "spelt otherwise"
        message = self.MESSAGE.format(
            typo=placed.typo, correction=correction, place=placed.place, note=placed.note
        )
        self.report((placed.start, placed.end), message, placed.fix)


def _digest(text: str) -> str:
    return quick.digest(text.encode("utf-8", errors="surrogatepass"))
