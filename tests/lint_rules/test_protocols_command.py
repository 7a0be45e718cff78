"""``lint_rules protocols``: mypy over generated probes, on broken implementations and here."""

from __future__ import annotations

import json
import os
import textwrap
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest

from lint_rules import protocols
from lint_rules.cli import main
from lint_rules.config import load_config
from lint_rules.protocols import check_protocols
from lint_rules.rules import ALL_RULES

REPOSITORY = Path(__file__).resolve().parents[2]

PROTOCOL = """
    from typing import Protocol

    class Store(Protocol):
        session_id: str

        async def get_items(self, limit: int | None = None) -> list[str]: ...
        async def add_items(self, items: list[str]) -> None: ...
        async def pop_item(self) -> str | None: ...
        async def clear_session(self, *, hard: bool = False) -> None: ...
"""
GOOD = """
    class {name}:
        session_id = "s"

        async def get_items(self, limit: int | None = None) -> list[str]:
            return []

        async def add_items(self, items: list[str]) -> None:
            return None

        async def pop_item(self) -> str | None:
            return None

        async def clear_session(self, *, hard: bool = False) -> None:
            return None
"""
GET_ITEMS = "async def get_items(self, limit: int | None = None) -> list[str]:"
BROKEN = {
    # Without one of the methods, a class is an implementation only where it is used as one.
    "missing_pop.py": GOOD.format(name="MissingPop").replace(
        "async def pop_item(self) -> str | None:\n            return None\n", ""
    )
    + "\n    from contract import Store\n\n    def open_store() -> Store:\n"
    + "        return MissingPop()\n",
    "sync_get.py": GOOD.format(name="SyncGet").replace(GET_ITEMS, GET_ITEMS.removeprefix("async ")),
    "renamed_keyword.py": GOOD.format(name="RenamedKeyword").replace("hard: bool", "force: bool"),
    "renamed_positional.py": GOOD.format(name="RenamedPositional").replace(
        "limit: int | None = None", "n: int | None = None"
    ),
    "wrong_return.py": GOOD.format(name="WrongReturn").replace("list[str]:", "list[int]:"),
    "good.py": GOOD.format(name="Good"),
    "separators.py": 'NOTE = "form\f feed, line\u2028separator"\n'
    + textwrap.dedent(GOOD.format(name="AfterSeparators").replace("list[str]:", "list[int]:")),
}

