from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.analysis.conformance import (
    OPTION,
    configured_targets,
    judge,
    matching_targets,
)
from lint_rules.analysis.declarations import file_source
from lint_rules.config import find_pyproject
from lint_rules.rule import Invalid, Rule, RuleOptions, Valid

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project

_SESSION = {"protocols": {"agent_sessions.protocol:Session": ["*.py"]}}


class ProtocolConformanceRule(Rule):
    """Flags a class that implements a configured Protocol but does not conform to it.

    ## What it does
    Reads each Protocol named in `[tool.lint_rules.protocols]` from its module's
    source (never importing it): its methods (async or not, parameter names,
    kinds and defaults, return annotations), its attributes, and the members it
    inherits from base protocols. In the files the option lists, a class is an
    implementation of a protocol only when it is meant as one:

    - it subclasses the protocol (or an abstract base class beside it that declares
      all its methods, such as `SessionABC` beside `Session`), directly or through
      classes of its file; or
    - an instance of it is assigned, passed or returned in its file where the
      protocol is annotated: `x: Driver = Chrome()`, `x: Driver` then
      `x = Chrome()`, `return Chrome()` in a `def ... -> Driver`, `run(Chrome())` or
      `run(driver=Chrome())` for a `def run(driver: Driver)` of the file (a
      subclass of such a class of the file is meant as one too: mypy checks its
      overrides against its base); or
    - it defines (itself or through classes of its file) every method of the
      protocol, dunders included (a protocol whose methods are all dunders is
      implemented only by the classes that subclass it or are used as it:
      `__call__`, `__iter__` or `__len__` are on too many classes to tell).

    A class that defines some of the methods (two matching names, or a stream's
    `send` and `aclose` without the protocol's `__aenter__`) implements nothing;
    attributes are not required to tell (they may be set where the rule cannot
    see), and are reported when missing.

    A class meant as an implementation by subclassing or use is judged against each
    such protocol. A class that fits several protocols by its methods (twins: a sync
    `Driver` and an `AsyncDriver` with the same method names) is judged against
    those it can be called as: not against a twin whose methods it cannot be called
    as (sync for async) when it can be called as another protocol with those
    method names. When it can be called as none of them, it is reported against the
    closest (the fewest findings), and the message names them all.

    For each implementation it reports every missing member (at the class), and at
    the `def`: a method whose result a caller of the protocol's cannot use alike,
    every parameter renamed, of another kind (one finding naming the change: made
    keyword-only, positional-only), missing, added as required, or with another
    default, and a return type that is not the protocol's.

    Sync or async is judged by what a caller can do with the result, as mypy does:
    an `async def` without `yield` (a coroutine) or a `def -> Coroutine[...]`
    satisfies `async def`; either, or a `def -> Awaitable[T]`, satisfies
    `def f() -> Awaitable[T]`; an async generator (`async def` with `yield`) or a
    `def -> AsyncIterator[T]` satisfies `def f() -> AsyncIterator[T]` (and
    `AsyncIterable`, `AsyncGenerator`). Return types are compared where both sides
    are annotated and name classes: `-> bytes` for `-> Screenshot` is reported, a
    subclass of the protocol's return type is not (nor `int` for `float`, as for
    mypy), also through an alias the module declares (`Screenshot: TypeAlias =
    ScreenshotParam`); a TypedDict is reported only for a builtin (another TypedDict
    may have its keys); a TypeVar, an imported alias, a Protocol, a `typing` or
    `collections.abc` type other than the same one, a class with a base that cannot
    be read, and the
    arguments of generics (`list[object]` for `list[Item]`) are left to
    `python -m lint_rules protocols`.

    Dunder members the protocol declares (`__call__`, `__iter__`, `__aiter__`,
    `__len__`, `__aenter__`...) are members like any other. Not asked of an
    implementation: what a class body or the Protocol machinery defines
    (`__init__`, `__new__`, `__slots__`, `__doc__`, `__module__`, `__annotations__`,
    `__dict__`, `__weakref__`, `__class_getitem__`, `__init_subclass__`,
    `__subclasshook__`, `__parameters__`, `__protocol_attrs__`...), as for mypy; and
    what every class inherits from `object` (`__eq__`, `__hash__`, `__repr__`...) is
    never missing, though a class's own definition of it is checked. Classes nested
    in a class or defined in a function (a test's fake, a factory's class) are
    checked like module-level ones and named by their qualified name
    (`Outer.Inner`, `make.<locals>.Fake`); their bases are read from the module's
    imports and classes and from the classes of the enclosing bodies, not from an
    import inside the function (such a base counts as unreadable).

    ## Why is this bad?
    A structural protocol is satisfied by shape alone: nothing fails when an
    implementation drifts from it until a caller awaits a sync method, passes
    `limit=` to a parameter renamed `n`, or calls the member that was never
    written. mypy only notices where an implementation is passed as the
    protocol in checked code; this rule checks every implementation where it is
    written, with the protocol's own signature in the message.

    ## Example
    ```python
    class RedisSession(SessionABC):
        async def get_items(self, n: int | None = None) -> tuple[Item, ...]: ...
        def add_items(self, items: list[Item]) -> None: ...
        async def clear_session(self) -> None: ...
    ```

    ## Use instead
    ```python
    class RedisSession(SessionABC):
        session_id: str
        session_settings: SessionSettings | None = None

        async def get_items(self, limit: int | None = None) -> list[Item]: ...
        async def add_items(self, items: list[Item]) -> None: ...
        async def pop_item(self) -> Item | None: ...
        async def clear_session(self) -> None: ...
    ```

    ## Fix safety
    None: what a conforming implementation does cannot be written for it.
    Missing members are not reported for a class with a base class the rule
    cannot read (it may inherit them); its own methods are still checked. Run
    `python -m lint_rules protocols` for mypy's full check of types.

    ## Options
    `[tool.lint_rules.protocols]`: a table of `"module:Protocol" = ["glob", ...]`;
    the globs (gitignore syntax, relative to the directory of pyproject.toml) say
    which files hold implementations. The module is found in the project root
    (then its `src/`, the `src/*/` directories and nested projects under it, then the
    import path) and read, never imported; a missing module or class, or a class that
    is not a Protocol, is a configuration error.
    """

    CODE = "LR003"
    NAME = "protocol-conformance"
    SEVERITY = "error"
    MESSAGE = "`{cls}` {problem}; the protocol `{protocol}` declares `{expected}`"
    OPTIONS = (OPTION,)

    VALID = (
        Valid(
            """
            from agent_sessions.protocol import SessionABC

            class MemorySession(SessionABC):
                def __init__(self, session_id: str) -> None:
                    self.session_id = session_id
                    self.items: list[dict[str, object]] = []

                async def get_items(self, limit: int | None = None) -> list[dict[str, object]]:
                    return self.items[-limit:] if limit else list(self.items)

                async def add_items(self, items: list[dict[str, object]]) -> None:
                    self.items.extend(items)

                async def pop_item(self) -> dict[str, object] | None:
                    return self.items.pop() if self.items else None

                async def clear_session(self) -> None:
                    self.items.clear()
            """,
            options=_SESSION,
        ),
        Valid(
            """
            class Cache:  # two of the protocol's method names: it implements nothing
                async def get_items(self, key: str) -> list[str]: ...
                def clear_session(self) -> int: ...
            """,
            options=_SESSION,
        ),
        Valid(
            """
            from collections.abc import Coroutine
            from typing import Any

            class ThreadSession:  # what a caller can do with each result is the protocol's
                session_id = "s"
                session_settings = None

                def get_items(
                    self, limit: int | None = None
                ) -> Coroutine[Any, Any, list[dict[str, object]]]: ...
                async def add_items(self, items: list[dict[str, object]]) -> None: ...
                async def pop_item(self) -> dict[str, object] | None: ...
                async def clear_session(self) -> None: ...
            """,
            options=_SESSION,
        ),
    )
    INVALID = (
        Invalid(
            """
            from agent_sessions.protocol import SessionABC

            class MemorySession(SessionABC):
                session_id: str
                session_settings = None

                async def get_items(self, limit: int | None = None) -> list[object]: ...
                async def add_items(self, items: list[object]) -> None: ...
                async def clear_session(self) -> None: ...
            """,
            message=(
                "`MemorySession` misses `pop_item`; the protocol "
                "`agent_sessions.protocol.Session` declares "
                "`async def pop_item(self) -> Item | None`"
            ),
            line=4, column=1, end_line=4, end_column=20,
            replacement=None,
            options=_SESSION,
        ),
        Invalid(
            """
            class MemorySession:
                session_id: str
                session_settings = None

                def get_items(self, limit: int | None = None) -> list[object]: ...
                async def add_items(self, items: list[object]) -> None: ...
                async def pop_item(self) -> dict[str, object] | None: ...
                async def clear_session(self) -> None: ...
            """,
            message=(
                "`MemorySession.get_items` is not async; the protocol "
                "`agent_sessions.protocol.Session` declares `async def get_items(self, "
                "limit: int | None = None) -> list[Item]`"
            ),
            line=6, column=5, end_line=6, end_column=18,
            replacement=None,
            options=_SESSION,
        ),
        Invalid(
            """
            class MemorySession:
                session_id: str
                session_settings = None

                async def get_items(self, n: int | None = None) -> list[object]: ...
                async def add_items(self, items: list[object]) -> None: ...
                async def pop_item(self) -> dict[str, object] | None: ...
                async def clear_session(self) -> None: ...
            """,
            message=(
                "`MemorySession.get_items` renames parameter `limit` to `n`; the protocol "
                "`agent_sessions.protocol.Session` declares `async def get_items(self, "
                "limit: int | None = None) -> list[Item]`"
            ),
            line=6, column=5, end_line=6, end_column=24,
            replacement=None,
            options=_SESSION,
        ),
        Invalid(
            """
            class MemorySession:
                session_id: str
                session_settings = None

                async def get_items(self, *, limit: int | None = None) -> list[object]: ...
                async def add_items(self, items: list[object]) -> None: ...
                async def pop_item(self) -> dict[str, object] | None: ...
                async def clear_session(self) -> None: ...
            """,
            message=(
                "`MemorySession.get_items` makes parameter `limit` keyword-only; the protocol "
                "`agent_sessions.protocol.Session` declares `async def get_items(self, "
                "limit: int | None = None) -> list[Item]`"
            ),
            line=6, column=5, end_line=6, end_column=24,
            replacement=None,
            options=_SESSION,
        ),
        Invalid(
            """
            class MemorySession:
                session_id: str
                session_settings = None

                async def get_items(self, limit: int | None = None) -> tuple[object, ...]: ...
                async def add_items(self, items: list[object]) -> None: ...
                async def pop_item(self) -> dict[str, object] | None: ...
                async def clear_session(self) -> None: ...
            """,
            message=(
                "`MemorySession.get_items` returns `tuple[object, ...]`, not `list[Item]`; "
                "the protocol `agent_sessions.protocol.Session` declares `async def "
                "get_items(self, limit: int | None = None) -> list[Item]`"
            ),
            line=6, column=5, end_line=6, end_column=24,
            replacement=None,
            options=_SESSION,
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions, project: Project | None = None) -> None:
        super().__init__(options)
        if project is None:
            self.targets = configured_targets(options)
        else:  # once per run, and remembered with the validation (``analysis.remembered``)
            key = ("LR003", "targets", repr(options.get("protocols")))
            self.targets = project.shared(
                key, lambda: configured_targets(options, project.declarations)
            )
        self._root: Path | None = None

    def prefilter(self, text: str) -> bool:
        return any(target.admits(text) for target in self.targets)

    def dependencies(self) -> list[Path]:
        return sorted({path for target in self.targets for path in target.sources})

    def check_file(self) -> None:
        matching = matching_targets(self.targets, self.file.path, self.root)
        if not matching:
            return
        source = file_source(
            self.file.path.resolve(), self.file.ast_tree, self.file.project.declarations
        )
        for judgement in judge(source, [target.protocol for target in matching]):
            protocol = judgement.implementation.protocol.qualified_name
            closest = ""
            if judgement.candidates:
                closest = (
                    " (the closest of the protocols it could implement: it matches none of "
                    + ", ".join(f"`{name}`" for name in judgement.candidates)
                    + ")"
                )
            for problem in judgement.problems:
                start = self.file.offset(problem.node.lineno, problem.node.col_offset)
                name = self.file.definition_name(problem.node)
                name_start = name[0] if name is not None else start
                message = self.MESSAGE.format(
                    cls=problem.owner,
                    problem=problem.text,
                    protocol=protocol,
                    expected=problem.expected,
                )
                self.report((start, name_start + len(problem.node.name)), message + closest)

    @property
    def root(self) -> Path:
        """The project root the globs are relative to: where the engine found its config."""
        if self.file.root is not None:  # the root of the configuration that governs the file
            return self.file.root
        if self._root is None:
            pyproject = find_pyproject(Path.cwd())
            self._root = pyproject.parent if pyproject is not None else Path.cwd()
        return self._root
