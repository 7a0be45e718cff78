"""LR003 protocol-conformance with our Session protocol and a protocol defined only here."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.conformance import parameter_changes
from lint_rules.analysis.declarations import Parameter
from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rules.protocol_conformance import ProtocolConformanceRule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

SESSION = '"agent_sessions.protocol:Session" = ["backends/**"]'
SESSION_SIGNATURE = "`async def pop_item(self) -> Item | None`"

# A protocol that exists only in this test: inherits members from a base protocol
# in another module, has keyword-only parameters, defaults and a ready-made method.
BASE = """
    from typing import Protocol

    class Closable(Protocol):
        async def close(self) -> None: ...
"""
STORE = """
    from typing import Protocol
    from base import Closable

    raise SystemExit("read, never imported")

    class Store(Closable, Protocol):
        name: str

        async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ...
        async def put(self, key: str, value: bytes, ttl: int = 60) -> None: ...
        async def delete(self, key: str) -> None: ...

        def describe(self) -> str:
            return f"store {self.name}"
"""
GOOD_STORE = """
    class MemoryStore:
        def __init__(self) -> None:
            self.name = "memory"

        async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ...
        async def put(self, key: str, value: bytes, ttl: int = 60) -> None: ...
        async def delete(self, key: str) -> None: ...
        async def close(self) -> None: ...
        def describe(self) -> str: ...