# "\u00c1" is one byte in cp1252, and its two UTF-8 bytes do not decode as cp1252.
CP1252 = "# -*- coding: cp1252 -*-\nGREETING = '\u00c1 bient\u00f4t'\n" + textwrap.dedent(
    GOOD.format(name="Cp1252").replace("list[str]:", "list[int]:")
)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def _run(directory: Path, *arguments: str) -> Run:
    out, err = StringIO(), StringIO()
    previous = os.getcwd()
    os.chdir(directory)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            # mypy's own run; test_protocols_daemon.py runs the daemon.
            code = main(["protocols", "--no-daemon", *arguments], ALL_RULES)
    finally:
        os.chdir(previous)
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def broken_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A strict-mypy project with one protocol and broken implementations of it."""
    root = tmp_path_factory.mktemp("protocols")
    (root / "pyproject.toml").write_text(
        '[tool.mypy]\nstrict = true\n\n[tool.lint_rules.protocols]\n"contract:Store" = ["impls/"]\n'
    )
    (root / "contract.py").write_text(textwrap.dedent(PROTOCOL))
    (root / "impls").mkdir()
    for name, source in BROKEN.items():
        (root / "impls" / name).write_text(textwrap.dedent(source))
    (root / "impls" / "cp1252.py").write_bytes(CP1252.encode("cp1252"))
    return root


@pytest.fixture(scope="module")
def json_run(broken_project: Path) -> dict[str, dict[str, object]]:
    """The JSON findings of one ``protocols`` run, by file name."""
    run = _run(broken_project, "--format", "json")
    assert run.code == 1, run.err
    return {Path(str(item["path"])).name: item for item in json.loads(run.out)}


def test_missing_member_is_reported_at_the_class_with_mypys_explanation(
    json_run: dict[str, dict[str, object]],
) -> None:
    finding = json_run["missing_pop.py"]

    assert (finding["code"], finding["line"], finding["column"]) == ("LR100", 2, 1)
    assert finding["message"] == (
        "`MissingPop` is not a `contract.Store` for mypy: Incompatible return value type "
        '(got "MissingPop", expected "Store"); "MissingPop" is missing following "Store" '
        "protocol member: pop_item"
    )


def test_sync_method_is_reported_with_expected_and_got(
    json_run: dict[str, dict[str, object]],
) -> None:
    message = str(json_run["sync_get.py"]["message"])

    assert "Expected: def get_items(self, limit: int | None = ...) -> Coroutine[" in message
    assert "Got: def get_items(self, limit: int | None = ...) -> list[str]" in message


def test_renamed_keyword_only_parameter_is_reported(
    json_run: dict[str, dict[str, object]],
) -> None:
    message = str(json_run["renamed_keyword.py"]["message"])

    assert "Expected: def clear_session(self, *, hard: bool = ...)" in message
    assert "Got: def clear_session(self, *, force: bool = ...)" in message


def test_wrong_return_type_is_reported(json_run: dict[str, dict[str, object]]) -> None:
    message = str(json_run["wrong_return.py"]["message"])

    assert (
        "Got: def get_items(self, limit: int | None = ...) -> Coroutine[Any, Any, list[int]]"
        in (message)
    )


def test_string_with_a_form_feed_and_a_line_separator_is_probed_intact(
    json_run: dict[str, dict[str, object]],
) -> None:
    finding = json_run["separators.py"]

    assert (finding["line"], finding["column"]) == (3, 1)
    assert str(finding["message"]).startswith("`AfterSeparators` is not a `contract.Store`")


def test_file_in_another_encoding_is_probed_in_that_encoding(
    json_run: dict[str, dict[str, object]],
) -> None:
    finding = json_run["cp1252.py"]

    assert (finding["line"], finding["column"]) == (4, 1)
    assert "list[int]" in str(finding["message"])


def test_renamed_positional_parameter_passes_mypy_and_is_left_to_lr003(
    json_run: dict[str, dict[str, object]],
) -> None:
    # mypy ignores the names of positional parameters when matching a protocol.
    assert "renamed_positional.py" not in json_run
    assert "good.py" not in json_run


def test_implementation_files_are_not_modified(broken_project: Path) -> None:
    for name, source in BROKEN.items():
        assert (broken_project / "impls" / name).read_text() == textwrap.dedent(source)


@pytest.mark.parametrize("output_format", ["text", "github", "sarif"])
def test_every_output_format_reports_lr100(broken_project: Path, output_format: str) -> None:
    run = _run(broken_project, "--format", output_format)

    assert run.code == 1
    if output_format == "text":
        assert "impls/missing_pop.py:2:1: LR100 `MissingPop` is not a" in run.out
        assert run.out.endswith(" implementations of 1 protocol.\nFound 6 errors.\n")
    elif output_format == "github":
        assert run.out.count("::error file=impls/") == 6
        assert run.out.count("title=LR100::") == 6
    else:
        sarif_run = json.loads(run.out)["runs"][0]
        results = sarif_run["results"]
        assert sorted(result["ruleId"] for result in results) == ["LR100"] * 6
        assert {result["level"] for result in results} == {"error"}
        assert sarif_run["columnKind"] == "unicodeCodePoints"
        assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == broken_project.as_uri() + "/"
        locations = [result["locations"][0]["physicalLocation"] for result in results]
        assert {location["artifactLocation"]["uriBaseId"] for location in locations} == {
            "%SRCROOT%"
        }
        assert "impls/missing_pop.py" in {loc["artifactLocation"]["uri"] for loc in locations}


def test_project_without_configured_protocols_says_so_and_passes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.lint_rules]\n")

    run = _run(tmp_path)

    assert (run.code, run.out) == (
        0,
        "No protocols configured ([tool.lint_rules.protocols]): nothing to check.\n",
    )
    as_json = _run(tmp_path, "--format", "json")
    assert (as_json.code, json.loads(as_json.out)) == (0, [])  # stdout stays parsable
    assert "lint-rules: note: No protocols configured" in as_json.err


def test_unknown_protocol_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.lint_rules.protocols]\n"nowhere:P" = ["*"]\n')

    run = _run(tmp_path)

    assert run.code == 2
    assert "module 'nowhere' not found" in run.err


def test_every_session_class_of_this_repository_passes() -> None:
    previous = os.getcwd()
    os.chdir(REPOSITORY)
    try:
        config = load_config(REPOSITORY, ALL_RULES)
        assert config.rule_options.get("protocols"), "this repository configures its protocol"
        assert check_protocols(config) == []
    finally:
        os.chdir(previous)


def _store_project(root: Path, files: dict[str, str]) -> Path:
    """A strict-mypy project whose ``Store`` implementations live in ``src/shop/``."""
    (root / "pyproject.toml").write_text(
        '[tool.mypy]\nstrict = true\nmypy_path = "src"\n\n'
        '[tool.lint_rules.protocols]\n"shop.contract:Store" = ["src/shop/impls/"]\n'
    )
    package = root / "src" / "shop"
    (package / "impls").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "impls" / "__init__.py").write_text("")
    (package / "contract.py").write_text(textwrap.dedent(PROTOCOL))
    for name, source in files.items():
        (package / "impls" / name).write_text(textwrap.dedent(source))
    return root


def _probe_modules(root: Path) -> dict[str, int]:
    """The probe modules of the last run, by name, with their modification times."""
    directory = root / ".lint_rules_cache" / "protocols" / "probes"
    return {path.name: path.stat().st_mtime_ns for path in directory.glob("*.py")}


def test_second_run_after_an_edit_reports_exactly_the_broken_class(tmp_path: Path) -> None:
    names = ["first", "second", "third"]
    root = _store_project(tmp_path, {f"{n}.py": GOOD.format(name=n.title()) for n in names})
    passed = "Checked 3 implementations of 1 protocol.\nAll checks passed!\n"
    assert _run(root) == Run(0, passed, "")
    probes = _probe_modules(root)
    assert len(probes) == 3, "one probe module per implementation file"
    assert (root / ".lint_rules_cache" / "protocols" / "mypy").is_dir()

    second = root / "src" / "shop" / "impls" / "second.py"
    second.write_text(second.read_text().replace("list[str]:", "list[bytes]:"))
    run = _run(root)

    assert run.code == 1, run.err
    assert run.out.startswith(
        "src/shop/impls/second.py:2:1: LR100 `Second` is not a `shop.contract.Store` for mypy"
    )
    assert "list[bytes]" in run.out
    assert run.out.endswith("Found 1 error.\n")
    assert _probe_modules(root) == probes, "unchanged probe modules are not rewritten"


def test_probe_imports_the_class_from_its_package_module(tmp_path: Path) -> None:
    root = _store_project(tmp_path, {"memory.py": GOOD.format(name="Memory")})
    assert _run(root).code == 0

    (probe,) = (root / ".lint_rules_cache" / "protocols" / "probes").glob("*.py")
    text = probe.read_text()
    assert "from shop.contract import Store as _lint_rules_protocol_0" in text
    assert "from shop.impls.memory import Memory as _lint_rules_impl_0" in text


def test_probe_module_of_a_removed_implementation_is_deleted(tmp_path: Path) -> None:
    root = _store_project(
        tmp_path, {"kept.py": GOOD.format(name="Kept"), "gone.py": GOOD.format(name="Gone")}
    )
    assert _run(root).code == 0
    assert len(_probe_modules(root)) == 2

    (root / "src" / "shop" / "impls" / "gone.py").unlink()

    assert _run(root).code == 0
    assert len(_probe_modules(root)) == 1


def test_cache_folder_is_ignored_by_git(tmp_path: Path) -> None:
    root = _store_project(tmp_path, {"memory.py": GOOD.format(name="Memory")})
    assert _run(root).code == 0

    assert (root / ".lint_rules_cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_class_nested_in_a_class_is_probed_through_its_outer_class(tmp_path: Path) -> None:
    nested = (
        "class Outer:\n"
        + textwrap.indent(textwrap.dedent(GOOD.format(name="Good")), "    ")
        + textwrap.indent(
            textwrap.dedent(GOOD.format(name="Bad").replace("list[str]:", "list[int]:")), "    "
        )
    )
    root = _store_project(tmp_path, {"nested.py": nested})

    run = _run(root)

    assert run.code == 1, run.err
    assert run.out.startswith(
        "src/shop/impls/nested.py:18:5: LR100 `Outer.Bad` is not a `shop.contract.Store` for mypy"
    )
    assert "list[int]" in run.out
    assert run.out.endswith("Found 1 error.\n")
    (probe,) = (root / ".lint_rules_cache" / "protocols" / "probes").glob("*.py")
    assert "x: _lint_rules_impl_1.Bad," in probe.read_text()


def test_class_defined_in_a_function_is_named_in_a_note_not_skipped_silently(
    tmp_path: Path,
) -> None:
    local = "def make() -> type:\n" + textwrap.indent(
        textwrap.dedent(GOOD.format(name="Local").replace("list[str]:", "list[int]:")), "    "
    )
    local += "    return Local\n"
    root = _store_project(tmp_path, {"local.py": local, "good.py": GOOD.format(name="Good")})

    run = _run(root)

    # The local class is named on stderr, not counted: mypy checks only `Good`.
    assert (run.code, run.out) == (
        0,
        "Checked 1 implementation of 1 protocol.\nAll checks passed!\n",
    )
    assert run.err == (
        "lint-rules: note: src/shop/impls/local.py:3:5: `make.<locals>.Local` implements "
        "`shop.contract.Store` but is defined in a function, where no probe module can import "
        "it: mypy does not check it here (LR003 does)\n"
    )


def test_dunder_members_of_a_protocol_are_probed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.mypy]\nstrict = true\n\n"
        '[tool.lint_rules.protocols]\n"handler:Handler" = ["impls/"]\n'
    )
    (tmp_path / "handler.py").write_text(
        "from typing import Protocol\n\n\n"
        "class Handler(Protocol):\n"
        "    def handle(self, event: str) -> None: ...\n"
        "    def __call__(self, event: str) -> None: ...\n"
        "    def __len__(self) -> int: ...\n"
    )
    (tmp_path / "impls").mkdir()
    handle = "    def handle(self, event: str) -> None: ...\n"
    call = "    def __call__(self, event: str) -> None: ...\n"
    length = "    def __len__(self) -> int:\n        return 0\n"
    files = {
        "good.py": "class Good:\n" + handle + call + length,
        "wrong_call.py": "class WrongCall:\n" + handle + call.replace("str", "bytes") + length,
        # Without `__len__`, an implementation only where it is used as one.
        "no_len.py": "class NoLen:\n" + handle + call + "\n\nfrom handler import Handler\n\n\n"
        "def make() -> Handler:\n    return NoLen()\n",
    }
    for name, source in files.items():
        (tmp_path / "impls" / name).write_text(source)

    run = _run(tmp_path, "--format", "json")

    assert run.code == 1, run.err
    messages = {Path(item["path"]).name: item["message"] for item in json.loads(run.out)}
    assert sorted(messages) == ["no_len.py", "wrong_call.py"]
    assert messages["no_len.py"].endswith(
        '"NoLen" is missing following "Handler" protocol member: __len__'
    )
    assert "Expected: def __call__(self, event: str) -> None" in messages["wrong_call.py"]
    assert "Got: def __call__(self, event: bytes) -> None" in messages["wrong_call.py"]


def _wait_for(capsys: pytest.CaptureFixture[str], text: str) -> str:
    """stderr as it grows, until it holds ``text`` (the reporter is a thread)."""
    seen = ""
    deadline = time.monotonic() + 60
    while text not in seen:
        assert time.monotonic() < deadline, f"waited for {text!r}; stderr: {seen!r}"
        time.sleep(0.01)
        seen += capsys.readouterr().err
    return seen


def test_progress_says_what_is_going_on_and_each_change(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(protocols, "PROGRESS_AFTER", 0.0)

    with protocols._progress("looking for the implementations"):
        first = _wait_for(capsys, "lint-rules: protocols: looking for the implementations (")
        with protocols._progress("mypy is checking the implementations"):
            inner = _wait_for(capsys, "lint-rules: protocols: mypy is checking the implementations")

    assert first.count("\n") == 1  # said once, not again before PROGRESS_EVERY
    assert "looking" not in inner  # the change is said at once


def test_protocols_run_reports_progress_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocols, "PROGRESS_AFTER", 0.0)
    root = _store_project(tmp_path, {"good.py": GOOD.format(name="Good")})

    run = _run(root)

    assert run.code == 0, run.err
    assert run.out == "Checked 1 implementation of 1 protocol.\nAll checks passed!\n"
    lines = run.err.splitlines()
    assert "lint-rules: protocols: mypy is checking the implementations (" in run.err
    assert all(line.startswith("lint-rules: protocols: ") for line in lines), lines