"""


def _write(path: Path, source: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")


def _configure(project: Path, *entries: str) -> None:
    (project / "pyproject.toml").write_text("[tool.lint_rules.protocols]\n" + "\n".join(entries))


def _lines(output: str) -> list[str]:
    return output.splitlines()[:-1]  # without the summary line


@pytest.fixture
def store_project(project: Path) -> Path:
    """A project declaring the test-only ``Store`` protocol, implementations under impl/."""
    _write(project / "base.py", BASE)
    _write(project / "store.py", STORE)
    _configure(project, '"store:Store" = ["impl/"]')
    return project


def test_session_subclass_of_the_abc_missing_pop_item_is_reported_at_the_class(
    project: Path, lint: Lint
) -> None:
    _configure(project, SESSION)
    _write(
        project / "backends" / "memory.py",
        """
        from agent_sessions.protocol import Item, SessionABC

        class MemorySession(SessionABC):
            def __init__(self, session_id: str) -> None:
                self.session_id = session_id

            async def get_items(self, limit: int | None = None) -> list[Item]: ...
            async def add_items(self, items: list[Item]) -> None: ...
            async def clear_session(self) -> None: ...
        """,
    )

    outcome = lint("check", "--no-cache")

    assert _lines(outcome.out) == [
        "backends/memory.py:4:1: LR003 `MemorySession` misses `pop_item`; the protocol "
        f"`agent_sessions.protocol.Session` declares {SESSION_SIGNATURE}"
    ]


def test_structural_session_with_a_sync_method_is_reported_at_the_def(
    project: Path, lint: Lint
) -> None:
    _configure(project, SESSION)
    _write(
        project / "backends" / "plain.py",
        """
        class PlainSession:
            session_id = "s"
            session_settings = None

            def get_items(self, limit=None): ...
            async def add_items(self, items): ...
            async def pop_item(self): ...
            async def clear_session(self): ...
        """,
    )

    outcome = lint("check", "--no-cache")

    assert _lines(outcome.out) == [
        "backends/plain.py:6:5: LR003 `PlainSession.get_items` is not async; the protocol "
        "`agent_sessions.protocol.Session` declares "
        "`async def get_items(self, limit: int | None = None) -> list[Item]`"
    ]


def test_session_attribute_never_assigned_is_missing(project: Path, lint: Lint) -> None:
    _configure(project, SESSION)
    _write(
        project / "backends" / "plain.py",
        """
        class PlainSession:
            session_settings = None

            async def get_items(self, limit=None): ...
            async def add_items(self, items): ...
            async def pop_item(self): ...
            async def clear_session(self): ...
        """,
    )

    outcome = lint("check", "--no-cache")

    assert _lines(outcome.out) == [
        "backends/plain.py:2:1: LR003 `PlainSession` misses `session_id`; the protocol "
        "`agent_sessions.protocol.Session` declares `session_id: str`"
    ]


def test_subclass_of_a_detected_abc_imported_relatively_is_an_implementation(
    project: Path, lint: Lint
) -> None:
    _write(project / "pkg" / "__init__.py", "")
    _write(
        project / "pkg" / "contract.py",
        """
        import abc
        from typing import Protocol

        class Reader(Protocol):
            def read(self, size: int = -1) -> bytes: ...
            def close(self) -> None: ...

        class ReaderBase(abc.ABC):
            @abc.abstractmethod
            def read(self, size: int = -1) -> bytes: ...

            @abc.abstractmethod
            def close(self) -> None: ...
        """,
    )
    _write(
        project / "pkg" / "files.py",
        """
        from .contract import ReaderBase

        class FileReader(ReaderBase):
            def read(self, size: int = -1) -> bytes: ...
        """,
    )
    _configure(project, '"pkg.contract:Reader" = ["pkg/"]')

    outcome = lint("check", "--no-cache")

    assert _lines(outcome.out) == [
        "pkg/files.py:4:1: LR003 `FileReader` misses `close`; the protocol "
        "`pkg.contract.Reader` declares `def close(self) -> None`"
    ]


def test_protocol_and_abc_named_through_package_re_exports_are_recognised(
    project: Path, lint: Lint
) -> None:
    _configure(project, '"agents.memory:Session" = ["backends/"]')
    _write(
        project / "backends" / "sdk.py",
        """
        import agents

        class SdkSession(agents.SessionABC):
            session_id = "s"
        """,
    )

    outcome = lint("check", "--no-cache")

    assert [line.split(" LR003 ")[1].split(";")[0] for line in _lines(outcome.out)] == [
        "`SdkSession` misses `get_items`",
        "`SdkSession` misses `add_items`",
        "`SdkSession` misses `pop_item`",
        "`SdkSession` misses `clear_session`",
    ]
    assert "the protocol `agents.memory.session.Session` declares" in outcome.out


def test_conforming_implementation_of_a_test_protocol_passes(
    store_project: Path, lint: Lint
) -> None:
    _write(store_project / "impl" / "memory.py", GOOD_STORE)

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_member_inherited_from_a_base_protocol_in_another_module_is_required(
    store_project: Path, lint: Lint
) -> None:
    # Not every method is there: the class is an implementation because it is used as one.
    use = "\n    def open_store() -> Store:\n        return MemoryStore()\n"
    source = "\n    from store import Store" + GOOD_STORE.replace("close", "shutdown") + use
    _write(store_project / "impl" / "memory.py", source)

    outcome = lint("check", "--no-cache")

    assert _lines(outcome.out) == [
        "impl/memory.py:3:1: LR003 `MemoryStore` misses `close`; the protocol `store.Store` "
        "declares `async def close(self) -> None`"
    ]


def test_explicit_subclass_inherits_the_protocols_ready_made_method(
    store_project: Path, lint: Lint
) -> None:
    source = GOOD_STORE.replace("class MemoryStore:", "class MemoryStore(Store):")
    source = source.replace("        def describe(self) -> str: ...\n", "")
    _write(store_project / "impl" / "memory.py", "\n    from store import Store" + source)

    assert lint("check", "--no-cache").out == "All checks passed!\n"


GET = "async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ..."


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        ("async def get(self, name, *, default=None): ...", "renames parameter `key` to `name`"),
        ("async def get(self, key, *, fallback=None): ...", "misses keyword-only parameter"),
        ("async def get(self, key, /, *, default=None): ...", "makes parameter `key` positional"),
        ("async def get(self, key, *, default=b''): ...", "changes the default of parameter"),
        ("async def get(self, key, *, default): ...", "drops the default of parameter `default`"),
        ("async def get(self, key, strict, *, default=None): ...", "adds required parameter"),
        ("def get(self, key, *, default=None): ...", "is not async"),
    ],
)
def test_changed_method_is_reported_at_its_def_with_the_expected_signature(
    store_project: Path, lint: Lint, changed: str, problem: str
) -> None:
    source = GOOD_STORE.replace(GET, changed)
    _write(store_project / "impl" / "memory.py", source)

    [line] = _lines(lint("check", "--no-cache").out)

    assert line.startswith("impl/memory.py:6:5: LR003 `MemoryStore.get` ")
    assert problem in line
    assert line.endswith(
        "`store.Store` declares "
        "`async def get(self, key: str, *, default: bytes | None = None) -> bytes | None`"
    )


def test_class_with_a_base_it_cannot_read_is_not_said_to_miss_members(
    store_project: Path, lint: Lint
) -> None:
    _write(
        store_project / "impl" / "mixed.py",
        """
        from elsewhere import Mixin

        class MixedStore(Mixin):  # `name` may come from Mixin
            async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ...
            async def put(self, key: str, value: bytes, ttl: int = 30) -> None: ...
            async def delete(self, key: str) -> None: ...
            async def close(self) -> None: ...
            def describe(self) -> str: ...
        """,
    )

    outcome = lint("check", "--no-cache")

    assert [line.split(" LR003 ")[1].split(";")[0] for line in _lines(outcome.out)] == [
        "`MixedStore.put` changes the default of parameter `ttl` to `30`"
    ]


def test_members_from_a_base_class_in_the_same_file_count(store_project: Path, lint: Lint) -> None:
    _write(
        store_project / "impl" / "layered.py",
        """
        class Base:
            name = "base"
            async def close(self) -> None: ...
            def describe(self) -> str: ...

        class LayeredStore(Base):
            async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ...
            async def put(self, key: str, value: bytes, ttl: int = 60) -> None: ...
            async def delete(self, key: str) -> None: ...
        """,
    )

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_warm_run_rechecks_implementations_when_the_protocol_changes(
    store_project: Path, lint: Lint
) -> None:
    _write(store_project / "impl" / "memory.py", GOOD_STORE)
    assert lint("check").code == 0  # fills the cache
    base = store_project / "base.py"
    base.write_text(base.read_text().replace("close(self)", "close(self, force: bool)"))

    outcome = lint("check")

    assert "`MemoryStore.close` misses parameter `force`" in outcome.out


def test_class_defining_half_the_methods_or_fewer_is_not_an_implementation(
    store_project: Path, lint: Lint
) -> None:
    _write(
        store_project / "impl" / "cache.py",
        """
        class Cache:
            def get(self, key): ...
            def put(self, key, value): ...
        """,
    )

    assert lint("check", "--no-cache").code == 0


def test_files_outside_the_configured_paths_are_not_checked(
    store_project: Path, lint: Lint
) -> None:
    _write(store_project / "tests" / "fake.py", GOOD_STORE.replace("async def get", "def get"))

    assert lint("check", "--no-cache").code == 0


def test_file_without_the_protocols_names_is_never_parsed(store_project: Path) -> None:
    _write(store_project / "impl" / "memory.py", GOOD_STORE)
    _write(store_project / "impl" / "other.py", "def get(): ...\n")
    config = load_config(store_project, [ProtocolConformanceRule])

    result = run(
        [store_project / "impl"], config, [ProtocolConformanceRule], RunOptions(use_cache=False)
    )

    assert {r.path.name: r.parsed for r in result.files} == {"memory.py": True, "other.py": False}


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ('"store:Missing" = ["impl/"]', "store: no class 'Missing'"),
        ('"base:Closable" = "impl/"', "expected a list of glob strings"),
        ('"store" = ["impl/"]', 'expected "module:Protocol"'),
        ('"nowhere:Store" = ["impl/"]', "module 'nowhere' not found"),
        ('"lint_rules.rule:Rule" = ["impl/"]', "lint_rules.rule:Rule is not a Protocol"),
    ],
)
def test_bad_protocol_is_a_configuration_error_naming_it(
    store_project: Path, lint: Lint, entry: str, complaint: str
) -> None:
    _configure(store_project, entry)

    outcome = lint("check", "--no-cache")

    assert outcome.code == 2
    assert "'protocols'" in outcome.err
    assert complaint in outcome.err


def test_star_parameters_absorb_missing_ones() -> None:
    expected = (Parameter("key", "positional or keyword", None),)
    absorbing = (Parameter("args", "*args", None), Parameter("kwargs", "**kwargs", None))

    assert parameter_changes(expected, absorbing) == []


# -- dunder members and nested classes ----------------------------------------------------------

# A protocol of dunders, with what a Protocol body holds that no implementation is asked for.
RESOURCE = """
    from collections.abc import Iterator
    from typing import Any, ClassVar, Protocol

    class Resource(Protocol):
        __slots__ = ()
        __match_args__: tuple[str, ...]
        __parameters__: tuple[Any, ...]
        __protocol_attrs__: set[str]

        def __init__(self, name: str) -> None: ...
        def __init_subclass__(cls, **kwargs: Any) -> None: ...
        def __class_getitem__(cls, item: Any) -> Any: ...
        @classmethod
        def __subclasshook__(cls, other: type) -> bool: ...

        def __call__(self, event: str, *, retries: int = 3) -> None: ...
        def __len__(self) -> int: ...
        def __iter__(self) -> Iterator[str]: ...
        async def __aenter__(self) -> "Resource": ...
        async def __aexit__(self, *exc: object) -> None: ...
        def __eq__(self, other: object) -> bool: ...
"""
GOOD_RESOURCE = """
    from resource import Resource

    class {name}(Resource):
        def __init__(self, size: int, label: str) -> None: ...
        def __init_subclass__(cls, *, strict: bool) -> None: ...
        def __call__(self, event: str, *, retries: int = 3) -> None: ...
        def __len__(self) -> int: ...
        def __iter__(self): ...
        async def __aenter__(self): ...
        async def __aexit__(self, *exc: object) -> None: ...
"""


@pytest.fixture
def resource_project(project: Path) -> Path:
    _write(project / "resource.py", RESOURCE)
    _configure(project, '"resource:Resource" = ["impl/"]')
    return project


def _problems(output: str) -> list[str]:
    """``path:line:col: owner problem`` of each finding, without the protocol's part."""
    return [
        line.split(" LR003 ")[0] + " " + line.split(" LR003 ")[1].split(";")[0]
        for line in _lines(output)
    ]


def test_conforming_dunders_pass_and_protocol_machinery_is_not_required(
    resource_project: Path, lint: Lint
) -> None:
    # No __init__, __slots__, __match_args__, __class_getitem__, __init_subclass__,
    # __subclasshook__, __parameters__, __protocol_attrs__; __eq__ comes from object.
    # A protocol of dunders only is implemented by its subclasses: any class has a
    # `__call__` or an `__iter__`, and `Handler` does not subclass `Resource`.
    not_one = "\n    class Handler:\n        def __call__(self, request): ...\n"
    _write(resource_project / "impl" / "good.py", GOOD_RESOURCE.format(name="Pool") + not_one)

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_dunder_members_are_checked_like_any_other(resource_project: Path, lint: Lint) -> None:
    _write(
        resource_project / "impl" / "bad.py",
        """
        from resource import Resource

        class Pool(Resource):
            def __call__(self, name: str, *, retries: int = 3) -> None: ...
            def __iter__(self): ...
            def __aenter__(self): ...
            async def __aexit__(self, *exc: object) -> None: ...
            def __eq__(self, other, strict): ...
        """,
    )

    outcome = lint("check", "--no-cache")

    assert _problems(outcome.out) == [
        "impl/bad.py:4:1: `Pool` misses `__len__`",
        "impl/bad.py:5:5: `Pool.__call__` renames parameter `event` to `name`",
        "impl/bad.py:7:5: `Pool.__aenter__` is not async",
        "impl/bad.py:9:5: `Pool.__eq__` adds required parameter `strict`",
    ]
    assert "declares `def __len__(self) -> int`" in outcome.out


def test_async_iterator_protocol_asks_for_its_dunders(project: Path, lint: Lint) -> None:
    _write(
        project / "stream.py",
        """
        from typing import Protocol

        class Stream(Protocol):
            def __aiter__(self) -> "Stream": ...
            async def __anext__(self) -> bytes: ...
        """,
    )
    _configure(project, '"stream:Stream" = ["impl/"]')
    _write(
        project / "impl" / "chunks.py",
        """
        from stream import Stream

        class Chunks(Stream):
            def __anext__(self) -> bytes: ...
        """,
    )

    assert _problems(lint("check", "--no-cache").out) == [
        "impl/chunks.py:4:1: `Chunks` misses `__aiter__`",
        "impl/chunks.py:5:5: `Chunks.__anext__` is not async",
    ]


def test_classes_nested_in_functions_and_classes_are_checked_by_qualified_name(
    store_project: Path, lint: Lint
) -> None:
    def indented(source: str, depth: int) -> str:
        return textwrap.indent(textwrap.dedent(source), " " * depth)

    broken = GOOD_STORE.replace("async def delete", "def delete")
    _write(
        store_project / "impl" / "nested.py",
        "def make_store():\n"
        + indented(broken, 4)
        + "    return MemoryStore\n\n\n"
        + "class Outer:\n"
        + indented(GOOD_STORE.replace("ttl: int = 60", "ttl: int = 5"), 4)
        + "\n\nasync def deep():\n    class Wrapper:\n        def method(self):\n"
        + indented(GOOD_STORE.replace("async def close", "def close"), 12),
    )

    outcome = lint("check", "--no-cache")

    assert _problems(outcome.out) == [
        "impl/nested.py:9:9: `make_store.<locals>.MemoryStore.delete` is not async",
        "impl/nested.py:22:9: `Outer.MemoryStore.put` changes the default of parameter `ttl` "
        "to `5`",
        "impl/nested.py:39:17: `deep.<locals>.Wrapper.method.<locals>.MemoryStore.close` "
        "is not async",
    ]


def test_nested_class_sees_the_bases_of_its_enclosing_function(
    store_project: Path, lint: Lint
) -> None:
    _write(
        store_project / "impl" / "fake.py",
        """
        from store import Store

        def test_store():
            class Half:
                name = "fake"
                async def close(self) -> None: ...

            class FakeStore(Half, Store):
                async def get(self, key: str, *, default: bytes | None = None) -> bytes | None: ...
                async def put(self, key: str, value: bytes, ttl: int = 60) -> None: ...

            class Other:  # subclasses nothing, defines too little: not an implementation
                async def put(self, key: str) -> None: ...
        """,
    )

    assert _problems(lint("check", "--no-cache").out) == [
        "impl/fake.py:9:5: `test_store.<locals>.FakeStore` misses `delete`"
    ]


def test_common_dunders_alone_do_not_make_a_class_an_implementation(
    project: Path, lint: Lint
) -> None:
    _write(
        project / "reader.py",
        """
        from collections.abc import Iterator
        from typing import Protocol

        class LineReader(Protocol):
            def read_line(self) -> str: ...
            def __iter__(self) -> Iterator[str]: ...
            def __len__(self) -> int: ...
        """,
    )
    _configure(project, '"reader:LineReader" = ["impl/"]')
    _write(
        project / "impl" / "readers.py",
        """
        class Bag:  # a container, not a reader: its dunders are not evidence
            def __iter__(self, reverse): ...
            def __len__(self) -> int: ...

        class LineCounter:  # without `__len__`, not a LineReader
            def read_line(self) -> str: ...
            def __iter__(self, reverse): ...

        class FileReader:
            def read_line(self) -> str: ...
            def __iter__(self, reverse): ...
            def __len__(self) -> int: ...
        """,
    )

    assert _problems(lint("check", "--no-cache").out) == [
        "impl/readers.py:12:5: `FileReader.__iter__` adds required parameter `reverse`",
    ]
